"""Shockwave: batch-size adaptation, adaptive jobs, the remaining-time predictor, the market
program and its reordering MILP, the round planner and the published configurations.

Every expected value below is worked out by hand in the comments next to it (dataset sizes:
ResNet-18 50000, ResNet-50 100000, LM 59675, Recommendation 117907, Transformer 10000).
"""

import functools
import itertools
import json
import math
from dataclasses import replace

import numpy as np
import pytest
from helpers import lp_backends
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators.round_plans import EpochProfile, RoundState
from allocators.shockwave import policy as shockwave_policy
from allocators.shockwave.config import (
    ShockwaveConfig,
    ShockwaveConfigError,
    read_shockwave_config,
)
from allocators.shockwave.policy import Shockwave
from allocators.shockwave.remaining_time import RemainingTime
from formulations import ProblemError
from formulations.shockwave import (
    LOG_FLOOR,
    Market,
    build,
    build_reorder,
    decode,
    point,
    reorder_start,
    round_schedule,
)
from optim import Capability, SolveOptions, Status, backends_with, get_backend, solve
from simulator import adaptation
from simulator.adaptation import (
    accordion_critical,
    accordion_schedule,
    batch_size_schedule,
    gns_schedule,
    num_epochs,
    published_next_batch_size,
    split_job_type,
    steps_per_epoch,
)
from simulator.adaptive import AdaptiveJobs
from simulator.cluster import parse_cluster
from simulator.throughputs import read_gavel_json, table_from_gavel_dict
from simulator.traces import read_trace
from simulator.workload import build_workload

BACKENDS = lp_backends()
EPS = LOG_FLOOR  # 1e-6 added to normalized progress inside the log
PUBLISHED_BASES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def runs(*pieces):
    """``runs((32, 3), (256, 2))`` -> [32, 32, 32, 256, 256]: a schedule written as runs."""
    return [b for b, n in pieces for _ in range(n)]


# --- 1. batch-size patterns ----------------------------------------------------------------------

@pytest.mark.parametrize(
    "model, bs, spe",
    [
        ("ResNet-18", 32, 1563),      # 50000 / 32 = 1562.5 -> 1563
        ("ResNet-18", 256, 196),      # 50000 / 256 = 195.3 -> 196
        ("ResNet-50", 128, 782),      # 100000 / 128 = 781.25 -> 782
        ("LM", 10, 5968),             # 59675 / 10 = 5967.5 -> 5968
        ("Recommendation", 8192, 15),  # 117907 / 8192 = 14.39 -> 15
        ("Transformer", 64, 157),     # 10000 / 64 = 156.25 -> 157
        ("ResNet-50", 64, 1563),      # 100000 / 64 = 1562.5 -> 1563
    ],
)
def test_steps_per_epoch_is_the_ceiling_of_dataset_over_batch(model, bs, spe):
    assert steps_per_epoch(model, bs) == spe


@pytest.mark.parametrize(
    "model, bs, total, epochs",
    [
        ("ResNet-18", 32, 143450, 92),  # 143450 / 1563 = 91.78 -> 92
        ("ResNet-18", 32, 15630, 10),   # exactly 10 x 1563
        ("ResNet-18", 32, 15631, 11),   # one step more starts an 11th epoch
        ("ResNet-18", 32, 0, 1),        # at least one epoch
        ("LM", 10, 134583, 23),         # 134583 / 5968 = 22.55 -> 23
        ("ResNet-50", 64, 41840, 27),   # 41840 / 1563 = 26.77 -> 27
    ],
)
def test_num_epochs(model, bs, total, epochs):
    assert num_epochs(model, bs, total) == epochs


def test_split_job_type():
    assert split_job_type("ResNet-18 (batch size 32)") == ("ResNet-18", 32)
    assert split_job_type("Recommendation (batch size 8192)") == ("Recommendation", 8192)
    assert split_job_type("A3C") == ("A3C", None)
    assert split_job_type("CycleGAN") == ("CycleGAN", None)
    assert split_job_type("LM (batch size x)") == ("LM (batch size x)", None)


@pytest.mark.parametrize("model, b0", [("ResNet-18", 32), ("LM", 10), ("Transformer", 64)])
def test_static_schedule_is_constant(model, b0):
    # ResNet-18 b0=32 and LM b0=10 would adapt under accordion and gns; static never does
    np.testing.assert_array_equal(batch_size_schedule("static", model, b0, 120, 1), np.full(120, b0))


@pytest.mark.parametrize(
    "model, b0, epochs, expected",
    [
        # ResNet-18: warm-up 0.3 x 265 = 79.5 -> epochs 0..79 at b0; critical regimes
        # [0, 10), [150, 160), [250, 260) at b0; 256 elsewhere
        ("ResNet-18", 32, 265, runs((32, 80), (256, 70), (32, 10), (256, 90), (32, 10), (256, 5))),
        # a short job: warm-up 7.5 but the first critical regime lasts to epoch 10
        ("ResNet-18", 32, 25, runs((32, 10), (256, 15))),
        # b0 = 256 is already the maximum
        ("ResNet-18", 256, 40, runs((256, 40))),
        # ResNet-50: warm-up 22.5 -> 0..22 at b0; critical where e % 30 < 10 (0-9, 30-39, 60-69)
        ("ResNet-50", 64, 75, runs((64, 23), (128, 7), (64, 10), (128, 20), (64, 10), (128, 5))),
        # LM: warm-up 7.5, critical regime [0, 10)
        ("LM", 10, 25, runs((10, 10), (80, 15))),
        # Recommendation b0=512: first regime [0, 30), later [60, 70) and [80, 90); warm-up 28.5
        ("Recommendation", 512, 95,
         runs((512, 30), (8192, 30), (512, 10), (8192, 10), (512, 10), (8192, 5))),
        # b0=2048: first regime [0, 40)
        ("Recommendation", 2048, 50, runs((2048, 40), (8192, 10))),
        # b0=4096: first regime [0, 10) but warm-up 0.3 x 50 = 15 -> 0..15 at b0
        ("Recommendation", 4096, 50, runs((4096, 16), (8192, 34))),
    ],
)
def test_accordion_schedule(model, b0, epochs, expected):
    assert len(expected) == epochs
    np.testing.assert_array_equal(accordion_schedule(model, b0, epochs), expected)
    np.testing.assert_array_equal(batch_size_schedule("accordion", model, b0, epochs, 1), expected)


def test_accordion_warmup_covers_the_first_30_percent():
    # E = 100: epochs 0..29 (the first 30%) at b0 even though 10..29 lie outside every
    # critical regime of ResNet-18; from epoch 31 on at 256 (150.. is beyond E)
    sched = accordion_schedule("ResNet-18", 32, 100)
    assert (sched[:30] == 32).all()
    assert (sched[31:] == 256).all()


@pytest.mark.parametrize("model, b0", [("Transformer", 32), ("CycleGAN", 1), ("A3C", 4)])
def test_accordion_without_a_model_maximum_stays_static(model, b0):
    np.testing.assert_array_equal(accordion_schedule(model, b0, 300), np.full(300, b0))


def test_accordion_critical_regimes_and_the_published_variant():
    e = np.array([5, 15, 19, 20, 155, 160, 255, 260])
    # ResNet-18: first regime 10 epochs, 20 at b0 = 256
    assert accordion_critical("ResNet-18", 32, e).tolist() == [True, False, False, False, True, False, True, False]
    assert accordion_critical("ResNet-18", 256, e).tolist() == [True, True, True, False, True, False, True, False]
    # Recommendation b0=512: [0, 30), [60, 70), [80, 90); the published rule drops the later two
    r = np.array([29, 30, 65, 75, 85, 95])
    assert accordion_critical("Recommendation", 512, r).tolist() == [True, False, True, False, True, False]
    assert accordion_critical("Recommendation", 512, r, published=True).tolist() == [True, False, False, False,
                                                                                       False, False]
    # ResNet-50: e % 30 < 10, only before epoch 600
    assert accordion_critical("ResNet-50", 32, np.array([9, 10, 39, 40, 599, 605])).tolist() == [
        True, False, True, False, False, False]


