"""Warm re-solves: model keys, deltas, the live HiGHS session, policies and the simulator."""

import pickle

import numpy as np
import pytest
from helpers import problems, tiny
from hypothesis import given
from hypothesis import strategies as st

from allocators import make_policy
from allocators.gavel.max_min_fairness import MaxMinFairnessPerf
from formulations import AllocationProblem, max_min_fairness, max_sum_throughput, min_total_duration
from optim import (
    Capability,
    CapabilityError,
    Model,
    ModelError,
    Session,
    Status,
    available_backends,
    lp_dual_bound,
    parse_spec,
    solve,
)
from optim.delta import model_delta
from simulator.cluster import parse_cluster
from simulator.engine import Engine, SimulationConfig
from simulator.example_table import example_table
from simulator.generator import generate_trace
from simulator.round_view import build_round_view

#: (formulation, variant) programs whose warm re-solves are checked against cold ones
PROGRAMS = [
    (max_min_fairness, "perf"), (max_min_fairness, "agnostic"), (max_sum_throughput, "perf"),
    (max_sum_throughput, "normalized_by_cost_perf_SLOs"), (min_total_duration, "perf"),
]


def subset(pool: AllocationProblem, rows: np.ndarray, speed: float = 1.0, progress: float = 0.0) -> AllocationProblem:
    """Jobs ``rows`` of ``pool``, throughputs times ``speed``, a ``progress`` share of their work done."""
    steps = 1000.0 * (1.0 + rows) * (1.0 - progress)
    return AllocationProblem(
        worker_types=pool.worker_types, capacities=pool.capacities, job_ids=pool.job_ids[rows],
        job_types=tuple(pool.job_types[i] for i in rows), scale_factors=pool.scale_factors[rows],
        weights=pool.weights[rows], throughputs=pool.throughputs[rows] * speed, remaining_steps=steps,
        slo_remaining=np.where(rows % 3 == 0, 1e6, np.inf),
    )


def test_keys_are_checked():
    m = Model()
    with pytest.raises(ModelError, match="2 keys for 3 entries"):
        m.add_variables("x", (3, 2), keys=[1, 2])
    with pytest.raises(ModelError, match="not unique"):
        m.add_variables("x", (3, 2), keys=[1, 2, 1])
    x = m.add_variables("x", (3, 2), keys=[5, 6, 7])
    with pytest.raises(ModelError, match="row block 'r': keys are not unique"):
        m.add_rows("r", {x: np.ones((2, 6))}, hi=1.0, keys=["a", "a"])


def test_delta_of_an_arrival_and_a_departure():
    pool = tiny(np.arange(1.0, 15.0).reshape(7, 2), caps=(2, 3))
    old = max_min_fairness.build(subset(pool, np.arange(6)), "perf").canonical()
    new = max_min_fairness.build(subset(pool, np.arange(1, 7)), "perf").canonical()
    delta = model_delta(old, new)
    # job 0's two cells, time budget and fairness row go; job 6's come; nothing else changes
    assert (delta.drop_cols.tolist(), delta.add_cols.tolist()) == ([0, 1], [10, 11])
    assert (delta.drop_rows.size, delta.add_rows.size, delta.coef_values.size) == (2, 2, 0)
    assert delta.num_changes == 8
    assert (delta.cost.size, delta.bounds.size, delta.sides.size) == (0, 0, 0)
    assert model_delta(new, new).is_empty


def test_delta_sees_changed_coefficients_sides_and_bounds():
    pool = tiny([[1.0, 2.0], [3.0, 0.0], [2.0, 2.0]], caps=(2, 3))
    old = max_sum_throughput.build(subset(pool, np.arange(3)), "normalized_by_cost_perf_SLOs").canonical()
    faster = subset(pool, np.arange(3), speed=2.0, progress=0.5)
    new = max_sum_throughput.build(faster, "normalized_by_cost_perf_SLOs").canonical()
    delta = model_delta(old, new)
    # job 0 has the only SLO row: its two rates double, and so do the 5 runnable cells' costs
    assert delta.num_changes == delta.coef_values.size == 2
    assert delta.coef_values.tolist() == [2.0, 4.0]
    assert delta.cost.size == 5 and delta.sides.size == 1 and delta.bounds.size == 0


#: backends with live models (Gurobi's pip license holds these small models)
LIVE = [b.spec for b in available_backends() if b.spec in ("highs", "gurobi")]


@pytest.mark.parametrize("backend", LIVE)
@given(pool=problems(max_jobs=14), program=st.sampled_from(PROGRAMS),
       steps=st.lists(st.tuples(st.lists(st.booleans(), min_size=14, max_size=14),
                                st.sampled_from([1.0, 1.0, 1.5]), st.floats(0.0, 0.5)), min_size=2, max_size=5))
