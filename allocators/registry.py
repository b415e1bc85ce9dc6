"""Policy names (Gavel's, so users' scripts translate 1:1) to policy classes."""

from __future__ import annotations

from optim import SolveOptions

from .base import Policy
from .max_min_fairness import MaxMinFairnessAgnostic, MaxMinFairnessPacked, MaxMinFairnessPerf

POLICIES: dict[str, type[Policy]] = {
    cls.name: cls for cls in (MaxMinFairnessAgnostic, MaxMinFairnessPerf, MaxMinFairnessPacked)
}


class UnknownPolicyError(ValueError):
    pass


def make_policy(name: str, solver: str = "highs", options: SolveOptions | None = None, **params) -> Policy:
    """A fresh policy object (policies may keep state between calls); ``params`` go to the
    policy's constructor (e.g. ``seed`` for randomized heuristics)."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise UnknownPolicyError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}") from None
    return cls(solver, options, **params)