@pytest.mark.parametrize(
    "model, b0, scale, epochs, expected",
    [
        # (31, x2), (41, x4), (51, x8), (71, x16): 16 -> 32 -> 64 -> 128 -> 256; the last
        # epoch keeps the first step's multiplier only (documented), here b0
        ("ResNet-18", 16, 1, 100, runs((16, 31), (32, 10), (64, 10), (128, 20), (256, 28), (16, 1))),
        # (21, x2), (31, x4), (51, x8): 32 -> 64 -> 128 -> 256
        ("ResNet-18", 32, 1, 60, runs((32, 21), (64, 10), (128, 20), (256, 8), (32, 1))),
        # the scale picks the row: (11, x2), (21, x4), (41, x8) at scale 2
        ("ResNet-18", 32, 2, 30, runs((32, 11), (64, 10), (128, 8), (32, 1))),
        # a single step reaches the last epoch
        ("ResNet-18", 128, 1, 20, runs((128, 11), (256, 9))),
        # LM b0=5: x16 = 80, the model's limit
        ("LM", 5, 1, 80, runs((5, 31), (10, 10), (20, 20), (40, 10), (80, 8), (5, 1))),
        # Recommendation b0=4096: (41, x2)
        ("Recommendation", 4096, 1, 45, runs((4096, 41), (8192, 4))),
        # no more epochs than the first step's epoch: never adapts
        ("ResNet-18", 32, 1, 21, runs((32, 21))),
        # one more epoch: the first step covers the last one
        ("ResNet-18", 32, 1, 22, runs((32, 21), (64, 1))),
        # no row for (ResNet-18, 256, 1) or (ResNet-50, 16, 8): static
        ("ResNet-18", 256, 1, 50, runs((256, 50))),
        ("ResNet-50", 16, 8, 300, runs((16, 300))),
    ],
)
def test_gns_schedule_doubles_at_the_tabulated_epochs(model, b0, scale, epochs, expected):
    assert len(expected) == epochs
    np.testing.assert_array_equal(gns_schedule(model, b0, epochs, scale), expected)
    np.testing.assert_array_equal(batch_size_schedule("gns", model, b0, epochs, scale), expected)


def test_gns_schedule_is_capped_at_the_model_limit(monkeypatch):
    # every published row stops exactly at the limit, so add one that overshoots it:
    # 128 x 4 = 512 from epoch 21 is capped at ResNet-18's 256
    monkeypatch.setitem(adaptation.GNS_STEPS, ("ResNet-18", 128, 1), ((11, 2), (21, 4)))
    np.testing.assert_array_equal(gns_schedule("ResNet-18", 128, 30, 1), runs((128, 11), (256, 18), (128, 1)))
    # LM b0=40 x4 = 160 -> 80
    monkeypatch.setitem(adaptation.GNS_STEPS, ("LM", 40, 1), ((5, 4),))
    np.testing.assert_array_equal(gns_schedule("LM", 40, 10, 1), runs((40, 5), (80, 5)))


@pytest.mark.parametrize("model, b0", [("Transformer", 32), ("CycleGAN", 1), ("A3C", 4)])
def test_gns_never_adapts_transformer_cyclegan_a3c(monkeypatch, model, b0):
    # even with a doubling row in the table, these models keep b0
    monkeypatch.setitem(adaptation.GNS_STEPS, (model, b0, 1), ((3, 2), (5, 4)))
    np.testing.assert_array_equal(gns_schedule(model, b0, 12, 1), np.full(12, b0))
    assert published_next_batch_size("gns", model, b0, b0, 4, 1) == b0


def test_published_next_batch_size_rules():
    acc = functools.partial(published_next_batch_size, "accordion")
    # ResNet-18 b0=32: epoch 5 is critical -> stays; epoch 12 is not -> 256 (no warm-up rule)
    assert acc("ResNet-18", 32, 32, 5, 1) == 32
    assert acc("ResNet-18", 32, 32, 12, 1) == 256
    # at 256, back to b0 inside a critical regime (150..159), else stays
    assert acc("ResNet-18", 32, 256, 155, 1) == 32
    assert acc("ResNet-18", 32, 256, 140, 1) == 256
    # Recommendation's later regime [60, 70) is not part of the published rule
    assert acc("Recommendation", 512, 8192, 65, 1) == 8192
    assert acc("Transformer", 32, 32, 50, 1) == 32
    gns = functools.partial(published_next_batch_size, "gns")
    # ResNet-18 b0=32 scale 1: pattern 64 from epoch 21, 128 from 31, 256 from 51
    assert gns("ResNet-18", 32, 32, 19, 1) == 32   # pattern[20] = 32
    assert gns("ResNet-18", 32, 32, 20, 1) == 64   # pattern[21] = 64 > 32
    assert gns("ResNet-18", 32, 64, 25, 1) == 64
    assert gns("ResNet-18", 32, 32, 45, 1) == 64   # behind by two doublings: one per call
    assert gns("ResNet-18", 32, 256, 60, 1) == 256  # at the limit
    assert published_next_batch_size("static", "ResNet-18", 32, 32, 40, 1) == 32


# --- 2. AdaptiveJobs ------------------------------------------------------------------------------

#: hand-made rates (steps/s on v100); LM at batch size 80 is deliberately missing
HAND_TABLE = {"v100": {
    "('ResNet-50 (batch size 32)', 1)": {"null": 5.0},
    "('ResNet-50 (batch size 128)', 1)": {"null": 2.0},
    "('LM (batch size 10)', 1)": {"null": 20.0},
    "('ResNet-18 (batch size 32)', 1)": {"null": 10.0},
    "('A3C', 1)": {"null": 2.0},
}}


def twelve_column(job_type, total_steps, scale, mode, duration=1000, arrival=0):
    columns = [job_type, "python3 main.py", "dir", "--steps", 1, total_steps, scale, mode, 1, -1, duration, arrival]
    return "\t".join(map(str, columns)) + "\n"


@pytest.fixture
def adaptive_jobs(tmp_path):
    """job 0: ResNet-50 b0=32 accordion, 156250 = 50 x 3125 steps -> 50 epochs;
    job 1: LM b0=10 accordion, 119360 = 20 x 5968 steps -> 20 epochs (80 not in the table);
    job 2: ResNet-18 b0=32 static, 15630 = 10 x 1563 steps -> 10 epochs."""
    path = tmp_path / "hand.trace"
    path.write_text(twelve_column("ResNet-50 (batch size 32)", 156250, 1, "accordion")
                    + twelve_column("LM (batch size 10)", 119360, 1, "accordion")
                    + twelve_column("ResNet-18 (batch size 32)", 15630, 1, "static"))
    table = table_from_gavel_dict(HAND_TABLE)
    return AdaptiveJobs(build_workload(read_trace(path), parse_cluster("v100=4"), table), table)


def test_adaptive_jobs_profile(adaptive_jobs):
    aj = adaptive_jobs
    np.testing.assert_array_equal(aj.epochs, [50, 20, 10])
    np.testing.assert_array_equal(aj.spe, [3125, 5968, 1563])
    np.testing.assert_array_equal(aj.adapts, [True, True, False])
    bs, dur = aj.profile.job(0)
    # ResNet-50 accordion, E = 50: warm-up 15 -> 0..15 at 32; critical 30..39 at 32
    np.testing.assert_array_equal(bs, runs((32, 16), (128, 14), (32, 10), (128, 10)))
    # an epoch at 32 takes (100000 / 32) / 5 = 625 s, at 128 (100000 / 128) / 2 = 390.625 s
    np.testing.assert_allclose(dur, np.where(bs == 32, 625.0, 390.625))
    # static ResNet-18: (50000 / 32) / 10 = 156.25 s per epoch
    np.testing.assert_allclose(aj.profile.job(2)[1], np.full(10, 156.25))
    # 26 epochs x 625 + 24 x 390.625 = 16250 + 9375 = 25625 s; 10 x 156.25 = 1562.5 s
    assert aj.profile.isolated_runtimes()[0] == pytest.approx(25625.0)
    assert aj.profile.job(2)[1].sum() == pytest.approx(1562.5)


