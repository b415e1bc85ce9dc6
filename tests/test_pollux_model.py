"""Pollux's application measurements and goodput model against values computed by hand from the
published CSVs."""

from __future__ import annotations

import csv
import functools

import numpy as np
import pytest
from conftest import SHARED_DATA
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import check_grad

from simulator.applications import ApplicationError, canonical, gain, placement_id, read_application
from simulator.goodput import INITIAL, PerfParams, batch_config, fit_loss, fit_perf_params, optimize, step_seconds


@pytest.fixture
def traces(shared_data):
    return shared_data / "pollux" / "traces"


@pytest.fixture
def cifar(traces):
    return read_application(traces / "cifar10")


@functools.cache
def _application(name: str):
    return read_application(SHARED_DATA / "pollux" / "traces" / name)


def _csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_constants_and_epoch_boundaries_come_from_the_csvs(traces, cifar):
    files = sorted(traces.glob("cifar10/validation-*.csv"), key=lambda p: int(p.stem.split("-")[1]))
    rows = [_csv(p) for p in files]
    assert (cifar.init_batch, cifar.max_batch, cifar.min_local, cifar.max_local, cifar.max_epochs) == (
        128, 4096, 32, 1024, 100)
    assert cifar.boundaries[1] == min(float(r[0]["progress"]) for r in rows)
    assert cifar.total_progress == min(float(r[99]["progress"]) for r in rows)
    yolo = read_application(traces / "yolov3")
    assert yolo.max_local == 8 and yolo.max_epochs == 50
    assert read_application(traces / "bert").total_progress == 14774.0


def test_step_time_interpolates_a_measured_placement_and_its_rotations(traces, cifar):
    rows = [r for r in _csv(traces / "cifar10" / "placements.csv") if r["placement"] == "1"]
    (a, b) = rows[0], rows[1]
    m = (float(a["local_bsz"]) + float(b["local_bsz"])) / 2
    step, sync = cifar.step_time((1,), m)
    assert step == pytest.approx((float(a["step_time"]) + float(b["step_time"])) / 2)
    assert sync == pytest.approx((float(a["sync_time"]) + float(b["sync_time"])) / 2)
    assert canonical((3, 0, 1, 2)) == (1, 2, 3) and placement_id((4, 1, 2, 3)) == 1234
    assert cifar.step_time((2, 1), 64) == cifar.step_time((1, 2), 64)
    with pytest.raises(ValueError, match="outside the measured"):
        cifar.step_time((1,), 5000)


def test_an_unmeasured_placement_lies_between_its_neighbours(cifar):
    five = cifar.step_time((4, 4, 4, 4, 4), 128)[0]
    assert cifar.step_time((4, 4, 4, 4), 128)[0] * 0.5 < five < cifar.step_time((4,) * 6, 128)[0] * 1.5
    assert np.isfinite(cifar.step_time((4,) * 16, 64)[0])


def test_gradient_statistics_are_linear_in_the_batch_between_validated_files(traces, cifar):
    lo, hi = _csv(traces / "cifar10" / "validation-128.csv"), _csv(traces / "cifar10" / "validation-256.csv")
    sqr, var = cifar.grad_stats(160, 3)
    w = (160 - 128) / 128
    assert sqr == pytest.approx(float(lo[3]["grad_sqr"]) * (1 - w) + float(hi[3]["grad_sqr"]) * w)
    assert var == pytest.approx(float(lo[3]["grad_var"]) * (1 - w) + float(hi[3]["grad_var"]) * w)
    s, v = float(hi[7]["grad_sqr"]), float(hi[7]["grad_var"])
    assert cifar.gain(256, 7) == pytest.approx((v + s) / (v / 2 + s))
    assert gain(1.0, s, v) == 1.0


def test_the_fit_reproduces_the_measurements_within_its_error_and_stops_at_a_stationary_point(cifar):
    points = []
    for pid, (local, step, sync) in cifar.placements.items():
        digits = [int(d) for d in str(pid)]
        points += [(len(digits), sum(digits), m, a - b, a) for m, a, b in zip(local, step, sync, strict=True)]
    nodes, replicas, atomic, compute, step = np.array(points).T
    fitted = fit_perf_params(nodes, replicas, atomic, compute, step)
    error = np.abs(step_seconds(fitted, nodes, replicas, atomic, 0) / step - 1)
    assert np.median(error) < 0.08 and np.quantile(error, 0.9) < 0.2
    args = (nodes, replicas, atomic, np.log(compute), np.log(step))
    value, grad = fit_loss(np.array(fitted), *args)
    assert value < fit_loss(np.array(INITIAL), *args)[0]
    free = np.array(fitted) > 1e-6
    free[6] &= fitted.gamma < 10 - 1e-6
    assert np.abs(grad[free] * np.array(fitted)[free]).max() < 1e-3


