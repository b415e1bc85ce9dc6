"""Deadline policy names (the published ElasticFlow simulator's, so scripts translate 1:1)."""

from __future__ import annotations

from optim import SolveOptions

from .base import DeadlinePolicy
from .chronus import Chronus
from .edf import EDF, EDFAccessControl
from .elasticflow import ElasticFlow, ElasticFlowGreedy, ElasticFlowNoAdmission
from .gandiva import Gandiva
from .themis import Themis
from .tiresias import Tiresias

DEADLINE_POLICIES: dict[str, type[DeadlinePolicy]] = {cls.name: cls for cls in (
    EDF, EDFAccessControl, ElasticFlow, ElasticFlowGreedy, ElasticFlowNoAdmission, Gandiva, Tiresias, Themis, Chronus,
)}


def make_deadline_policy(name: str, solver: str = "highs", options: SolveOptions | None = None,
                         **params) -> DeadlinePolicy:
    """A fresh policy object; ``params`` go to its constructor."""
    from ..registry import UnknownPolicyError

    try:
        cls = DEADLINE_POLICIES[name]
    except KeyError:
        raise UnknownPolicyError(f"unknown deadline policy {name!r}; known: "
                                 f"{', '.join(sorted(DEADLINE_POLICIES))}") from None
    return cls(solver, options, **params)