def test_adaptive_jobs_switch_keeps_the_epoch_count(adaptive_jobs):
    aj = adaptive_jobs
    jobs = np.arange(3)
    # job 0 at the start of epoch 16 (16 x 3125 = 50000 steps), job 1 in epoch 12 (12 x 5968),
    # job 2 in epoch 3 (3 x 1563)
    steps = np.array([50000, 71616, 4689])
    changed = aj.after_round(jobs, steps)
    # only job 0 switches: 32 -> 128. LM's 80 is not in the table (noted); job 2 is static
    assert changed.tolist() == [0]
    assert aj.batch_size.tolist() == [128, 10, 32]
    assert any("LM at batch size 80" in note and "not in the throughput table" in note for note in aj.notes)
    # steps per epoch at 128: ceil(100000 / 128) = 782; total = ceil(156250 x 32 / 128)
    # = ceil(39062.5) = 39063, ceil(39063 / 782) = 50 epochs: kept
    assert aj.spe[0] == 782 and aj.total_steps[0] == 39063
    assert math.ceil(aj.total_steps[0] / aj.spe[0]) == 50
    # progress: 50000 x 782 // 3125 = 12512 = 16 x 782 steps, still 16 epochs done
    assert steps.tolist() == [12512, 71616, 4689]
    assert aj.epochs_done(jobs, steps).tolist() == [16, 12, 3]
    # the rate is the table's rate of ResNet-50 at 128
    np.testing.assert_allclose(aj.rates[:, 0], [2.0, 20.0, 10.0])
    # job 1 and 2 untouched
    assert aj.total_steps[1:].tolist() == [119360, 15630]

    # into the critical regime at epoch 30 (30 x 782 = 23460 steps): back to 32
    steps[0] = 30 * 782
    assert aj.after_round(np.array([0]), steps).tolist() == [0]
    # total = ceil(39063 x 128 / 32) = 156252 -> ceil(156252 / 3125) = 51 epochs, so the
    # count is restored as 50 x 3125 = 156250; progress 23460 x 3125 // 782 = 93750 = 30 x 3125
    assert aj.batch_size[0] == 32 and aj.spe[0] == 3125
    assert aj.total_steps[0] == 156250 and steps[0] == 93750
    assert aj.rates[0, 0] == 5.0
    # the same epoch again: nothing to change
    assert aj.after_round(np.array([0]), steps).size == 0


def test_adaptive_jobs_switch_mid_epoch_keeps_the_fraction(adaptive_jobs):
    aj = adaptive_jobs
    # 16.5 epochs: 16 x 3125 + 1562 = 51562 steps -> 51562 x 782 // 3125 = 12902 steps at 128
    steps = np.array([51562, 0, 0])
    aj.after_round(np.array([0]), steps)
    assert steps[0] == 12902
    assert aj.epochs_done(np.array([0]), steps)[0] == 16  # 12902 // 782 = 16 (16.498 epochs)


def test_adaptive_jobs_with_the_published_table(shared_data, tmp_path):
    """ResNet-18 b0=32 accordion on 2 GPUs, 40 x 1563 steps -> 40 epochs; warm-up 12 ->
    epoch 13 switches to 256 at the tacc table's ('ResNet-18 (batch size 256)', 2) rate."""
    path = tmp_path / "one.trace"
    path.write_text(twelve_column("ResNet-18 (batch size 32)", 40 * 1563, 2, "accordion"))
    table_path = shared_data / "shockwave" / "tacc_throughputs.json"
    table = read_gavel_json(table_path)
    raw = json.loads(table_path.read_text())
    rate_256 = raw["v100"]["('ResNet-18 (batch size 256)', 2)"]["null"]
    rate_32 = raw["v100"]["('ResNet-18 (batch size 32)', 2)"]["null"]
    aj = AdaptiveJobs(build_workload(read_trace(path), parse_cluster("v100=4"), table), table)
    bs, dur = aj.profile.job(0)
    np.testing.assert_array_equal(bs, runs((32, 13), (256, 27)))
    np.testing.assert_allclose(dur[[0, 20]], [50000 / 32 / rate_32, 50000 / 256 / rate_256])
    steps = np.array([13 * 1563 + 100])
    assert aj.after_round(np.array([0]), steps).tolist() == [0]
    assert aj.rates[0, 0] == pytest.approx(rate_256)
    # 196 steps per epoch; total ceil(62520 x 32 / 256) = 7815 -> ceil(7815 / 196) = 40 epochs
    assert aj.total_steps[0] == 7815 and aj.spe[0] == 196
    # progress (13 x 1563 + 100) x 196 // 1563 = 2560 steps = 13.06 epochs
    assert steps[0] == 2560 and aj.epochs_done(np.array([0]), steps)[0] == 13


def test_profile_of_a_batch_size_the_table_lacks_is_the_one_the_job_keeps(adaptive_jobs):
    # LM b0=10 accordion would move to 80 from epoch 10, but the table has no LM at 80, so
    # the job trains all 20 epochs at 10: (59675 / 10) / 20 = 298.375 s each, 5967.5 s
    bs, dur = adaptive_jobs.profile.job(1)
    assert np.isfinite(dur).all()
    assert dur.sum() == pytest.approx(20 * 298.375)


def test_isolated_runtime_of_a_job_does_not_depend_on_earlier_jobs():
    profile = EpochProfile(np.array([0, 2, 5]), np.array([1, 1, 2, 2, 2]),
                           np.array([np.inf, 1.0, 2.0, 3.0, 4.0]))
    # job 1: 2 + 3 + 4 = 9
    assert profile.isolated_runtimes()[1] == 9.0


