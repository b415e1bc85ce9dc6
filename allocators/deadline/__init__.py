"""Deadline-aware and elastic policies for the slotted deadline engine (ElasticFlow's model)."""

from .base import Charge, DeadlinePolicy, JobState, JobsView
from .registry import DEADLINE_POLICIES, make_deadline_policy

__all__ = ["DEADLINE_POLICIES", "Charge", "DeadlinePolicy", "JobState", "JobsView", "make_deadline_policy"]
