import dataclasses

import numpy as np
import pytest
from helpers import problems
from hypothesis import given, settings
from hypothesis import strategies as st

from allocators.base import ProgramClass
from allocators.gavel.water_filling import (
    MaxMinFairnessWaterFillingAgnostic,
    MaxMinFairnessWaterFillingPacked,
    MaxMinFairnessWaterFillingPerf,
)
from formulations import (
    AllocationProblem,
    JobPairs,
    allocation_violations,
    max_min_fairness,
)
from formulations import water_filling as wf
from optim import (
    CapabilityError,
    Model,
    Result,
    SolveOptions,
    SolverFailedError,
    Status,
    available_backends,
    solve,
)
from simulator import build_problem, parse_cluster, read_gavel_json, sample_jobs


def tiny(T, caps=(1, 1), weights=None, scales=None, ages=None) -> AllocationProblem:
    T = np.asarray(T, dtype=float)
    m = T.shape[0]
    return AllocationProblem(
        worker_types=tuple(f"t{j}" for j in range(T.shape[1])),
        capacities=caps,
        job_ids=np.arange(m),
        job_types=tuple(f"m{i}" for i in range(m)),
        scale_factors=scales if scales is not None else np.ones(m),
        weights=weights if weights is not None else np.ones(m),
        throughputs=T,
        time_since_arrival=ages,
    )


def lex_geq(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """Sorted ``a`` >= sorted ``b`` lexicographically, entries within ``tol`` counting as equal."""
    for u, v in zip(np.sort(a), np.sort(b)):
        if abs(u - v) > tol:
            return u > v
    return True


def summary(alloc) -> str:
    return next(note for note in alloc.notes if note.startswith("water filling"))


def plain_max_min(problem: AllocationProblem, variant: str):
    model = max_min_fairness.build(problem, variant)
    return max_min_fairness.decode(problem, model, solve(model), variant)


# job 0 runs only on the small type t0 and weighs 5, so k_0 = 1 / (5 * 1/2.5) = 1/2 caps its
# share at 1/2 (all of t0): frozen first at 0.5; jobs 1 and 2 (k = 1) split t1 at 0.75 each
SMALL_TYPE = tiny([[1, 0], [1, 1], [1, 1]], caps=(1, 1.5), weights=[5, 1, 1])
# jobs 0, 1 only on t0 (k = 3), job 2 anywhere (k = 1): job 2's time budget caps it at 1;
# then jobs 0 and 1 split t0 at 3 * 1/2 = 1.5 each
BUDGET_CAPPED = tiny([[1, 0], [1, 0], [1, 1]], caps=(1, 2))


@pytest.mark.parametrize(
    "problem, variant, expected",
    [
        (SMALL_TYPE, "perf", [0.5, 0.75, 0.75]),
        (SMALL_TYPE, "agnostic", [0.5, 0.75, 0.75]),
        (BUDGET_CAPPED, "perf", [1.5, 1.5, 1.0]),
        # job 1 three times faster on t0 (prop 1.8, k 5/9): job 0 still needs all of t0 for 1/2;
        # jobs 1 and 2 split t1 as 5/9 a = b, a + b = 3/2: b = 15/28 (agnostic: 3/4 as above)
        (tiny([[1, 0], [3, 1], [1, 1]], caps=(1, 1.5), weights=[5, 1, 1]), "perf", [0.5, 15 / 28, 15 / 28]),
    ],
)
def test_hand_computed_lexicographic_levels(problem, variant, expected):
    alloc = wf.solve_water_filling(problem, variant)
    np.testing.assert_allclose(wf.normalized_shares(alloc, variant), expected, rtol=1e-7)
    assert alloc.objective == pytest.approx(min(expected), rel=1e-7)
    assert allocation_violations(alloc) == []
    levels = f"{min(expected):.6g}, {max(expected):.6g}"
    assert summary(alloc) == f"water filling: 2 LP and 2 MILP solves; 2 distinct levels: {levels}"


def test_plain_max_min_leaves_the_upper_level_unspecified():
    """The single LP only guarantees the first level; water filling raises the rest."""
    lp = plain_max_min(SMALL_TYPE, "perf")
    assert lp.objective == pytest.approx(0.5)
    shares = wf.normalized_shares(wf.solve_water_filling(SMALL_TYPE, "perf"), "perf")
    assert lex_geq(shares, wf.normalized_shares(lp, "perf"), 1e-7)


def test_single_job_needs_no_milp():
    alloc = wf.solve_water_filling(tiny([[1.0, 2.0]], caps=(1, 1)), "perf")
    assert alloc.x == pytest.approx(np.array([[0.0, 1.0]]))
    assert "1 LP and 0 MILP solves" in summary(alloc)


@given(problems(max_jobs=8))
@settings(max_examples=30)
def test_first_level_is_the_max_min_optimum_and_the_rest_is_lexicographically_better(problem):
    for variant in ("perf", "agnostic"):
        alloc = wf.solve_water_filling(problem, variant)
        assert allocation_violations(alloc, tol=1e-7) == []
        lp = plain_max_min(problem, variant)
        assert alloc.objective == pytest.approx(lp.objective, rel=1e-6, abs=1e-9)
        shares = wf.normalized_shares(alloc, variant)
        assert shares.min() >= alloc.objective * (1 - 1e-6)
        assert lex_geq(shares, wf.normalized_shares(lp, variant), 1e-6 * max(1.0, shares.max()))


def progressive_filling(problem: AllocationProblem, variant: str) -> np.ndarray:
    """The levels by the MILP's criterion checked one job at a time: an active job is frozen
    unless an LP maximizing its share alone reaches ``L (1 + DELTA_REL)`` while every other
    job keeps ``1 - SLACK`` of its level (the level LP is the module's)."""
    combos, share = wf.share_map(problem, variant)
    levels = np.full(problem.num_jobs, np.nan)
    active = np.arange(problem.num_jobs)
    while active.size:
        level = solve(wf.level_lp(combos, share, active, levels),
                      options=wf.solve_options()).objective
        best = np.empty(active.size)
        for k, i in enumerate(active):
            model = Model("oracle")
            x = combos.add_allocation(model)
            model.add_rows("keep", {x: share[active]}, lo=(1 - wf.SLACK) * level)
            frozen = np.flatnonzero(np.isfinite(levels))
            if frozen.size:
                model.add_rows("frozen", {x: share[frozen]}, lo=(1 - wf.SLACK) * levels[frozen])
            model.set_objective({x: share[i].toarray().reshape(x.shape)}, sense="max")
            best[k] = solve(model, options=wf.solve_options()).objective
        stuck = best < level * (1 + wf.DELTA_REL)
        levels[active[stuck]] = level
        active = active[~stuck]
    return levels


@given(problems(max_jobs=6, max_types=3))
@settings(max_examples=20)
def test_levels_match_progressive_filling_one_job_at_a_time(problem):
    filling = wf.water_fill(problem, "perf")
    np.testing.assert_allclose(filling.levels, progressive_filling(problem, "perf"), rtol=1e-7)
    shares = wf.normalized_shares(filling.allocation, "perf")
    assert (shares >= filling.levels * (1 - 2 * wf.SLACK)).all()


@st.composite
def packed_problems(draw, max_jobs: int = 6):
    """Problems plus every equal-scale pair, co-located rates a fraction of the isolated ones."""
    problem = draw(problems(max_jobs=max_jobs))
    first, second = np.triu_indices(problem.num_jobs, 1)
    keep = problem.scale_factors[first] == problem.scale_factors[second]
    first, second = first[keep], second[keep]
    T, n = problem.throughputs, problem.num_types
    fractions = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=2 * first.size * n,
                                       max_size=2 * first.size * n))).reshape(first.size, n, 2)
    both = ((T[first] > 0) & (T[second] > 0))[:, :, None]
    rates = fractions * np.stack([T[first], T[second]], axis=2) * both
    return dataclasses.replace(problem, pairs=JobPairs(first, second, rates))


