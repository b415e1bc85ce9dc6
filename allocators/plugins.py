"""Policies from outside schedopt: the user's modules and files, and installed plugins.

A policy reference is one of

- ``package.module:Class``: ``Class`` of an importable module (the user's own package);
- ``path/to/file.py:Class``: ``Class`` of a Python file, loaded as a module of its own;
- a name that an installed distribution declares in the entry-point group ``schedopt.policies``
  (``[project.entry-points."schedopt.policies"] mine = "mypolicies:Mine"``).

Each resolves to a subclass of :class:`allocators.base.SchedulingPolicy` with a ``name``; anything
else is a :class:`PolicyReferenceError` naming the reference and what went wrong, in one line.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

from allocators.base import SchedulingPolicy

#: the entry-point group installed packages declare their policies in
ENTRY_POINT_GROUP = "schedopt.policies"


class UnknownPolicyError(ValueError):
    """A policy name that no table, file, module or plugin holds."""


class PolicyReferenceError(UnknownPolicyError):
    """A policy reference that does not lead to a policy class; the message names it."""


@dataclass(frozen=True)
class Plugin:
    """A policy an installed distribution declares: its entry-point name, ``module:Class``, and
    the distribution's name and version."""

    name: str
    value: str
    package: str
    version: str


def is_reference(text: str) -> bool:
    """Whether ``text`` names a class by module or file (``left:Class``)."""
    left, sep, right = text.rpartition(":")
    return bool(sep and left and right.isidentifier())


def plugins() -> dict[str, Plugin]:
    """Every installed plugin policy by entry-point name (the first distribution's where two declare one)."""
    from importlib import metadata  # only where a name is no built-in's: it costs a run ~10 ms

    found: dict[str, Plugin] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        found.setdefault(ep.name, Plugin(ep.name, ep.value, dist.name if dist else "?", dist.version if dist else "?"))
    return found


def load_plugin(plugin: Plugin) -> type[SchedulingPolicy]:
    """The class of an installed plugin."""
    return load_reference(plugin.value, shown=f"plugin {plugin.name!r} ({plugin.package} {plugin.version}, "
                                               f"{plugin.value})")


def load_reference(ref: str, shown: str | None = None) -> type[SchedulingPolicy]:
    """The policy class ``ref`` (``module:Class`` or ``file.py:Class``) names."""
    shown = shown or f"policy {ref!r}"
    left, _, attr = ref.rpartition(":")
    module = _load_file(left, shown) if left.endswith(".py") else _import(left, shown)
    cls = getattr(module, attr, None)
    if cls is None:
        raise PolicyReferenceError(f"{shown}: {left} has no attribute {attr!r}")
    return check_policy_class(cls, shown)


def check_policy_class(cls, shown: str) -> type[SchedulingPolicy]:
    """``cls`` itself if it is a concrete policy class with a name, else a one-line error."""
    if not (inspect.isclass(cls) and issubclass(cls, SchedulingPolicy)):
        what = f"class {cls.__name__}" if inspect.isclass(cls) else f"a {type(cls).__name__}"
        raise PolicyReferenceError(f"{shown}: {what} is not a policy (a subclass of schedopt.ProgramPolicy, "
                                   f"schedopt.Policy, schedopt.SlotPolicy or schedopt.RoundPlanner)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise PolicyReferenceError(f"{shown}: class {cls.__name__} is abstract: it must define {missing}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise PolicyReferenceError(f"{shown}: class {cls.__name__} has no name (set the class attribute name = '...')")
    return cls


def _import(module: str, shown: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise PolicyReferenceError(f"{shown}: no module named {exc.name!r} (is its package installed, or "
                                       f"did you mean a file, path/to/file.py:Class?)") from None
        raise PolicyReferenceError(f"{shown}: importing {module} failed: {_one_line(exc)}") from None
    except Exception as exc:  # the user's module raised while importing: report it, in one line
        raise PolicyReferenceError(f"{shown}: importing {module} failed: {_one_line(exc)}") from None


def _load_file(path: str, shown: str):
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise PolicyReferenceError(f"{shown}: no such file {path!r}")
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:12]
    name = f"schedopt_user_{file.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file raised while loading: report it, in one line
        del sys.modules[name]
        raise PolicyReferenceError(f"{shown}: loading {path} failed: {_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` on one line, with the file and line of a syntax error."""
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} ({exc.filename}, line {exc.lineno})"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
