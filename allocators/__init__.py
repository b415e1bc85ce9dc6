"""Policies the simulator calls: a formulation + a solver + the policy's state."""

from .base import Policy, ProgramClass
from .registry import POLICIES, UnknownPolicyError, make_policy

__all__ = ["POLICIES", "Policy", "ProgramClass", "UnknownPolicyError", "make_policy"]
