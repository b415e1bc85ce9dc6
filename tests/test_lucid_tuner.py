"""Lucid's system tuner (:mod:`allocators.lucid.tuner`): sharing turns off while few GPU jobs are
forecast, the Throughput Predict Model reads ended bins only, and ``lucid`` / ``lucid-exact`` run with
it and pair no job while it is off."""

from __future__ import annotations

import numpy as np
from test_lucid_policy import run, sharing_workload

from allocators.lucid.exact import LucidExact
from allocators.lucid.lucid import Lucid
from allocators.lucid.tuner import BIN, CHECK_EVERY, DAY, SharingTuner

DAYS = 3 * 86400.0


def busy_then_quiet(seed: int = 0) -> np.ndarray:
    """Submission times: 12 GPU jobs per 10 minutes from 06:00 to 18:00 every day, none at night."""
    rng = np.random.default_rng(seed)
    starts = [d * 86400.0 + 6 * 3600 + b * BIN for d in range(3) for b in range(72)]
    return np.sort(np.concatenate([s + rng.uniform(0, BIN, 12) for s in starts]))


def test_sharing_is_off_at_night_and_on_by_day_after_a_day_of_history():
    submit = busy_then_quiet()
    tuner = SharingTuner(submit, np.ones(submit.size, dtype=bool))
    assert tuner.sharing(0.5 * 86400)  # under a day of bins: on
    assert tuner.sharing(86400 + 12 * 3600)  # the second day at noon: busy
    assert not tuner.sharing(2 * 86400 + 1 * 3600)  # the third night: quiet for hours
    assert tuner.sharing(2 * 86400 + 9 * 3600)
    assert tuner.fits >= 1 and tuner.off_checks == 1 and tuner.checks == 4
    mae, _, actual, count = tuner.error()
    assert count == 15 and mae < actual


def test_the_forecast_reads_only_bins_that_ended():
    """Submissions after a check change none of the decisions up to it."""
    submit = busy_then_quiet(1)
    gpu = np.ones(submit.size, dtype=bool)
    checks = np.arange(DAY * BIN, DAYS, 7 * CHECK_EVERY)
    cut = 2 * 86400 + 3 * 3600.0
    later = np.concatenate([submit, cut + np.linspace(0, 86400, 5000)])
    a, b = SharingTuner(submit, gpu), SharingTuner(later, np.ones(later.size, dtype=bool))
    before = checks[checks <= cut]
    assert [a.sharing(t) for t in before] == [b.sharing(t) for t in before]
    assert a.forecasts and len(a.forecasts) == len(b.forecasts)
    for (ta, fa, _), (tb, fb, _) in zip(a.forecasts, b.forecasts):
        assert np.array_equal(ta, tb) and np.array_equal(fa, fb)


def test_lucid_with_the_tuner_pairs_no_job_while_sharing_is_off(tmp_path):
    """A busy day, then a quiet one: both policies finish every job, the tuner turns sharing off
    at some checks, and no decision taken while it is off starts a pair."""
    rng = np.random.default_rng(2)
    submit = np.sort(np.concatenate([rng.uniform(0, 86400, 400), rng.uniform(86400, 2 * 86400, 20)]))
    jobs = [(int(t), int(d), int(g), "v") for t, d, g in zip(submit, rng.integers(60, 900, submit.size),
                                                             rng.choice([1, 2], submit.size))]
    workload = sharing_workload(tmp_path, jobs, {"v": 1}, rng.integers(0, 2, submit.size))
    for policy in (Lucid(tuner=True), LucidExact(tuner=True)):
        decisions = []
        real = policy.allocate

        def recording(view, real=real, policy=policy):
            paired = getattr(policy, "paired", 0)
            plan = real(view)
            decisions.append((policy.share, policy.paired - paired))
            return plan

        policy.allocate = recording
        result = run(workload, policy)
        assert result.summary["jobs_completed"] == submit.size
        assert policy.tuner.off_checks > 0 and policy.tuner.checks > policy.tuner.off_checks
        assert any("system tuner" in note for note in result.summary["notes"])
        assert all(new == 0 for share, new in decisions if not share)
        assert any(new > 0 for share, new in decisions if share)