def test_isolated_runtimes_and_job_slices():
    profile = EpochProfile(np.array([0, 2, 5, 6]), np.array([8, 16, 4, 4, 8, 2]),
                           np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(profile.epochs, [2, 3, 1])
    np.testing.assert_allclose(profile.isolated_runtimes(), [3.0, 12.0, 6.0])
    bs, dur = profile.job(1)
    assert bs.tolist() == [4, 4, 8] and dur.tolist() == [3.0, 4.0, 5.0]


def test_a_job_without_a_batch_size_is_not_done_before_its_last_step(tmp_path):
    path = tmp_path / "a3c.trace"
    path.write_text(twelve_column("A3C", 1000, 1, "static", duration=500))
    table = table_from_gavel_dict(HAND_TABLE)
    aj = AdaptiveJobs(build_workload(read_trace(path), parse_cluster("v100=4"), table), table)
    # one epoch of 1000 steps at 2 steps/s = 500 s
    np.testing.assert_allclose(aj.profile.isolated_runtimes(), [500.0])
    # after 500 of its 1000 steps the job has not completed its (only) epoch
    assert aj.epochs_done(np.array([0]), np.array([500]))[0] < aj.epochs[0]


# --- 3. RemainingTime ---------------------------------------------------------------------------

#: 2 epochs at 32 (10 s each), then 4 at 64 (4 s each): E = 6, mean durations (10, 4),
#: Dirichlet prior 6 / 2 = 3 on each batch size
TWO_BS = RemainingTime(np.array([32, 32, 64, 64, 64, 64]), np.array([10.0, 10.0, 4.0, 4.0, 4.0, 4.0]))


@pytest.mark.parametrize(
    "done, expected",
    [
        # seen (epochs 0..0) = (1, 0); posterior (4, 3); rebased 6 x (4, 3) / 7 = (24/7, 18/7);
        # less seen (1, 0) -> n = (17/7, 18/7), sum 5, 6 epochs left;
        # R = (170/7 + 72/7) x 6/5 = 1452/35
        (0, 1452 / 35),
        # seen (2, 1); posterior (5, 4); rebased (10/3, 8/3); less (2, 1) -> (4/3, 5/3), sum 3,
        # 4 left: R = (40/3 + 20/3) x 4/3 = 80/3
        (2, 80 / 3),
        # seen (2, 3); posterior (5, 6); rebased (30/11, 36/11); less (2, 3) -> (8/11, 3/11),
        # sum 1, 2 left: R = (80/11 + 12/11) x 2/1 = 184/11
        (4, 184 / 11),
        # seen (2, 4); posterior (5, 7); rebased (2.5, 3.5); less (min(2, 2), min(4, 3)) = (2, 3)
        # -> (0.5, 0.5), sum 1, 1 left: R = (5 + 2) x 1/1 = 7
        (5, 7.0),
        (6, 0.0),  # done
        (9, 0.0),  # past the end
    ],
)
def test_dirichlet_prediction_by_hand(done, expected):
    assert TWO_BS.predict(done) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("done, expected", [(0, 36.0), (2, 16.0), (4, 8.0), (5, 4.0), (6, 0.0), (8, 0.0)])
def test_oracle_is_the_sum_of_remaining_durations(done, expected):
    # 10 + 10 + 4 x 4 = 36 in all; after 2 epochs 4 x 4 = 16; ...
    assert TWO_BS.predict(done, oracle=True) == pytest.approx(expected)


def test_mean_epoch_and_elapsed():
    # mean of epochs 0..done (the one in progress included): 10; (10+10+4)/3 = 8; 36/6 = 6
    assert TWO_BS.mean_epoch(0) == 10.0
    assert TWO_BS.mean_epoch(2) == pytest.approx(8.0)
    assert TWO_BS.mean_epoch(5) == pytest.approx(6.0)
    assert TWO_BS.mean_epoch(20) == pytest.approx(6.0)
    # isolated time of the first `done` epochs
    assert [TWO_BS.elapsed(d) for d in (0, 1, 2, 3, 6, 10)] == [0.0, 10.0, 20.0, 24.0, 36.0, 36.0]


def test_static_oracle_is_exact():
    pred = RemainingTime(np.full(5, 32), np.full(5, 7.0))
    assert [pred.predict(c, oracle=True) for c in range(6)] == [35.0, 28.0, 21.0, 14.0, 7.0, 0.0]


@pytest.mark.parametrize("epochs", [5, 1])
def test_static_job_predicts_exactly_its_remaining_time(epochs):
    # one batch size, 7 s per epoch: after c epochs, (E - c) x 7 s remain
    pred = RemainingTime(np.full(epochs, 32), np.full(epochs, 7.0))
    assert [pred.predict(c) for c in range(epochs)] == pytest.approx([(epochs - c) * 7.0 for c in range(epochs)])


def test_published_predictor_uses_whole_second_epochs_of_at_least_one():
    # the published profile rounds each epoch to whole seconds (half to even), at least 1 s
    pred = RemainingTime(np.full(4, 32), np.array([2.4, 2.5, 3.5, 0.3]), published=True)
    assert [pred.elapsed(d) for d in range(5)] == [0.0, 2.0, 4.0, 8.0, 9.0]
    assert pred.mean_epoch(1) == 2.0
    # one epoch short, as published: after 1 epoch, 2 of the 3 left at the 9 / 4 s mean
    assert pred.predict(1) == pytest.approx(4.5)
    assert RemainingTime(np.full(4, 32), np.array([2.4, 2.5, 3.5, 0.3])).elapsed(4) == pytest.approx(8.7)


# --- 4. the market program on hand-sized instances -----------------------------------------------

def market(**fields) -> Market:
    """Two symmetric jobs on 1 GPU, T = 2 rounds of 120 s: 10 epochs of 60 s each, none done."""
    base = dict(gpus=1, rounds=2, round_length=120.0, scale_factors=[1, 1], epochs_done=[0, 0],
                epochs_total=[10, 10], epoch_seconds=[60.0, 60.0], remaining_seconds=[600.0, 600.0], k=0.0)
    base.update(fields)
    return Market(**base)


@functools.lru_cache(maxsize=None)
def gurobi_problem() -> str | None:
    """Why Gurobi cannot run these tests here (None: it can)."""
    if "gurobi" not in BACKENDS:
        return "gurobi not installed"
    res = solve(build(market()), "gurobi", check=False)
    if res.status in (Status.LICENSE_LIMIT, Status.ERROR):
        return f"gurobi unusable: {res.message}"
    return None


MARKET_BACKENDS = ["highs", "gurobi"]


def solve_market(m: Market, backend: str, options: SolveOptions | None = None):
    if backend == "gurobi" and gurobi_problem():
        pytest.skip(gurobi_problem())
    return solve(build(m), backend, options, check=False)


def check_objective(res, expected: float):
    """The objective within the reported gap (tangent cuts or MIP) plus solver tolerance."""
    assert res.status is Status.OPTIMAL, (res.status, res.message)
    scale = max(1.0, abs(expected))
    assert res.objective == pytest.approx(expected, abs=((res.gap or 0.0) + 1e-6) * scale)


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_symmetric_jobs_share_the_gpu_one_round_each(backend):
    # one job runs per round; running gives 120 / 60 = 2 epochs of 10. (1, 1) rounds: both at
    # 0.2 -> (1 / (2 x 2)) x 2 log(0.2 + eps); (2, 0) leaves log(eps) = -13.8 for one of them
    m = market()
    res = solve_market(m, backend)
    check_objective(res, 0.5 * math.log(0.2 + EPS))
    x = decode(m, res)
    assert x.sum(axis=1).tolist() == [1, 1] and x.sum(axis=0).tolist() == [1, 1]
    assert res.value("p") == pytest.approx([2.0, 2.0], abs=1e-6)
    if backend == "highs":
        assert any("tangent cuts" in note for note in res.notes)


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_makespan_term_is_k_times_the_largest_remaining_time(backend):
    # same schedule; each job still has 600 - 60 x 2 = 480 s left: -1e-3 x 480 = -0.48
    res = solve_market(market(k=1e-3), backend)
    check_objective(res, 0.5 * math.log(0.2 + EPS) - 0.48)
    assert float(res.value("z")[0]) == pytest.approx(480.0, abs=1e-4)


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_a_two_gpu_job_alternates_with_two_one_gpu_jobs(backend):
    # G = 2, T = 3: job 0 needs both GPUs, jobs 1 and 2 one each, so a round holds job 0 or
    # {1, 2}. Job 0 in a rounds: p = (2a, 2(3-a), 2(3-a)) epochs of 10.
    # a = 1: log 0.2 + 2 log 0.4 = -3.442 beats a = 2: log 0.4 + 2 log 0.2 = -4.135
    m = market(gpus=2, rounds=3, scale_factors=[2, 1, 1], epochs_done=[0, 0, 0], epochs_total=[10, 10, 10],
               epoch_seconds=[60.0] * 3, remaining_seconds=[600.0] * 3)
    res = solve_market(m, backend)
    check_objective(res, (math.log(0.2 + EPS) + 2 * math.log(0.4 + EPS)) / 9)
    x = decode(m, res)
    assert x.sum(axis=1).tolist() == [1, 2, 2]
    assert ((x[0] == 1) != (x[1] == 1)).all() and (x[1] == x[2]).all()
    assert (np.array([2, 1, 1]) @ x <= 2).all()


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_large_k_runs_the_job_with_the_longest_remaining_time(backend):
    # R = (1000, 500) s. (2, 0) rounds: max(1000 - 240, 500) = 760; (1, 1): max(880, 380) = 880;
    # (0, 2): 1000. With k = 1 the 120 s difference outweighs the log term:
    # (2, 0): (log(0.4 + eps) + log(eps)) / 4 - 760 = -3.683 - 760
    m = market(remaining_seconds=[1000.0, 500.0], k=1.0)
    res = solve_market(m, backend)
    check_objective(res, (math.log(0.4 + EPS) + math.log(EPS)) / 4 - 760.0)
    assert decode(m, res).tolist() == [[1, 1], [0, 0]]


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_small_k_keeps_the_nash_welfare_split(backend):
    # k = 1e-3: (1, 1) gives 0.5 log(0.02 + eps) - 0.88 = -2.836 (E = 100 epochs here);
    # (2, 0) gives (log(0.04 + eps) + log(eps)) / 4 - 0.76 = -5.019
    m = market(remaining_seconds=[1000.0, 500.0], k=1e-3, epochs_total=[100, 100])
    res = solve_market(m, backend)
    check_objective(res, 0.5 * math.log(0.02 + EPS) - 0.88)
    assert decode(m, res).sum(axis=1).tolist() == [1, 1]


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_priorities_weight_the_log_terms(backend):
    # T = 1: one job runs. pi = (1, 5): running job 1 gives (log eps + 5 log 0.2) / 2
    m = market(rounds=1, priorities=[1.0, 5.0])
    res = solve_market(m, backend)
    check_objective(res, (math.log(EPS) + 5 * math.log(0.2 + EPS)) / 2)
    assert decode(m, res).tolist() == [[0], [1]]


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_a_job_near_its_end_yields_the_rounds_it_cannot_use(backend):
    # job 0 has 9 of 10 epochs done, so one 60 s epoch is all it can gain.
    # (1, 1): log(1 + eps) + log(0.2 + eps) = -1.609; (0, 2): log(0.9 + eps) + log(0.4 + eps) = -1.022
    m = market(epochs_done=[9, 0])
    res = solve_market(m, backend)
    check_objective(res, (math.log(0.9 + EPS) + math.log(0.4 + EPS)) / 4)
    assert decode(m, res).tolist() == [[0, 0], [1, 1]]


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_hard_finish_time_rows(backend):
    # s_j <= 0 needs 600 - 60 p_j <= 0, p_j >= 10, but at most 4 epochs fit in 2 rounds
    res = solve_market(market(finish_slack=[0.0, 0.0]), backend)
    assert res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert not res.has_solution
    # s_0 <= 360 needs p_0 >= 4: job 0 takes both rounds; (log(0.4 + eps) + log(eps)) / 4
    m = market(finish_slack=[360.0, np.inf])
    res = solve_market(m, backend)
    check_objective(res, (math.log(0.4 + EPS) + math.log(EPS)) / 4)
    assert decode(m, res).tolist() == [[1, 1], [0, 0]]


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(epochs_done=[0, 0, 0]), "epochs_done has 3 entries for 2 jobs"),
        (dict(remaining_seconds=[np.inf, 1.0]), "remaining_seconds has a non-finite entry"),
        (dict(gpus=0), "gpus >= 1"),
        (dict(scale_factors=[1, 2]), "every job needs 1..1 GPUs"),
        (dict(epoch_seconds=[0.0, 1.0]), "epoch durations must be > 0"),
        (dict(priorities=[1.0, -1.0]), "priorities must be >= 0"),
        (dict(k=-1.0), "k >= 0"),
    ],
)
def test_malformed_markets_are_rejected(fields, message):
    with pytest.raises(ProblemError, match=message):
        market(**fields)