@given(packed_problems())
@settings(max_examples=20)
def test_packing_never_lowers_the_first_level(problem):
    packed = wf.solve_water_filling(problem, "packed")
    perf = wf.solve_water_filling(problem, "perf")
    assert allocation_violations(packed, tol=1e-7) == []
    assert packed.objective >= perf.objective * (1 - 1e-6)
    assert packed.objective == pytest.approx(plain_max_min(problem, "packed").objective, rel=1e-6)
    shares = wf.normalized_shares(packed, "packed")
    assert lex_geq(shares, wf.normalized_shares(plain_max_min(problem, "packed"), "packed"),
                   1e-6 * max(1.0, shares.max()))


# jobs 0 and 2 run only on t0, job 1 anywhere; entity e1 = {0, 1}, e2 = {2}; job 0 is e1's oldest
ENTITIES = tiny([[1, 0], [1, 1], [1, 0]], ages=[100.0, 50.0, 10.0])


def test_entity_fairness_splits_the_entity_weight_among_its_jobs():
    # w = (1/2, 1/2, 1): k = (4, 2, 2); job 1 capped at 2 by its budget on t1; jobs 0 and 2
    # split t0 with 4 x0 = 2 x2: x0 = 1/3, x2 = 2/3, level 4/3
    alloc = wf.solve_water_filling(ENTITIES, "perf", entities=["e1", "e1", "e2"])
    weights, tier = wf.job_weights(ENTITIES, ["e1", "e1", "e2"])
    assert weights == pytest.approx([0.5, 0.5, 1.0]) and not tier.any()
    np.testing.assert_allclose(wf.normalized_shares(alloc, "perf", weights), [4 / 3, 2, 4 / 3], rtol=1e-7)
    np.testing.assert_allclose(alloc.x, [[1 / 3, 0], [0, 1], [2 / 3, 0]], atol=1e-7)
    # entity weights 3:1 -> w = (1.5, 1.5, 1): job 1 (k = 2/3) is frozen first at 2/3 by its
    # budget, then jobs 0 and 2 split t0 in the ratio of their weights
    alloc = wf.solve_water_filling(ENTITIES, "perf", entities=["e1", "e1", "e2"], entity_weights={"e1": 3, "e2": 1})
    np.testing.assert_allclose(alloc.x[:, 0], [0.6, 0, 0.4], atol=1e-7)
    assert alloc.objective == pytest.approx(2 / 3)