def test_warm_resolves_match_cold_solves(backend, pool, program, steps):
    """Random arrivals, departures and rate changes: every warm objective is the cold one."""
    formulation, variant = program
    session = Session(backend, max_change=np.inf)
    for k, (active, speed, progress) in enumerate(steps):
        rows = np.flatnonzero(np.array(active[: pool.num_jobs]))
        if rows.size == 0:
            rows = np.array([k % pool.num_jobs])
        problem = subset(pool, rows, speed, progress)
        warm = session.solve(formulation.build(problem, variant), check=False)
        cold = solve(formulation.build(problem, variant), backend, check=False)
        assert session.warm == (k > 0)
        assert warm.status == cold.status
        if cold.status is Status.OPTIMAL:
            assert warm.objective == pytest.approx(cold.objective, rel=1e-6, abs=1e-9)
            assert formulation.build(problem, variant).canonical().max_violation(warm.x) < 1e-6


def repeated(pool: AllocationProblem, times: int) -> AllocationProblem:
    """``pool``'s jobs ``times`` over (new ids): jobs of equal structure, as in a trace."""
    m = pool.num_jobs
    return AllocationProblem(
        worker_types=pool.worker_types, capacities=pool.capacities, job_ids=np.arange(m * times),
        job_types=pool.job_types * times, scale_factors=np.tile(pool.scale_factors, times),
        weights=np.tile(pool.weights, times), throughputs=np.tile(pool.throughputs, (times, 1)),
    )


@given(pool=problems(max_jobs=4), variant=st.sampled_from(["perf", "agnostic"]),
       steps=st.lists(st.lists(st.booleans(), min_size=12, max_size=12), min_size=2, max_size=6))
def test_arrivals_placed_in_pooled_slots_match_cold_solves(pool, variant, steps):
    """Jobs of repeated structure come and go: arrivals reuse spare and departed slots, and
    every warm objective is the cold one."""
    pool = repeated(pool, 3)
    session = Session("highs", max_change=np.inf)
    for k, active in enumerate(steps):
        rows = np.flatnonzero(np.array(active[: pool.num_jobs]))
        if rows.size == 0:
            rows = np.array([k % pool.num_jobs])
        problem = subset(pool, rows)
        warm = session.solve(max_min_fairness.build(problem, variant), check=False)
        assert session.warm == (k > 0)  # every later step updates the held model
        cold = solve(max_min_fairness.build(problem, variant), "highs", check=False)
        assert warm.status == cold.status
        if cold.status is Status.OPTIMAL:
            assert warm.objective == pytest.approx(cold.objective, rel=1e-6, abs=1e-9)
            assert max_min_fairness.build(problem, variant).canonical().max_violation(warm.x) < 1e-6


def test_an_arrival_of_a_known_structure_adds_no_rows_or_columns():
    table = example_table()
    from simulator import build_problem, sample_jobs

    m = 400
    pool = build_problem(parse_cluster("v100=64,p100=64,k80=64"), sample_jobs(table, m + 40, 0), table)
    kinds, count = np.unique(pool.throughputs[:m], axis=0, return_counts=True)
    arrival = m + np.flatnonzero((pool.throughputs[m:] == kinds[np.argmax(count)]).all(axis=1))[0]
    session = Session("highs")
    session.solve(max_min_fairness.build(subset(pool, np.arange(m)), "perf"))
    held = session._live._cols.size, session._live._rows.size
    after = subset(pool, np.r_[np.arange(m), arrival])
    result = session.solve(max_min_fairness.build(after, "perf"))
    assert session.warm and (session._live._cols.size, session._live._rows.size) == held
    cold = solve(max_min_fairness.build(after, "perf"))
    assert result.objective == pytest.approx(cold.objective, rel=1e-9)


def keyed_lp(rows: list[int], cols: list[int], sides: dict[int, tuple[float, float]], scale: float = 1.0) -> Model:
    """max sum_c (1 + c) x_c over keyed columns ``cols`` (0 <= x_c <= 2 + c) and keyed rows
    ``rows``: row r is ``lo_r <= sum_c (1 + (r + c) % 3) * scale x_c <= hi_r``."""
    m = Model("keyed")
    x = m.add_variables("x", (len(cols), 1), ub=np.array(cols, dtype=float)[:, None] + 2.0, keys=cols)
    A = np.array([[1.0 + (r + c) % 3 for c in cols] for r in rows]) * scale
    lo = np.array([sides.get(r, (-np.inf, 10.0))[0] for r in rows])
    hi = np.array([sides.get(r, (-np.inf, 10.0))[1] for r in rows])
    m.add_rows("r", {x: A}, lo=lo, hi=hi, keys=rows)
    m.set_objective({x: np.array(cols, dtype=float)[:, None] + 1.0}, sense="max")
    return m