def test_reorder_moves_the_high_priority_job_first():
    # G = 1, T = 3: job 0 (pi = 1) has 2 rounds, job 1 (pi = 100) one. Job 1 first:
    # 100 x 0 + (1/2)(1 + 2) = 1.5; the schedule [[1, 1, 0], [0, 0, 1]] scores 100 x 2 + 0.5 = 200.5
    model = build_reorder(np.array([1, 1]), 1, 3, np.array([2, 1]), np.array([1.0, 100.0]))
    res = solve(model, "highs")
    assert res.objective == pytest.approx(1.5)
    assert np.rint(res.value("y")).astype(int).tolist() == [[0, 1, 1], [1, 0, 0]]


# --- 5. properties on random markets -------------------------------------------------------------

@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_published_interpolation_by_hand(backend):
    # one job alone for one round: 2 epochs of 10, progress 0.2, a base: u = log 0.2; with
    # 1 epoch (120 s epochs) progress 0.1 sits halfway between log eps at 0 and log 0.2
    one = dict(gpus=1, rounds=1, scale_factors=[1], epochs_done=[0], epochs_total=[10], remaining_seconds=[0.0],
               log_bases=PUBLISHED_BASES)
    check_objective(solve_market(market(epoch_seconds=[60.0], **one), backend), math.log(0.2))
    check_objective(solve_market(market(epoch_seconds=[120.0], **one), backend),
                    0.5 * math.log(EPS) + 0.5 * math.log(0.2))


@pytest.mark.parametrize("backend", MARKET_BACKENDS)
def test_published_interpolation_changes_the_choice(backend):
    # 1 GPU, 1 round of one epoch (+0.1 progress); job 0 at 0.2, job 1 at 0.3 with priority
    # 1.2. Exact log: job 0 gains log 1.5 = 0.405 > 1.2 log(4/3) = 0.345. Interpolated, both
    # lie on the segment [0.2, 0.4] of slope (log 0.4 - log 0.2) / 0.2: job 1 gains 1.2x job 0's.
    m = market(rounds=1, epochs_done=[2, 3], epoch_seconds=[120.0, 120.0], remaining_seconds=[0.0, 0.0],
               priorities=[1.0, 1.2])
    assert decode(m, solve_market(m, backend)).ravel().tolist() == [1, 0]
    published = replace(m, log_bases=PUBLISHED_BASES)
    assert decode(published, solve_market(published, backend)).ravel().tolist() == [0, 1]


def test_market_log_bases_must_rise_from_0_to_1():
    for bases in [(0.0,), (0.1, 1.0), (0.0, 0.5), (0.0, 0.5, 0.5, 1.0)]:
        with pytest.raises(ProblemError, match="log bases must rise strictly from 0 to 1"):
            market(log_bases=bases)