def test_entity_fifo_serves_the_oldest_job_first():
    labels = ["e1", "e1", "e2"]
    alloc = wf.solve_water_filling(ENTITIES, "perf", entities=labels, entity_split="fifo",
                                   entity_weights={"e1": 1, "e2": 3})
    weights, tier = wf.job_weights(ENTITIES, labels, {"e1": 1, "e2": 3}, "fifo")
    assert weights == pytest.approx([1, 1, 3]) and tier.tolist() == [0, 1, 0]
    # tier 1: jobs 0 and 2 (k = 2 and 2/3) split t0 as 2 x0 = 2/3 x2 -> x0 = 1/4; tier 2: job 1 on t1
    np.testing.assert_allclose(alloc.x, [[0.25, 0], [0, 1], [0.75, 0]], atol=1e-7)
    np.testing.assert_allclose(wf.normalized_shares(alloc, "perf", weights), [0.5, 1, 0.5], rtol=1e-7)
    assert any("second tier" in note for note in alloc.notes)


def test_entity_fifo_second_tier_gets_only_the_leftover():
    # one type of 2 GPUs: the oldest jobs of e1 (job 1, older than job 0) and of e2 (job 2)
    # fill it within their time budgets; job 0, in the second tier, gets nothing
    problem = tiny([[1.0], [1.0], [1.0]], caps=(2,), ages=[5.0, 9.0, 1.0])
    alloc = wf.solve_water_filling(problem, "perf", entities=["e1", "e1", "e2"], entity_split="fifo")
    np.testing.assert_allclose(alloc.x[:, 0], [0, 1, 1], atol=1e-7)
    assert alloc.objective == pytest.approx(0.0, abs=1e-7)
    assert allocation_violations(alloc) == []


@pytest.mark.parametrize("ages, oldest", [(None, 0), ([7.0, 7.0, 1.0], 0), ([1.0, 2.0, 3.0], 1)])
def test_fifo_oldest_job_ties_break_by_job_id(ages, oldest):
    problem = tiny(np.ones((3, 1)), caps=(1,), ages=ages)
    _, tier = wf.job_weights(problem, ["a", "a", "b"], None, "fifo")
    assert tier.tolist() == [int(i != oldest) for i in range(2)] + [0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"entity_weights": {"a": 1.0}}, "need entities"),
        ({"entities": ["a", "b"]}, "one label per job"),
        ({"entities": ["a", "b", "c"], "entity_weights": {"a": 1, "b": 1}}, "entity 'c' has no weight"),
        ({"entities": ["a", "a", "a"], "entity_weights": {"a": 0.0}}, "must be finite and > 0"),
        ({"entities": ["a", "a", "a"], "entity_split": "lottery"}, "fairness, fifo"),
        ({"delta_rel": 0.0}, "delta_rel"),
    ],
)
def test_bad_entity_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        wf.solve_water_filling(ENTITIES, "perf", **kwargs)


def tampered(milp=None, lp=None):
    """A solve_fn that passes the MILP results through ``milp`` and the LP results through ``lp``."""
    def solve_fn(model: Model) -> Result:
        result = solve(model, options=wf.solve_options())
        tamper = milp if "improves" in model.blocks else lp
        return tamper(result) if tamper else result
    return solve_fn


def free_everyone(result: Result) -> Result:
    result.x[result.blocks["improves"].columns] = 1.0
    return result


def no_solution(result: Result) -> Result:
    return Result(Status.TIME_LIMIT, result.backend)


def no_duals(result: Result) -> Result:
    result.row_duals = None
    return result


@pytest.mark.parametrize("milp, message", [(free_everyone, "froze no job"), (no_solution, "without a solution")])
def test_milp_trouble_falls_back_to_the_dual_certified_bottlenecks(milp, message):
    alloc = wf.solve_water_filling(SMALL_TYPE, "perf", tampered(milp))
    np.testing.assert_allclose(wf.normalized_shares(alloc, "perf"), [0.5, 0.75, 0.75], rtol=1e-7)
    froze = "froze the 1 of 3 active jobs whose level row has a positive dual"
    assert any(message in note and froze in note for note in alloc.notes)
    assert allocation_violations(alloc) == []


