"""Property-based testing of scheduling policies, for ``schedopt check`` and for users' own
pytest suites.

>>> from hypothesis import given
>>> from schedopt.testing import problems, invariants
>>> @given(problems())
... def test_my_policy_is_valid(problem):
...     assert invariants(MyPolicy().allocate(problem)) is None

:func:`check_policy` runs every check on a policy by name or reference and returns the outcomes
(with shrunk counterexamples) that ``schedopt check`` prints.
"""

from .properties import (
    PROPERTY_CHECKS,
    Violation,
    envy_freeness,
    equal_split,
    invariants,
    misreported,
    pareto_efficiency,
    replay,
    sharing_incentive,
    strategy_proofness,
)
from .runner import BASIC_CHECKS, CheckSettings, Outcome, check_policy, policy_factory
from .strategies import job_pairs, misreports, problems

__all__ = [
    "BASIC_CHECKS", "PROPERTY_CHECKS", "CheckSettings", "Outcome", "Violation", "check_policy", "envy_freeness",
    "equal_split", "invariants", "job_pairs", "misreported", "misreports", "pareto_efficiency", "policy_factory",
    "problems", "replay", "sharing_incentive", "strategy_proofness",
]