@st.composite
def markets(draw, max_cells: int = 12, piecewise: bool = True):
    T = draw(st.integers(1, 4))
    N = draw(st.integers(1, min(6, max_cells // T)))
    G = draw(st.integers(1, 4))
    w = draw(st.lists(st.sampled_from([1, 1, 2, 4]), min_size=N, max_size=N))
    E = draw(st.lists(st.integers(1, 30), min_size=N, max_size=N))
    c = [draw(st.integers(0, e)) for e in E]
    ebar = draw(st.lists(st.sampled_from([20.0, 45.0, 60.0, 150.0, 400.0]), min_size=N, max_size=N))
    R = draw(st.lists(st.sampled_from([0.0, 100.0, 900.0, 3000.0]), min_size=N, max_size=N))
    pri = draw(st.one_of(st.none(), st.lists(st.sampled_from([1.0, 1.0, 3.0, 50.0]), min_size=N, max_size=N)))
    k = draw(st.sampled_from([0.0, 1e-3, 1e-1, 10.0]))
    bases = draw(st.sampled_from([None, None, PUBLISHED_BASES, (0.0, 0.5, 1.0)])) if piecewise else None
    return Market(G, T, 120.0, np.minimum(w, G), c, E, ebar, R, k, priorities=pri, log_bases=bases)


def true_utility(m: Market, q: np.ndarray) -> np.ndarray:
    """log(q + ε), or the published interpolation of log through the market's bases
    (log ε at 0), computed independently of the formulation."""
    if m.log_bases is None:
        return np.log(q + m.log_floor)
    bases = np.array(m.log_bases)
    return np.interp(q, bases, np.log(np.where(bases > 0, bases, m.log_floor)))


def brute_force_optimum(m: Market) -> float:
    """Best objective over every 0/1 schedule that fits the GPUs. For a fixed schedule both
    terms grow with p, so p_j = min(E_j - c_j, Δ n_j / ē_j) (n_j: the job's rounds)."""
    N, T = m.num_jobs, m.rounds
    bits = np.array(list(itertools.product([0, 1], repeat=N * T)), dtype=float).reshape(-1, N, T)
    fits = ((m.scale_factors[None, :, None] * bits).sum(axis=1) <= m.gpus).all(axis=1)
    n = bits[fits].sum(axis=2)
    p = np.minimum(m.epochs_left, m.round_length * n / m.epoch_seconds)
    utility = (m.priorities / (N * T) * true_utility(m, (m.epochs_done + p) / m.epochs_total)).sum(axis=1)
    makespan = np.maximum(0.0, (m.remaining_seconds - m.epoch_seconds * p).max(axis=1))
    return float((utility - m.k * makespan).max())


def objective_at(m: Market, x: np.ndarray, p: np.ndarray) -> float:
    N, T = m.num_jobs, m.rounds
    utility = (m.priorities / (N * T) * true_utility(m, (m.epochs_done + p) / m.epochs_total)).sum()
    return float(utility - m.k * max(0.0, (m.remaining_seconds - m.epoch_seconds * p).max()))


@given(markets())
def test_random_markets_are_feasible_and_optimal_on_highs(m):
    res = solve(build(m), "highs")
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE), res.status
    assert res.gap <= 1e-4  # HiGHS' default MIP gap; the cut loop's own target is 1e-6
    tol = 1e-6
    raw = res.value("x")
    x = decode(m, res)
    assert np.abs(raw - x).max() <= 1e-6 and set(np.unique(x)) <= {0, 1}
    load = m.scale_factors @ x
    assert (load <= m.gpus).all()                              # capacity every round
    assert (np.diff(load) <= 0).all()                          # rounds sorted by load
    p = res.value("p")
    assert (p >= -tol).all()
    assert (p <= m.epochs_left + tol).all()                    # c_j + p_j <= E_j
    assert (m.epoch_seconds * p <= m.round_length * x.sum(axis=1) + 1e-6 * m.round_length * m.rounds).all()
    # the reported objective is the true (log, not cut) objective at the returned point ...
    scale = max(1.0, abs(res.objective))
    assert res.objective == pytest.approx(objective_at(m, x, np.clip(p, 0, None)), abs=1e-6 * scale)
    # ... and within the reported gap of the brute-force optimum
    best = brute_force_optimum(m)
    assert res.objective <= best + 1e-6 * scale
    assert res.objective >= best - ((res.gap or 0.0) + 1e-6) * scale
    assert res.bound >= best - 1e-6 * scale


@given(markets(), st.data())
def test_rounded_relaxation_is_a_feasible_start_within_the_brute_force_optimum(m, data):
    model = build(m)
    canon = model.canonical()
    relaxed = solve(canon.relaxed(), "highs")
    assert relaxed.status is Status.OPTIMAL
    assert relaxed.objective >= brute_force_optimum(m) - 1e-6 * max(1.0, abs(relaxed.objective))
    # any fractional schedule, the relaxation's or a random one, rounds to a feasible point
    noise = np.array(data.draw(st.lists(st.floats(0, 1), min_size=m.num_jobs * m.rounds,
                                        max_size=m.num_jobs * m.rounds)))
    for fractional in (relaxed.value("x"), noise):
        x = round_schedule(m, fractional)
        assert set(np.unique(x)) <= {0, 1} and x.shape == (m.num_jobs, m.rounds)
        start = point(model, m, x)
        assert canon.max_violation(start) <= 1e-9
        assert canon.objective_value(start) <= brute_force_optimum(m) + 1e-9 * max(1.0, abs(relaxed.objective))
    # the rounded relaxation keeps at least the whole rounds the relaxation gave each job
    # when they all fit one after another (one job per round)
    if (m.scale_factors == m.gpus).all():
        whole = np.floor(relaxed.value("x").reshape(m.num_jobs, m.rounds).sum(axis=1) + 1e-6)
        assert (round_schedule(m, relaxed.value("x")).sum(axis=1) >= whole).all()


def test_rounding_evicts_a_low_priority_job_for_a_high_priority_remainder():
    # 1 GPU, 2 rounds: jobs 0 and 1 keep their one whole round each, which fills both; job 2
    # (priority 50, nothing done) has a fractional remainder: taking one round from job 0 or
    # 1 costs (log 0.2 - log eps) / 6 and gives job 2 fifty times that, so one is evicted
    m = market(scale_factors=[1, 1, 1], epochs_done=[0, 0, 0], epochs_total=[10, 10, 10],
               epoch_seconds=[60.0] * 3, remaining_seconds=[0.0] * 3, priorities=[1.0, 1.0, 50.0])
    x = round_schedule(m, np.array([[0.5, 0.5], [0.5, 0.5], [0.25, 0.25]]))
    assert x.sum(axis=1)[2] == 1 and x.sum() == 2 and (x.sum(axis=0) == 1).all()
    # with equal priorities nobody is evicted: the whole rounds stay
    same = round_schedule(replace(m, priorities=np.ones(3)), np.array([[0.5, 0.5], [0.5, 0.5], [0.25, 0.25]]))
    np.testing.assert_array_equal(same.sum(axis=1), [1, 1, 0])


def test_point_is_the_most_progress_a_schedule_allows():
    m = market(k=1e-3, epochs_done=[9, 0])
    model = build(m)
    start = point(model, m, np.array([[1, 0], [0, 1]]))
    # job 0 has 1 epoch left (cap), job 1 gets 120 s / 60 s = 2 epochs; remaining 600 - 60 p
    np.testing.assert_allclose(start[model.blocks["p"].columns], [1.0, 2.0])
    np.testing.assert_allclose(start[model.blocks["s"].columns], [540.0, 480.0])
    np.testing.assert_allclose(start[model.blocks["z"].columns], [540.0])


@given(st.data())
def test_reorder_start_is_feasible_and_no_worse_than_the_schedule(data):
    w, G, T, x, pri = data.draw(schedules())
    counts = x.sum(axis=1)
    y = reorder_start(w, G, T, counts, pri, x)
    np.testing.assert_array_equal(y.sum(axis=1), counts)
    assert (w @ y <= G).all()
    assert reorder_objective(y, pri) <= reorder_objective(x, pri) + 1e-9
    if (w == 1).all():  # one GPU each: the greedy fill is optimal
        res = solve(build_reorder(w, G, T, counts, pri), "highs", SolveOptions(mip_gap=1e-9))
        assert reorder_objective(y, pri) == pytest.approx(res.objective, abs=1e-6 * max(1.0, res.objective))


@st.composite
def schedules(draw):
    """(scale factors, G, T, a feasible 0/1 schedule, priorities)."""
    T = draw(st.integers(1, 4))
    N = draw(st.integers(1, 6))
    G = draw(st.integers(1, 4))
    w = np.minimum(draw(st.lists(st.sampled_from([1, 1, 2, 4]), min_size=N, max_size=N)), G)
    x = np.array(draw(st.lists(st.integers(0, 1), min_size=N * T, max_size=N * T))).reshape(N, T)
    for t in range(T):  # drop jobs from the back of an over-full round
        for j in reversed(range(N)):
            if w @ x[:, t] > G and x[j, t]:
                x[j, t] = 0
    pri = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 10.0, 1e3]), min_size=N, max_size=N)))
    return w, G, T, x, pri


def reorder_objective(x: np.ndarray, pri: np.ndarray) -> float:
    n = x.sum(axis=1)
    weight = np.where(n > 0, pri / np.maximum(n, 1), 0.0)
    return float(weight @ (x @ np.arange(x.shape[1])))


@given(schedules())
def test_reordering_keeps_round_counts_and_capacity_and_never_worsens(case):
    w, G, T, x, pri = case
    counts = x.sum(axis=1)
    res = solve(build_reorder(w, G, T, counts, pri), "highs")
    assert res.status is Status.OPTIMAL
    y = np.rint(res.value("y")).astype(int)
    assert np.abs(res.value("y") - y).max() <= 1e-6
    np.testing.assert_array_equal(y.sum(axis=1), counts)
    assert (w @ y <= G).all()
    assert res.objective == pytest.approx(reorder_objective(y, pri), abs=1e-6 * max(1.0, res.objective))
    assert res.objective <= reorder_objective(x, pri) + 1e-6 * max(1.0, reorder_objective(x, pri))


# --- 6. the round planner ------------------------------------------------------------------------

def hand_profile(jobs: list[tuple[list[int], list[float]]]) -> EpochProfile:
    epochs = [len(bs) for bs, _ in jobs]
    return EpochProfile(np.concatenate([[0], np.cumsum(epochs)]).astype(np.int64),
                        np.concatenate([np.asarray(bs, dtype=np.int64) for bs, _ in jobs]),
                        np.concatenate([np.asarray(d, dtype=float) for _, d in jobs]))


#: six trace jobs: (per-epoch batch sizes, durations in s) and their GPU counts
PROFILE = hand_profile([
    (runs((32, 2), (64, 4)), [100.0] * 2 + [50.0] * 4),
    (runs((16, 4)), [200.0] * 4),
    (runs((32, 8)), [90.0] * 8),
    (runs((8, 2), (16, 3)), [300.0] * 2 + [150.0] * 3),
    (runs((64, 3)), [400.0] * 3),
    (runs((128, 6)), [60.0] * 6),
])
WIDTH = np.array([2, 1, 1, 2, 4, 1])


def round_state(r: int, jobs, done, gpus: int = 4, profile: EpochProfile = PROFILE, width=WIDTH,
                admitted=None) -> RoundState:
    jobs = np.asarray(jobs, dtype=np.int64)
    return RoundState(r, 120.0 * r, gpus, 120.0, jobs, np.asarray(width)[jobs], np.asarray(done, dtype=np.int64),
                      profile.epochs[jobs], np.zeros(jobs.size) if admitted is None else np.asarray(admitted),
                      profile)


def check_round(state: RoundState, plan) -> None:
    """The plan's jobs are active, distinct, fit the GPUs, and leave no job out that fits."""
    chosen = plan.jobs
    assert np.isin(chosen, state.jobs).all()
    assert len(set(chosen.tolist())) == chosen.size
    width = dict(zip(state.jobs.tolist(), state.scale_factors.tolist()))
    used = sum(width[j] for j in chosen.tolist())
    assert used <= state.gpus
    idle = state.gpus - used
    left_out = [j for j in state.jobs.tolist() if j not in set(chosen.tolist())]
    assert all(width[j] > idle for j in left_out), (chosen, idle, left_out)