@pytest.mark.parametrize("backend", LIVE)
def test_live_models_follow_sides_that_become_ranged_equal_or_free(backend):
    """Every kind of change in one session: rows and columns come and go, sides turn
    one-sided -> ranged -> equal -> free, coefficients scale; each re-solve matches a cold one."""
    steps = [
        ([0, 1, 2], [0, 1, 2, 3], {}, 1.0),
        ([0, 1, 2], [0, 1, 2, 3], {1: (2.0, 6.0)}, 1.0),
        ([1, 2, 3], [1, 2, 3, 4], {1: (3.0, 3.0), 3: (1.0, 9.0)}, 1.0),
        ([1, 2, 3], [1, 2, 3, 4], {1: (-np.inf, np.inf)}, 1.5),
        ([0, 2, 3], [0, 2, 4], {0: (4.0, 4.0)}, 1.5),
    ]
    session = Session(backend, max_change=np.inf)
    for k, step in enumerate(steps):
        warm = session.solve(keyed_lp(*step))
        cold = solve(keyed_lp(*step), "highs")
        assert session.warm == (k > 0)
        assert warm.objective == pytest.approx(cold.objective, rel=1e-9)
        canon = keyed_lp(*step).canonical()
        assert canon.max_violation(warm.x) < 1e-7
        assert lp_dual_bound(canon, warm.row_duals) == pytest.approx(cold.objective, rel=1e-9)  # duals certify it


def test_a_large_change_is_solved_cold_and_noted():
    pool = tiny(np.arange(1.0, 21.0).reshape(10, 2), caps=(2, 3))
    session = Session("highs", max_change=0.1)
    session.solve(max_min_fairness.build(subset(pool, np.arange(5)), "perf"))
    result = session.solve(max_min_fairness.build(subset(pool, np.arange(5, 10)), "perf"))
    assert not session.warm
    assert any("solved cold" in note for note in result.notes)
    cold = solve(max_min_fairness.build(subset(pool, np.arange(5, 10)), "perf"))
    assert result.objective == pytest.approx(cold.objective, rel=1e-9)


def test_a_milp_is_solved_cold_and_noted():
    m = Model()
    x = m.add_variables("x", 2, ub=3.0, vtype="integer")
    m.add_rows("r", {x: [[1.0, 2.0]]}, hi=4.5)
    m.set_objective({x: [1.0, 1.0]})
    session = Session("highs")
    for _ in range(2):
        result = session.solve(m)
        assert not session.warm and result.objective == pytest.approx(3.0)
        assert "warm re-solves are for LPs only: solved cold" in result.notes


def test_departures_keep_inert_rows_until_a_rebuild():
    pool = tiny(np.arange(1.0, 41.0).reshape(20, 2), caps=(4, 6))
    session = Session("highs", max_change=0.2)
    session.solve(max_min_fairness.build(subset(pool, np.arange(20)), "perf"))
    warm = []
    for first in range(1, 6):
        problem = subset(pool, np.arange(first, 20))
        result = session.solve(max_min_fairness.build(problem, "perf"))
        warm.append(session.warm)
        assert result.objective == pytest.approx(solve(max_min_fairness.build(problem, "perf")).objective, rel=1e-7)
    # each departure leaves 2 columns and 2 rows inert: a cold rebuild once they pass 20%
    assert warm[:3] == [True, True, True] and not all(warm)


def test_only_backends_with_incremental_resolves_open_sessions():
    assert Capability.INCREMENTAL in parse_spec("gurobi").capabilities()
    for backend in map(parse_spec, ("highs", "clarabel", "gurobi", "pyomo:highs")):
        if Capability.INCREMENTAL in backend.capabilities():
            Session(backend)
        else:
            with pytest.raises(CapabilityError, match="no incremental re-solve"):
                Session(backend)


def test_a_pickled_session_starts_cold():
    pool = tiny(np.arange(1.0, 13.0).reshape(6, 2), caps=(2, 3))
    session = Session("highs")
    session.solve(max_min_fairness.build(subset(pool, np.arange(5)), "perf"))
    copy = pickle.loads(pickle.dumps(session))
    copy.solve(max_min_fairness.build(subset(pool, np.arange(6)), "perf"))
    assert not copy.warm
    copy.solve(max_min_fairness.build(subset(pool, np.arange(1, 6)), "perf"))
    assert copy.warm


def test_partitioned_policies_solve_their_parts_cold_without_fallback_notes():
    pool = tiny(np.arange(1.0, 41.0).reshape(20, 2), caps=(4, 6))
    policy = make_policy("max_min_fairness_perf@pop2", "highs")
    for first in range(2):
        allocation = policy.allocate(subset(pool, np.arange(first, 20)))
        assert not any("solved cold" in note for note in allocation.notes)


class RecordingPolicy(MaxMinFairnessPerf):
    """max_min_fairness_perf that records each round's problem, objective and whether it was warm;
    it solves the full program (merged ones, formulations.classes, are small and solved cold)."""

    merge_on = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds = []

    def allocate(self, problem):
        allocation = super().allocate(problem)
        self.rounds.append((problem, allocation.objective, self._sessions["max_min_fairness[perf]"].warm))
        return allocation


def test_simulator_rounds_solved_warm_match_cold_solves():
    table = example_table()
    workload = build_round_view(generate_trace(table, 30, seed=3, lam=300.0), parse_cluster("v100=3,p100=3,k80=3"),
                              table)
    policy = RecordingPolicy("highs")
    result = Engine(workload, policy, SimulationConfig()).run()
    assert result.summary["jobs_completed"] == 30
    assert sum(warm for *_, warm in policy.rounds) >= len(policy.rounds) // 3
    for problem, objective, _ in policy.rounds:
        assert objective == pytest.approx(solve(max_min_fairness.build(problem, "perf")).objective, rel=1e-7)
