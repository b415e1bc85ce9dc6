"""Shockwave's published planner rules, one at a time (the ablation's switches)."""

from __future__ import annotations

import pytest

from allocators.registry import make_policy
from allocators.shockwave.policy import PUBLISHED_RULES


def test_compat_turns_on_every_published_rule_and_each_can_be_set_alone():
    assert make_policy("shockwave", "highs", gavel_compat=True).published == frozenset(PUBLISHED_RULES)
    assert make_policy("shockwave", "highs").published == frozenset()
    assert make_policy("shockwave", "highs", published=("log",)).published == {"log"}
    assert make_policy("shockwave", "highs", gavel_compat=True, published=()).published == frozenset()


def test_an_unknown_rule_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown published rule.*clok"):
        make_policy("shockwave", "highs", published=("clok",))