def test_planner_replans_on_arrivals_departures_and_every_few_rounds_of_the_run():
    # re-plans: on a change of the job set, in rounds that are multiples of
    # reoptimize_every (as published: rounds of the run, not rounds since the last solve),
    # and when the window has no plan for the round; otherwise the cached plan
    policy = Shockwave(config=ShockwaveConfig(rounds=10, reoptimize_every=3))
    steps = [
        # (round, active jobs, epochs done, re-plan expected)
        (0, [0, 1, 2], [0, 0, 0], True),       # first call (and 0 % 3 == 0)
        (1, [0, 1, 2], [1, 0, 1], False),      # same jobs: cached plan
        (2, [0, 1, 2], [1, 1, 2], False),
        (3, [0, 1, 2], [2, 1, 2], True),       # 3 % 3 == 0
        (4, [0, 1, 2, 3], [2, 1, 3, 0], True),  # job 3 arrives
        (5, [0, 1, 2, 3], [3, 2, 3, 0], False),
        (6, [0, 1, 2, 3], [3, 2, 4, 0], True),  # 6 % 3 == 0, two rounds after the last solve
        (7, [0, 2, 3], [3, 4, 1], True),       # job 1 leaves
        (8, [0, 2, 3], [4, 4, 1], False),
        (9, [0, 2, 3], [4, 5, 2], True),       # 9 % 3 == 0
        (10, [2, 3, 5], [5, 2, 0], True),      # job 0 leaves and job 5 arrives (same count)
        (11, [2, 3, 5], [5, 2, 1], False),
    ]
    for r, jobs, done, replan in steps:
        state = round_state(r, jobs, done)
        plan = policy.plan(state)
        assert plan.solved is replan, r
        assert (plan.seconds > 0) is replan
        check_round(state, plan)


def test_a_job_behind_its_fair_finish_time_runs_first_in_the_window():
    # G = 2, T = 4, now = 1200 s (round 10); epochs of 60 s, 10 per job. Job A (trace id 0,
    # 1 GPU) was admitted at 0 and has 8 epochs done; job B (id 1, 2 GPUs) arrives now.
    # Share min(1, 2/2) = 1. A's fair finish 0 + (480 + R_A) is far before its projection
    # 1200 + R_A, so rho_A > 1 and pi_A >> 1; B's projection equals its estimate (pi_B = 1).
    # A and B never fit together. A can gain 2 epochs = 1 round: the market gives A 1 round
    # and B 3 (with pi = 1 for both, (0, 4) would win: 2 log 0.8 = -0.446 > log 0.6 = -0.511).
    # Sorted by load, the market puts B's rounds (load 2) before A's (load 1); the
    # reordering MILP moves A's round first.
    profile = hand_profile([(runs((32, 10)), [60.0] * 10), (runs((32, 10)), [60.0] * 10)])
    policy = Shockwave(config=ShockwaveConfig(rounds=4, reoptimize_every=100))
    runs_of = []
    for r in range(10, 14):
        state = round_state(r, [0, 1], [8, 0], gpus=2, profile=profile, width=[1, 2], admitted=[0.0, 1200.0])
        plan = policy.plan(state)
        assert plan.solved is (r == 10)
        check_round(state, plan)
        runs_of.append(plan.jobs.tolist())
    assert runs_of == [[0], [1], [1], [1]]


def test_planner_replans_when_the_window_runs_out():
    policy = Shockwave(config=ShockwaveConfig(rounds=2, reoptimize_every=8))
    solved = [policy.plan(round_state(r, [1, 2, 5], [0, 0, 0])).solved for r in range(5)]
    # rounds 0 and 1 are the first window, 2 and 3 the second, 4 the third
    assert solved == [True, False, True, False, True]


@pytest.mark.parametrize("compat, expected", [(False, None), (True, (0.0, 0.5, 1.0))])
def test_planner_uses_the_published_interpolation_under_gavel_compat(monkeypatch, compat, expected):
    seen = []
    build_market = shockwave_policy.market_program.build
    monkeypatch.setattr(shockwave_policy.market_program, "build", lambda m: seen.append(m) or build_market(m))
    policy = Shockwave(config=ShockwaveConfig(rounds=2, log_bases=(0.0, 0.5, 1.0)), gavel_compat=compat)
    policy.plan(round_state(0, [0, 1], [0, 0]))
    assert seen and all(m.log_bases == expected for m in seen)


def test_planner_with_no_jobs_plans_nothing():
    plan = Shockwave(config=ShockwaveConfig(rounds=2)).plan(round_state(0, [], []))
    assert plan.jobs.size == 0 and not plan.solved


def test_idle_gpus_go_to_the_longest_remaining_unplanned_jobs():
    policy = Shockwave()
    state = round_state(0, [0, 1, 2, 3], [0, 0, 0, 0])  # widths 2, 1, 1, 2 on 4 GPUs
    x = np.array([[1, 0, 0],
                  [0, 1, 0],
                  [0, 1, 0],
                  [0, 0, 0]])
    remaining = np.array([100.0, 50.0, 300.0, 400.0])  # order: job 3, 2, 0, 1
    rounds = policy._fill(state, x, remaining)
    # round 0: job 0 (2 GPUs), 2 idle: job 3 (2) fits
    # round 1: jobs 1, 2 (2 GPUs), 2 idle: job 3 fits
    # round 2: nothing planned: job 3 (2), job 2 (1), job 0 (2) does not fit in 1, job 1 (1)
    assert [r.tolist() for r in rounds] == [[0, 3], [1, 2, 3], [3, 2, 1]]


@st.composite
def planner_cases(draw):
    G = draw(st.integers(1, 4))
    N = draw(st.integers(1, 5))
    jobs, width, done = [], [], []
    for _ in range(N):
        E = draw(st.integers(1, 8))
        switch = draw(st.integers(0, E))
        d0, d1 = draw(st.sampled_from([30.0, 90.0, 200.0])), draw(st.sampled_from([20.0, 60.0, 500.0]))
        jobs.append((runs((16, switch), (32, E - switch)), [d0] * switch + [d1] * (E - switch)))
        width.append(min(draw(st.sampled_from([1, 1, 2, 4])), G))
        done.append(draw(st.integers(0, E - 1)))
    admitted = draw(st.lists(st.sampled_from([0.0, 60.0, 240.0]), min_size=N, max_size=N))
    return G, hand_profile(jobs), np.array(width), done, admitted


@settings(max_examples=15)
@given(planner_cases())
def test_planner_rounds_fit_and_are_work_conserving(case):
    G, profile, width, done, admitted = case
    policy = Shockwave(config=ShockwaveConfig(rounds=3, reoptimize_every=8))
    jobs = np.arange(width.size)
    for r in range(2, 6):  # a solve, two cached rounds, and a new window
        state = round_state(r, jobs, done, gpus=G, profile=profile, width=width, admitted=admitted)
        plan = policy.plan(state)
        assert plan.solved is (r in (2, 5))
        check_round(state, plan)


def test_round_planner_refuses_one_shot_allocation():
    with pytest.raises(ProblemError, match="plans whole rounds over time"):
        Shockwave().allocate(None)


# --- 7. cross-backend agreement ------------------------------------------------------------------

@settings(max_examples=12)
@given(markets(max_cells=9, piecewise=False))
def test_highs_cuts_and_gurobi_log_agree_on_random_markets(m):
    if gurobi_problem():
        pytest.skip(gurobi_problem())
    options = SolveOptions(mip_gap=1e-7)
    cuts = solve(build(m), "highs", options)
    native = solve(build(m), "gurobi", options)
    assert cuts.status is Status.OPTIMAL and native.status is Status.OPTIMAL
    # asked for a 1e-7 MIP gap: an 'optimal' answer must report a bound that close
    assert cuts.gap <= 1e-4 and native.gap <= 1e-4
    assert any("tangent cuts" in note for note in cuts.notes) and not native.notes
    scale = max(1.0, abs(cuts.objective), abs(native.objective))
    assert cuts.objective == pytest.approx(native.objective,
                                           abs=((cuts.gap or 0.0) + (native.gap or 0.0) + 1e-5) * scale)


#: hand instances whose optimal schedule depends on every term (optimal objective by hand)
CROSS_INSTANCES = {
    # see test_a_two_gpu_job_alternates_with_two_one_gpu_jobs, plus k = 1e-3: both optimal
    # splits leave max(600 - 120, 600 - 240) = 480 s -> -0.48
    "two-gpu": (dict(gpus=2, rounds=3, scale_factors=[2, 1, 1], epochs_done=[0, 0, 0], epochs_total=[10, 10, 10],
                     epoch_seconds=[60.0] * 3, remaining_seconds=[600.0] * 3, k=1e-3),
                (math.log(0.2 + EPS) + 2 * math.log(0.4 + EPS)) / 9 - 0.48),
    # pi = (1, 50), k = 0: job 1 takes both rounds, (log eps + 50 log 0.4) / 4 = -14.907;
    # one round each gives (log 0.2 + 50 log 0.2) / 4 = -20.52
    "priorities": (dict(remaining_seconds=[0.0, 0.0], priorities=[1.0, 50.0]),
                   (math.log(EPS) + 50 * math.log(0.4 + EPS)) / 4),
    # see test_large_k_runs_the_job_with_the_longest_remaining_time
    "makespan": (dict(remaining_seconds=[1000.0, 500.0], k=1.0), (math.log(0.4 + EPS) + math.log(EPS)) / 4 - 760.0),
    # see test_a_job_near_its_end_yields_the_rounds_it_cannot_use
    "near-end": (dict(epochs_done=[9, 0]), (math.log(0.9 + EPS) + math.log(0.4 + EPS)) / 4),
}


