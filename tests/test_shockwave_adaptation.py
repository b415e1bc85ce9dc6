"""Shockwave's inputs: batch-size adaptation patterns, the jobs that follow them, and the
remaining-time predictor."""

import functools
import json
import math

import numpy as np
import pytest
from helpers import lp_backends
from hypothesis import given
from hypothesis import strategies as st

from allocators.round_plans import EpochProfile
from allocators.shockwave.remaining_time import RemainingTime
from formulations.shockwave import (
    LOG_FLOOR,
)
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
from simulator.readers.traces import read_trace
from simulator.round_view import build_round_view
from simulator.throughputs import read_gavel_json, table_from_gavel_dict

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
    return AdaptiveJobs(build_round_view(read_trace(path), parse_cluster("v100=4"), table), table)


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
    aj = AdaptiveJobs(build_round_view(read_trace(path), parse_cluster("v100=4"), table), table)
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
    profile = EpochProfile.of_jobs([([1, 1], [np.inf, 1.0]), ([2, 2, 2], [2.0, 3.0, 4.0])])
    # job 1: 2 + 3 + 4 = 9
    assert profile.isolated_runtimes()[1] == 9.0


def test_isolated_runtimes_and_job_slices():
    profile = EpochProfile.of_jobs([([8, 16], [1.0, 2.0]), ([4, 4, 8], [3.0, 4.0, 5.0]), ([2], [6.0])])
    np.testing.assert_array_equal(profile.epochs, [2, 3, 1])
    np.testing.assert_allclose(profile.isolated_runtimes(), [3.0, 12.0, 6.0])
    bs, dur = profile.job(1)
    assert bs.tolist() == [4, 4, 8] and dur.tolist() == [3.0, 4.0, 5.0]


def test_a_job_without_a_batch_size_is_not_done_before_its_last_step(tmp_path):
    path = tmp_path / "a3c.trace"
    path.write_text(twelve_column("A3C", 1000, 1, "static", duration=500))
    table = table_from_gavel_dict(HAND_TABLE)
    aj = AdaptiveJobs(build_round_view(read_trace(path), parse_cluster("v100=4"), table), table)
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


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 40), st.sampled_from([16, 32, 64]),
                          st.floats(0.5, 500.0)), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_a_job_that_keeps_its_batch_size_is_stored_as_three_numbers(jobs, seed):
    """The compact profile (epochs, batch size, duration per static job; arrays per varying one)
    answers as the same jobs listed epoch by epoch."""
    rng = np.random.default_rng(seed)
    listed, varying = [], {}
    for i, (static, epochs, bs, dur) in enumerate(jobs):
        if static:
            listed.append((np.full(epochs, bs), np.full(epochs, dur)))
        else:
            varying[i] = (rng.choice([16, 32, 64], epochs), rng.uniform(0.5, 500.0, epochs))
            listed.append(varying[i])
    compact = EpochProfile(np.array([e for _, e, _, _ in jobs]), np.array([b for _, _, b, _ in jobs]),
                           np.array([0.0 if i in varying else d for i, (_, _, _, d) in enumerate(jobs)]), varying)
    full = EpochProfile.of_jobs(listed)
    np.testing.assert_array_equal(compact.epochs, full.epochs)
    np.testing.assert_allclose(compact.isolated_runtimes(), full.isolated_runtimes(), rtol=1e-13)
    for i in range(len(jobs)):
        for got, want in zip(compact.job(i), full.job(i), strict=True):
            np.testing.assert_array_equal(got, want)
    which = rng.integers(0, len(jobs), 10)
    at = rng.integers(0, compact.epochs[which])
    np.testing.assert_array_equal(compact.batch_sizes_at(which, at), full.batch_sizes_at(which, at))
