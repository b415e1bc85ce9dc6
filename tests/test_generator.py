import math

import numpy as np
import pytest

from simulator import example_table, read_gavel_json
from simulator.generator import generate_trace
from simulator.jobs import HIGH_PRIORITY_WEIGHT, SCALE_PROBABILITIES, reference_rates
from simulator.readers.traces import read_trace, write_trace

N = 20_000


@pytest.fixture(scope="module")
def table():
    return example_table()


def _fields(trace):
    return (trace.job_types, trace.commands, trace.working_dirs, trace.num_steps_args, trace.needs_data_dir,
            trace.total_steps, trace.scale_factors, trace.weights, trace.slo, trace.arrival_times)


def _same(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(_fields(a), _fields(b)))


def test_deterministic_per_seed(table):
    kw = {"lam": 600.0, "multi_gpu": True, "priority_fraction": 0.2, "slo_factors": (1.2, 2.0, 10.0)}
    a = generate_trace(table, 200, seed=3, **kw)
    b = generate_trace(table, 200, seed=3, **kw)
    c = generate_trace(table, 200, seed=4, **kw)
    assert _same(a, b)
    assert not _same(a, c)
    assert len(a) == 200


def test_single_gpu_default_is_static_and_plain(table):
    trace = generate_trace(table, 500, seed=1)
    assert (trace.scale_factors == 1).all()
    assert (trace.arrival_times == 0).all()
    assert (trace.weights == 1).all()
    assert np.isinf(trace.slo).all()
    assert (trace.needs_data_dir == 0).all()
    assert (trace.total_steps >= 1).all()
    static = generate_trace(table, 50, seed=1, first_arrival=123.5)
    assert (static.arrival_times == 123.5).all()


def test_job_types_exist_at_their_scale_and_models_uniform(table):
    trace = generate_trace(table, N, seed=2, multi_gpu=True)
    for model, s in zip(trace.job_types, trace.scale_factors):
        table.index_of(model, int(s))
    single = generate_trace(table, N, seed=5)
    models, counts = np.unique(single.job_types, return_counts=True)
    assert set(models) == {m for m, s in table.keys if s == 1}
    assert np.allclose(counts / N, 1 / len(models), atol=0.02)


def test_scale_factor_frequencies(table):
    # the example table has scales 1, 2, 4 only: probabilities renormalized over those
    scales = [s for s in SCALE_PROBABILITIES if s in {k[1] for k in table.keys}]
    assert scales == [1, 2, 4]
    total = sum(SCALE_PROBABILITIES[s] for s in scales)
    trace = generate_trace(table, N, seed=6, multi_gpu=True)
    for s in scales:
        assert abs(np.mean(trace.scale_factors == s) - SCALE_PROBABILITIES[s] / total) < 0.015
    assert set(np.unique(trace.scale_factors)) == set(scales)


def test_duration_split_and_steps(table):
    trace = generate_trace(table, N, seed=7, multi_gpu=True, slo_factors=(1.0,))
    duration = trace.slo  # factor 1: SLO == duration
    assert duration.min() >= 60 * 10**1.5 and duration.max() <= 60 * 10**4
    short = duration < 60 * 10**3
    assert abs(short.mean() - 0.8) < 0.015
    keys = np.array([table.index_of(m, int(s)) for m, s in zip(trace.job_types, trace.scale_factors)])
    assert np.array_equal(trace.total_steps, np.ceil(duration * reference_rates(table, keys)).astype(np.int64))
    # log10(minutes) is uniform within each branch
    log_short = np.log10(duration[short] / 60)
    assert abs(log_short.mean() - 2.25) < 0.02


def test_poisson_arrivals(table):
    lam = 900.0
    trace = generate_trace(table, N, seed=8, lam=lam, first_arrival=50.0)
    t = trace.arrival_times
    assert t[0] == 50.0
    gaps = np.diff(t)
    assert (gaps >= 0).all()
    assert abs(gaps.mean() / lam - 1) < 0.03
    assert abs(gaps.std() / lam - 1) < 0.05  # exponential: std == mean


def test_priority_fraction(table):
    trace = generate_trace(table, N, seed=9, priority_fraction=0.2)
    assert set(np.unique(trace.weights)) == {1.0, HIGH_PRIORITY_WEIGHT}
    assert abs(np.mean(trace.weights == HIGH_PRIORITY_WEIGHT) - 0.2) < 0.015
    assert (generate_trace(table, 100, seed=9, priority_fraction=1.0).weights == HIGH_PRIORITY_WEIGHT).all()


def test_slo_factors(table):
    factors = (1.2, 2.0, 10.0)
    a = generate_trace(table, N, seed=10, slo_factors=factors)
    b = generate_trace(table, N, seed=10, slo_factors=(1.0,))
    # the SLO draw comes after the durations, so the durations match across the two
    ratio = a.slo / b.slo
    assert np.allclose(np.sort(np.unique(np.round(ratio, 9))), factors)
    for f in factors:
        assert abs(np.mean(np.isclose(ratio, f)) - 1 / 3) < 0.02
    assert (a.slo >= 1.2 * 60 * 10**1.5).all() and (a.slo <= 10.0 * 60 * 10**4).all()


def test_round_trip(table, tmp_path):
    trace = generate_trace(table, 300, seed=11, lam=300.0, multi_gpu=True, priority_fraction=0.3,
                           slo_factors=(1.2, 2.0, 10.0))
    path = tmp_path / "gen.trace"
    write_trace(trace, path)
    back = read_trace(path)
    assert back.job_types == trace.job_types
    assert back.commands == trace.commands
    assert back.working_dirs == trace.working_dirs
    assert back.num_steps_args == trace.num_steps_args
    for name in ("needs_data_dir", "total_steps", "scale_factors", "weights"):
        assert np.array_equal(getattr(back, name), getattr(trace, name)), name
    assert np.allclose(back.slo, trace.slo, rtol=0, atol=1e-6)
    assert np.allclose(back.arrival_times, trace.arrival_times, rtol=0, atol=1e-6)
    no_slo = generate_trace(table, 10, seed=11)
    write_trace(no_slo, path)
    assert np.isinf(read_trace(path).slo).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"num_jobs": 0}, "number of jobs"),
    ({"num_jobs": 2.5}, "number of jobs"),
    ({"lam": -1.0}, "lam"),
    ({"lam": math.inf}, "lam"),
    ({"priority_fraction": -0.1}, "priority_fraction"),
    ({"priority_fraction": 1.5}, "priority_fraction"),
    ({"slo_factors": ()}, "slo_factors"),
    ({"slo_factors": (1.2, 0.0)}, "slo_factors"),
    ({"slo_factors": (-2.0,)}, "slo_factors"),
    ({"first_arrival": -5.0}, "first_arrival"),
])
def test_argument_errors(table, kwargs, match):
    kwargs = {"num_jobs": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate_trace(table, kwargs.pop("num_jobs"), **kwargs)


def test_published_table(shared_data, tmp_path):
    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    trace = generate_trace(table, N, seed=12, lam=1800.0, multi_gpu=True, priority_fraction=0.2)
    for model, s in zip(trace.job_types, trace.scale_factors):
        table.index_of(model, int(s))
    for s, p in SCALE_PROBABILITIES.items():
        assert abs(np.mean(trace.scale_factors == s) - p) < 0.015, s
    # distributed-capable types only for s > 1
    assert len({m for m, s in zip(trace.job_types, trace.scale_factors) if s > 1}) < len(table.models)
    assert (trace.total_steps >= 1).all()
    write_trace(trace, tmp_path / "pub.trace")
    assert len(read_trace(tmp_path / "pub.trace")) == N
