"""The lease-aware iterator on its own (no PyTorch): budgets, deadline, hooks, epochs."""

import itertools
import subprocess
import sys

import pytest

from runtime_bridge.lease import DEADLINE, EXHAUSTED, STEP_BUDGET, LeaseIterator


class FakeClock:
    """A clock the loop body advances by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_stops_exactly_at_the_step_budget_without_drawing_another_batch():
    source = itertools.count()
    lease = LeaseIterator(source, steps=7)
    assert list(lease) == list(range(7))
    assert next(source) == 7
    assert (lease.report.steps, lease.report.reason, lease.report.step) == (7, STEP_BUDGET, 7)


@pytest.mark.parametrize("seconds, steps", [(5.5, 5), (5.0, 5), (4.99, 4), (0.0, 0)])
def test_stops_before_a_step_that_would_cross_the_deadline(seconds, steps):
    clock = FakeClock()
    lease = LeaseIterator(itertools.count(), seconds=seconds, clock=clock)
    for _ in lease:
        clock.now += 1.0
    assert lease.report.steps == steps
    assert lease.report.reason == DEADLINE
    assert lease.report.seconds == pytest.approx(steps)
    assert lease.report.seconds <= seconds


def test_step_budget_and_deadline_whichever_comes_first():
    clock = FakeClock()
    lease = LeaseIterator(itertools.count(), steps=3, seconds=10.0, clock=clock)
    for _ in lease:
        clock.now += 2.0
    assert (lease.report.steps, lease.report.reason) == (3, STEP_BUDGET)
    assert lease.report.steps_per_second == pytest.approx(0.5)


def test_restore_and_checkpoint_hooks_carry_the_step_counter():
    clock, saved = FakeClock(), []

    def checkpoint(step):
        saved.append(step)
        clock.now += 3.0

    lease = LeaseIterator(itertools.count(), steps=4, restore=lambda: 40, checkpoint=checkpoint, clock=clock)
    for _ in lease:
        clock.now += 0.5
    assert saved == [44]
    report = lease.report
    assert (report.start_step, report.steps, report.step) == (40, 4, 44)
    assert report.seconds == pytest.approx(2.0)
    assert report.checkpoint_seconds == pytest.approx(3.0)


def test_reiterable_sources_span_epochs_and_one_shot_iterators_end_the_lease():
    lease = LeaseIterator([1, 2, 3], steps=7)
    assert list(lease) == [1, 2, 3, 1, 2, 3, 1]
    once = LeaseIterator(iter([1, 2, 3]), steps=7)
    assert list(once) == [1, 2, 3]
    assert (once.report.steps, once.report.reason) == (3, EXHAUSTED)
    empty = LeaseIterator([], steps=7)
    assert list(empty) == [] and empty.report.reason == EXHAUSTED


def test_a_lease_is_iterated_once_and_budgets_are_checked():
    lease = LeaseIterator([1], steps=1)
    list(lease)
    with pytest.raises(RuntimeError, match="iterated once"):
        list(lease)
    with pytest.raises(ValueError, match="steps"):
        LeaseIterator([1], steps=-1)
    with pytest.raises(ValueError, match="seconds"):
        LeaseIterator([1], seconds=float("nan"))


def test_breaking_out_ends_without_checkpoint():
    saved = []
    lease = LeaseIterator(itertools.count(), steps=10, checkpoint=saved.append)
    for i in lease:
        if i == 2:
            break
    assert saved == [] and lease.report is None


def test_the_cli_and_the_simulator_do_not_import_torch():
    code = ("import sys, schedopt.cli, simulator, runtime_bridge; from runtime_bridge import LeaseIterator; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