def test_the_fit_gradient_is_exact():
    rng = np.random.default_rng(0)
    nodes = np.array([1, 1, 2, 3, 1.0])
    replicas = np.array([1, 3, 4, 9, 4.0])
    atomic = np.array([32, 64, 32, 128, 256.0])
    log_c, log_t = np.log(rng.uniform(0.02, 0.2, 5)), np.log(rng.uniform(0.2, 0.6, 5))
    theta = np.array([0.05, 0.001, 0.08, 0.01, 0.04, 0.006, 1.7])
    args = (nodes, replicas, atomic, log_c, log_t)
    err = check_grad(lambda t: fit_loss(t, *args)[0], lambda t: fit_loss(t, *args)[1], theta, epsilon=1e-7)
    assert err < 1e-4 * np.linalg.norm(fit_loss(theta, *args)[1])


def test_pinned_parameters_keep_their_published_values():
    fitted = fit_perf_params([1, 1], [1, 1], [64, 64], [0.05, 0.05], [0.051, 0.051])
    assert fitted.alpha_c == pytest.approx(0.025)
    assert fitted.alpha_r == fitted.beta_r == 1e-8
    assert fitted.alpha_n == pytest.approx(1.1e-8) and fitted.beta_n == pytest.approx(1.1e-8)


def test_the_fixed_batch_rule_on_hand_cases(cifar):
    args = (cifar.init_batch, cifar.max_local, cifar.max_batch)
    assert tuple(map(int, batch_config(2048, 6, *args))) == (342, 0)   # 341.3 per GPU, no accumulation
    assert tuple(map(int, batch_config(2048, 1, *args))) == (1024, 1)  # over max_local: two micro-steps
    assert tuple(map(int, batch_config(128, 1, *args))) == (128, 0)    # M0 on one GPU: no accumulation
    assert tuple(map(int, batch_config(200, 1, *args))) == (100, 1)    # beyond M0 on one GPU: at least two
    assert tuple(map(int, batch_config(4096, 3, *args))) == (682, 1)   # capped so 3 x 2 x m <= 4096


@given(nodes=st.integers(1, 4), per_node=st.integers(1, 4), epoch=st.integers(0, 99))
def test_optimize_picks_the_best_candidate_batch(nodes, per_node, epoch):
    if not SHARED_DATA.is_dir():
        pytest.skip("published reference data not found")
    cifar = _application("cifar10")
    p = PerfParams(0.02, 0.0007, 0.1, 0.005, 0.03, 0.004, 2.0)
    replicas = nodes * per_node
    sqr, var = cifar.grad_stats(cifar.init_batch, epoch)
    good, m, s = optimize(p, sqr, var, cifar.init_batch, nodes, replicas, cifar.max_batch, cifar.min_local,
                          cifar.max_local)
    assert cifar.min_local <= m[0] <= cifar.max_local
    best = 0.0
    for batch in np.geomspace(max(cifar.init_batch, cifar.min_local * replicas), cifar.max_batch, 50):
        mm, ss = batch_config(batch, replicas, cifar.init_batch, cifar.max_local, 10 ** 9)
        if cifar.min_local <= mm <= cifar.max_local:
            realised = replicas * mm * (ss + 1)
            best = max(best, float(gain(realised / cifar.init_batch, sqr, var) / step_seconds(p, nodes, replicas,
                                                                                               mm, ss)))
    assert good[0] == pytest.approx(best, rel=1e-12)


def test_a_malformed_measurement_names_file_line_and_column(tmp_path, traces):
    app = tmp_path / "toy"
    app.mkdir()
    for name in ("placements.csv", "validation-128.csv", "validation-256.csv"):
        (app / name).write_text((traces / "cifar10" / name).read_text())
    lines = (app / "placements.csv").read_text().splitlines()
    lines[3] = lines[3].replace(",", ",x", 1)
    (app / "placements.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ApplicationError, match=r"placements.csv:4: column 'local_bsz': not a number"):
        read_application(app)
    with pytest.raises(ApplicationError, match="no validation"):
        read_application(traces)
