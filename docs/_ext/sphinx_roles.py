"""A griffe extension for this site: Sphinx roles in docstrings (:class:`X`, :func:`~a.b`) render as code.

The project's docstrings are plain prose with ``double backticks`` and the odd Sphinx role; without
this, mkdocstrings shows the role's name as text (":class:" before the name).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def _code(match: re.Match) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code, obj.docstring.value)