def test_milp_trouble_without_duals_freezes_every_active_job():
    alloc = wf.solve_water_filling(SMALL_TYPE, "perf", tampered(free_everyone, no_duals))
    assert any("froze no job; froze all 3 active jobs" in note for note in alloc.notes)
    assert "1 LP and 1 MILP solves" in summary(alloc)
    assert alloc.objective == pytest.approx(0.5)
    assert allocation_violations(alloc) == []


def test_level_lp_failure():
    def infeasible(result: Result) -> Result:
        return Result(Status.INFEASIBLE, "fake", message="made up")
    with pytest.raises(SolverFailedError, match="level LP 1 .*infeasible"):
        wf.solve_water_filling(SMALL_TYPE, "perf", tampered(lp=infeasible))
    calls = []

    def second_fails(result: Result) -> Result:
        calls.append(result)
        return result if len(calls) == 1 else infeasible(result)
    alloc = wf.solve_water_filling(SMALL_TYPE, "perf", tampered(lp=second_fails))
    assert any("level LP 2" in note and "kept the previous allocation, 2 jobs unfrozen" in note
               for note in alloc.notes)
    assert alloc.objective == pytest.approx(0.5)
    assert allocation_violations(alloc) == []


POLICIES = [MaxMinFairnessWaterFillingAgnostic, MaxMinFairnessWaterFillingPerf, MaxMinFairnessWaterFillingPacked]


@pytest.mark.parametrize("cls, name", list(zip(POLICIES, ["max_min_fairness_water_filling",
                                                    "max_min_fairness_water_filling_perf",
                                                    "max_min_fairness_water_filling_packed"])))
def test_policies_run_on_highs(cls, name):
    policy = cls()
    assert policy.name == name and policy.program is ProgramClass.MILP
    alloc = policy.allocate(SMALL_TYPE)
    assert alloc.policy == name
    assert alloc.objective == pytest.approx(0.5)
    assert allocation_violations(alloc) == []


def test_policy_entities_by_job_id_and_split_validation():
    policy = MaxMinFairnessWaterFillingPerf(entities={0: "e1", 1: "e1", 2: "e2"}, entity_split="fifo",
                                            entity_weights={"e1": 1, "e2": 3})
    np.testing.assert_allclose(policy.allocate(ENTITIES).x, [[0.25, 0], [0, 1], [0.75, 0]], atol=1e-7)
    with pytest.raises(ValueError, match="no entity for job 2"):
        MaxMinFairnessWaterFillingPerf(entities={0: "e1", 1: "e1"}).allocate(ENTITIES)
    with pytest.raises(ValueError, match="use one of fairness, fifo"):
        MaxMinFairnessWaterFillingPerf(entity_split="oldest")


def test_policy_tightens_the_feasibility_tolerance_unless_given():
    assert MaxMinFairnessWaterFillingPerf().options.feasibility_tol == wf.FEASIBILITY_TOL
    assert MaxMinFairnessWaterFillingPerf(options=SolveOptions(feasibility_tol=1e-7)).options.feasibility_tol == 1e-7


def test_backend_without_milp_is_refused():
    if "cvxpy:CLARABEL" not in {b.spec for b in available_backends()}:
        pytest.skip("cvxpy:CLARABEL not installed")
    with pytest.raises(CapabilityError, match="needs milp"):
        MaxMinFairnessWaterFillingPerf(solver="cvxpy:CLARABEL")


@pytest.mark.parametrize("problem", [SMALL_TYPE, BUDGET_CAPPED, ENTITIES])
def test_gurobi_agrees_on_tiny_models(problem):
    if "gurobi" not in {b.spec for b in available_backends()}:
        pytest.skip("gurobi not installed")
    ours = wf.solve_water_filling(problem, "perf")
    theirs = MaxMinFairnessWaterFillingPerf(solver="gurobi").allocate(problem)
    np.testing.assert_allclose(wf.normalized_shares(theirs, "perf"), wf.normalized_shares(ours, "perf"), rtol=1e-6)


def test_published_gavel_table_100_jobs(shared_data):
    table = read_gavel_json(shared_data / "gavel" / "simulation_throughputs.json")
    problem = build_problem(parse_cluster("v100=36,p100=36,k80=36"), sample_jobs(table, 100, 0, multi_gpu=True), table)
    for cls, variant in zip(POLICIES, ["agnostic", "perf", "packed"]):
        alloc = cls().allocate(problem)
        assert allocation_violations(alloc) == []
        assert not any("froze" in note or "kept" in note for note in alloc.notes)
        assert alloc.objective == pytest.approx(plain_max_min(problem, variant).objective, rel=1e-7)
