"""Policies, grouped by the system that published them (``gavel/``, ``shockwave/``,
``elasticflow/``, ``chronus.py``), behind one contract (:mod:`allocators.base`) and one registry."""

from allocators.base import Plans, Policy, ProgramClass, SchedulingPolicy
from allocators.registry import (
    ALL_POLICIES,
    POLICIES,
    SLOT_POLICIES,
    UnknownPolicyError,
    is_slot_policy,
    load,
    make_policy,
    make_slot_policy,
)

__all__ = ["ALL_POLICIES", "POLICIES", "SLOT_POLICIES", "Plans", "Policy", "ProgramClass", "SchedulingPolicy",
           "UnknownPolicyError", "is_slot_policy", "load", "make_policy", "make_slot_policy"]
