"""Shockwave's market program: hand-sized instances, properties on random markets, its
reordering MILP and agreement across backends (every expected value worked out in the comments)."""

import functools
import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from helpers import lp_backends
from hypothesis import example, given, settings
from hypothesis import strategies as st

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

BACKENDS = lp_backends()
EPS = LOG_FLOOR  # 1e-6 added to normalized progress inside the log
PUBLISHED_BASES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def runs(*pieces):
    """``runs((32, 3), (256, 2))`` -> [32, 32, 32, 256, 256]: a schedule written as runs."""
    return [b for b, n in pieces for _ in range(n)]


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
@example(Market(1, 3, 120.0, [1, 1, 1], [0, 0, 0], [16, 8, 8], [20.0] * 3, [0.0, 900.0, 900.0], 10.0,
                log_bases=PUBLISHED_BASES))  # HiGHS stops 2.9e-5 from the optimum with u_j under secants
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
    scale = max(1.0, abs(res.objective))
    value = objective_at(m, x, np.clip(p, 0, None))
    if m.log_bases is None:  # the reported objective is the true (log, not cut) objective at the point
        assert res.objective == pytest.approx(value, abs=1e-6 * scale)
    else:  # a MILP's c.x: within the MIP gap a hypograph u_j may sit below its secants
        assert res.objective <= value + 1e-6 * scale
    # ... and the point is within the reported gap of the brute-force optimum
    best = brute_force_optimum(m)
    assert value <= best + 1e-6 * scale
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
    assert_rounding_beats_the_floors(m, model, relaxed)


def assert_rounding_beats_the_floors(m: Market, model, relaxed) -> None:
    """The rounded relaxation is worth at least the schedule of the whole rounds the relaxation
    gave each job, when they fit one after another (one job per round): the top-up only moves
    rounds (evictions included) where the objective rises, and the ceilings taken for the
    makespan are dropped when the floors alone are worth more."""
    whole = np.floor(relaxed.value("x").reshape(m.num_jobs, m.rounds).sum(axis=1) + 1e-6).astype(int)
    if (m.scale_factors == m.gpus).all() and whole.sum() <= m.rounds:
        floor = np.zeros((m.num_jobs, m.rounds), dtype=np.int64)
        ends = np.cumsum(whole)
        for j, (lo, hi) in enumerate(zip(ends - whole, ends)):
            floor[j, lo:hi] = 1
        canon = model.canonical()
        rounded = point(model, m, round_schedule(m, relaxed.value("x")))
        tol = 1e-9 * max(1.0, abs(relaxed.objective))
        assert canon.objective_value(rounded) >= canon.objective_value(point(model, m, floor)) - tol


def test_ceilings_for_the_makespan_do_not_crowd_out_a_heavier_jobs_floors():
    # 1 GPU, 3 rounds: the relaxation gives job 0 (priority 50, 12 epochs of 20 s) two whole
    # rounds and jobs 1-3 (1 epoch each) fractions; each of those would finish in its ceiling
    # of one round, and packed first the three ceilings left job 0 one round after the top-up
    # (-4.039 against -3.454 for job 0's two floors; a dev-profile draw)
    m = Market(1, 3, 120.0, [1] * 4, [0] * 4, [12, 1, 1, 1], [20.0] * 4, [0.0, 100.0, 100.0, 100.0], 0.0,
               priorities=[50.0, 1.0, 1.0, 1.0])
    model = build(m)
    relaxed = solve(model.canonical().relaxed(), "highs")
    assert np.floor(relaxed.value("x").reshape(4, 3).sum(axis=1)[0] + 1e-6) == 2
    assert_rounding_beats_the_floors(m, model, relaxed)
    assert round_schedule(m, relaxed.value("x")).sum(axis=1)[0] == 2


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
    res = solve(build_reorder(w, G, T, counts, pri), "highs", SolveOptions(mip_gap=1e-9))
    assert reorder_objective(y, pri) >= res.objective - 1e-6 * max(1.0, res.objective)
    if G == 1:  # one GPU per round: the greedy fill is optimal (more GPUs: it can run out of distinct rounds)
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