@pytest.mark.parametrize("name", sorted(CROSS_INSTANCES))
@pytest.mark.parametrize("backend", ["gurobi"])
def test_conic_backends_agree_with_highs_on_hand_instances(backend, name):
    if backend not in BACKENDS:
        pytest.skip(f"{backend} not installed")
    if backend == "gurobi" and gurobi_problem():
        pytest.skip(gurobi_problem())
    fields, expected = CROSS_INSTANCES[name]
    m = market(**fields)
    options = SolveOptions(mip_gap=1e-7)
    cuts = solve(build(m), "highs", options)
    other = solve(build(m), backend, options, check=False)
    check_objective(cuts, expected)
    assert other.status is Status.OPTIMAL
    assert cuts.gap <= 1e-4 and (other.gap or 0.0) <= 1e-4  # asked for a 1e-7 MIP gap
    scale = max(1.0, abs(expected))
    assert other.objective == pytest.approx(cuts.objective, abs=((cuts.gap or 0.0) + (other.gap or 0.0) + 1e-5) * scale)


def test_ecos_bb_is_not_offered_for_mixed_integer_models():
    # ECOS_BB reported feasible markets 'infeasible' and 'optimal' for far worse schedules
    if "cvxpy:ECOS_BB" not in BACKENDS:
        pytest.skip("cvxpy:ECOS_BB not installed (the ecos package)")
    caps = get_backend("cvxpy:ECOS_BB").capabilities()
    assert Capability.MILP not in caps
    assert "cvxpy:ECOS_BB" not in backends_with(frozenset({Capability.LP, Capability.MILP}))


# --- 8. published configurations -----------------------------------------------------------------

#: file -> (k, lambda) from the published configurations (window 20, rho_max 1, gap 1e-3, 15 s)
PUBLISHED = {"tacc_32gpus.json": (1e-3, 12.0), "scale_64gpus.json": (10.0, 5.0),
             "scale_128gpus.json": (1e-3, 15.0), "scale_256gpus.json": (1e5, 5.0),
             "shockwave_example_config.json": (10.0, 5.0)}


def test_every_published_configuration_reads(shared_data):
    folder = shared_data / "shockwave" / "configurations"
    files = sorted(folder.glob("*.json"))
    assert files, f"no configurations in {folder}"
    for path in files:
        assert path.name in PUBLISHED, f"unexpected configuration {path.name}: add its values here"
        k, lam = PUBLISHED[path.name]
        cfg = read_shockwave_config(path)
        assert cfg == ShockwaveConfig(rounds=20, k=k, lam=lam, rho_max=1.0, mip_gap=1e-3, time_limit=15.0,
                                      reoptimize_every=8, oracle=False, log_bases=PUBLISHED_BASES), path.name
        assert isinstance(cfg.rounds, int)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"k": 1e-3,,}', r":1:\d+: invalid JSON"),
        ('{"k": 1e-3, "kappa": 2}', r"unknown key 'kappa'"),
        ('{"k": "big"}', r"key 'k': expected a number, got 'big'"),
        ('{"rhomax": true}', r"key 'rhomax': expected a number, got True"),
        ('{"lambda": [5]}', r"key 'lambda': expected a number, got \[5\]"),
        ('{"k": -1}', r"invalid k=-1"),
        ('{"future_rounds": 2.5}', r"invalid rounds=2.5"),
        ('[1, 2]', r"expected a JSON object"),
        ('{"oracle": 1}', r"key 'oracle': expected true or false, got 1"),
        ('{"log_approximation_bases": 0.2}', r"key 'log_approximation_bases': expected a list of numbers"),
        ('{"log_approximation_bases": [0.2, 1.0]}', r"invalid log_bases=\(0.2, 1.0\)"),
        ('{"log_approximation_bases": [0, 0.6, 0.4, 1]}', r"invalid log_bases"),
    ],
)
def test_malformed_configuration_names_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "bad_config.json"
    path.write_text(text)
    with pytest.raises(ShockwaveConfigError, match=message) as info:
        read_shockwave_config(path)
    assert str(path) in str(info.value)


def test_configuration_keys_map_to_fields(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"future_rounds": 5, "k": 2.5, "lambda": 3, "rhomax": 1.5, "solver_rel_gap": 0.01,
                                "solver_timeout": 2, "reoptimize_every": 4, "gpu_ram": 16, "num_gpus": 32,
                                "oracle": True, "log_approximation_bases": [0, 0.5, 1]}))
    assert read_shockwave_config(path) == ShockwaveConfig(rounds=5, k=2.5, lam=3, rho_max=1.5, mip_gap=0.01,
                                                          time_limit=2, reoptimize_every=4, oracle=True,
                                                          log_bases=(0.0, 0.5, 1.0))
    with pytest.raises(ShockwaveConfigError, match=r"nope.json: cannot read"):
        read_shockwave_config(tmp_path / "nope.json")


# --- 9. the command line ------------------------------------------------------------------------

def tiny_shockwave_trace(shared_data, tmp_path):
    """The published 120-job trace's first jobs, steps cut to a tenth (short runs)."""
    src = next((shared_data / "shockwave" / "traces").glob("120_*.trace"))
    lines = []
    for line in src.read_text().splitlines()[:5]:
        cells = line.split("\t")
        cells[5] = str(max(1, int(cells[5]) // 10))
        lines.append("\t".join(cells))
    path = tmp_path / "tiny.trace"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(*args):
    from typer.testing import CliRunner

    from schedopt.cli import app

    return CliRunner().invoke(app, ["simulate", *map(str, args), "--no-progress"])


def test_cli_runs_shockwave_with_a_published_config(shared_data, tmp_path):
    root = shared_data / "shockwave"
    out = tmp_path / "run"
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     root / "tacc_throughputs.json", "--cluster", "v100=4", "--policy", "shockwave",
                     "--config", root / "configurations" / "tacc_32gpus.json", "--solver", "highs", "--out", out)
    assert result.exit_code == 0, result.output
    assert "of which build / translate / solve" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_completed"] == 5 and summary["solver"] == "highs"
    # Shockwave's simulator settings come with its traces
    assert (summary["round_length"], summary["overhead"], summary["max_runtime_factor"]) == (120.0, 20.0, 1.5)
    rows = (out / "solves.csv").read_text().splitlines()
    assert len(rows) == summary["solves"] + 1 > 1
    assert all(float(cell) >= 0 for row in rows[1:] for cell in row.split(",")[3:])  # the split is reported
    jobs = (out / "jobs.csv").read_text().splitlines()
    assert "isolated_runtime" in jobs[0].split(",") and len(jobs) == 6


def test_cli_reports_a_bad_shockwave_config_in_one_line(shared_data, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"k": 1e-3, "lambda": "twelve"}')
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     shared_data / "shockwave" / "tacc_throughputs.json", "--cluster", "v100=4",
                     "--policy", "shockwave", "--config", bad)
    assert result.exit_code == 2
    assert f"{bad}: key 'lambda': expected a number, got 'twelve'" in result.output
    assert "Traceback" not in result.output
    other = run_cli("--example", "--policy", "max_min_fairness", "--config", bad)
    assert other.exit_code == 2 and "--config is for --policy shockwave" in other.output


def test_cli_runs_allox_on_a_shockwave_trace_as_shockwaves_variant(shared_data, tmp_path):
    result = run_cli("--trace", tiny_shockwave_trace(shared_data, tmp_path), "--throughputs",
                     shared_data / "shockwave" / "tacc_throughputs.json", "--cluster", "v100=4", "--policy", "allox")
    assert result.exit_code == 0, result.output
    assert "Shockwave's multi-GPU variant, alpha 0.2" in result.output
