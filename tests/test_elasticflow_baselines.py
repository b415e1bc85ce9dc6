"""The published ElasticFlow deadline baselines on the slot clock: Tiresias (dlas-gpu), Gandiva, Themis.

Tiny cases are checked by hand against the published rules (see each policy's module doc); the
shared-data tests replay the published traces and compare deadline satisfactory ratios.
"""

import math
import types

import numpy as np
import pytest

from allocators.elasticflow.gandiva import Gandiva
from allocators.elasticflow.themis import build_conic, build_level_lp, least_shares, solve_by_bisection
from allocators.registry import SLOT_POLICIES, make_slot_policy
from optim import Status, solve
from simulator.engine import Engine, SlotConfig
from simulator.overheads import OverheadModel
from simulator.readers.elasticflow_traces import DeadlineTrace
from simulator.readers.iteration_tables import IterationTable
from simulator.readers.node_cluster import NodeCluster
from simulator.simulate import simulate_deadlines
from simulator.slot_view import SlotView

COUNTS = np.array([1, 2, 4, 8])
#: iterations/s on 1, 2, 4, 8 GPUs
RATES = {"fast": [1.0, 2.0, 4.0, 8.0], "slow": [0.5, 1.0, 2.0, 4.0]}


def workload(jobs, nodes=1, gpus_per_node=4):
    """``jobs``: (submit, GPUs, duration s[, model]) rows; deadlines far away, iterations = duration × rate."""
    table = IterationTable("memory", COUNTS, {m: np.array([32]) for m in RATES},
                           {m: np.array([r]) for m, r in RATES.items()})
    model = np.array([row[3] if len(row) > 3 else "fast" for row in jobs], dtype=object)
    gpus = np.array([row[1] for row in jobs], dtype=np.int64)
    duration = np.array([row[2] for row in jobs], dtype=float)
    rate = np.array([RATES[m][int(np.searchsorted(COUNTS, g))] for m, g in zip(model, gpus)])
    submit = np.array([row[0] for row in jobs], dtype=float)
    trace = DeadlineTrace(job_ids=np.arange(len(jobs)), submit=submit, iterations=duration * rate, model=model,
                          deadline=submit + 10 * duration, batch_size=np.full(len(jobs), 32), num_gpus=gpus,
                          duration=duration, best_effort=np.zeros(len(jobs), dtype=bool), source="tiny")
    return SlotView.build(trace, NodeCluster(1, nodes, gpus_per_node, 64, 256), table)


def replay(policy, jobs, *, slot=60.0, nodes=1, gpus_per_node=4, state=None):
    """Run the engine without overheads; returns the result, the (time, {job: GPUs}, state) of every
    decision and the policy."""
    log = []
    inner = policy.allocate

    def allocate(view):
        gpus = inner(view)
        log.append((view.now, {int(j): int(gpus[j]) for j in np.flatnonzero(gpus)},
                    state(policy) if state else None))
        return gpus

    policy.allocate = allocate
    w = workload(jobs, nodes, gpus_per_node)
    result = Engine(w, policy, SlotConfig(slot=slot, overhead=OverheadModel.none())).run()
    return result, log, policy


def test_registered():
    for name in ("dlas-gpu", "gandiva-ef", "themis"):
        policy = make_slot_policy(name)
        assert SLOT_POLICIES[name] is type(policy)
        assert not policy.elastic
    assert make_slot_policy("dlas-gpu").duration_based and make_slot_policy("gandiva-ef").duration_based
    assert not make_slot_policy("themis").duration_based


# --------------------------------------------------------------------------------------------- Tiresias

def queues(policy):
    return [list(q) for q in policy.queues]


def test_tiresias_demotion_order_and_fit_first():
    # 4 GPUs; limits 120 / 240 GPU·s. J0 (2 GPUs), J1 (4), J2 (2) arrive together.
    jobs = [(0, 2, 10_000), (0, 4, 10_000), (0, 2, 10_000)]
    _, log, _ = replay(make_slot_policy("dlas-gpu", limits=(120.0, 240.0)), jobs, state=queues)
    expected = [
        # J1 does not fit behind J0; J2 (later, smaller) is not blocked by it
        (0, {0: 2, 2: 2}, [[0, 2, 1], [], []]),
        # 60 s × 2 GPUs = 120 GPU·s: J0 then J2 (runnable order) to the tail of Q1; J1 now heads Q0
        (60, {1: 4}, [[1], [0, 2], []]),
        # J1: 60 s × 4 GPUs = 240 >= 120 -> tail of Q1 (one level per decision, though 240 >= 240)
        (120, {0: 2, 2: 2}, [[], [0, 2, 1], []]),
        # published jump for J0/J2 (Q1, 60 s run): ceil((240 - 60) / 2) = 90 s -> t = 210 (wall-clock bug)
        (210, {1: 4}, [[], [1], [0, 2]]),
        # J1's jump: ceil((240 - 60) / 4) = 45 -> 255, raised to t + Δ = 270; 120 s × 4 >= 240 -> Q2 tail
        (270, {0: 2, 2: 2}, [[], [], [0, 2, 1]]),
    ]
    assert log[:5] == expected


def test_tiresias_exact_jump():
    jobs = [(0, 2, 10_000), (0, 4, 10_000), (0, 2, 10_000)]
    policy = make_slot_policy("dlas-gpu", limits=(120.0, 240.0), published_jump=False)
    _, log, _ = replay(policy, jobs)
    # J0/J2 cross 240 GPU·s after (240 - 120) / 2 = 60 more seconds: a decision at 180, not 210
    assert [t for t, _, _ in log[:4]] == [0, 60, 120, 180]


def test_tiresias_demotes_by_gpu_seconds():
    # limit 3250 GPU·s: an 8-GPU job leaves Q0 after ~407 s, a 1-GPU job after 3250 s
    jobs = [(0, 8, 5_000), (0, 1, 5_000)]
    policy = make_slot_policy("dlas-gpu")
    _, log, _ = replay(policy, jobs, nodes=2, state=queues)
    first_demotion = next(t for t, _, q in log if q[1])
    assert 407 <= first_demotion <= 480 and next(t for t, _, q in log if 1 in q[1]) >= 3250


# --------------------------------------------------------------------------------------------- Gandiva

def test_gandiva_time_slices_an_oversubscribed_node_set():
    # five 1-GPU jobs on one 4-GPU node: the set takes 3 by its strict rule, then oversubscribes
    jobs = [(0, 1, 150)] * 5
    result, log, policy = replay(make_slot_policy("gandiva-ef"), jobs)
    grants = [(t, sorted(g)) for t, g, _ in log[:4]]
    # decisions on the 60-s grid after the last arrival rotate the running jobs to the back
    assert grants == [(0, [0, 1, 2, 3]), (60, [0, 1, 2, 4]), (120, [0, 1, 3, 4]), (180, [2, 3, 4])]
    assert result.jobs["finish"][0] == result.jobs["finish"][1] == 150


def test_gandiva_rotates_only_on_minute_boundaries():
    # the same jobs arriving at t = 30: decisions at 30, 90, 150, ... never rotate, so the fifth job
    # waits until the first four finish (at 180), seen at the decision at 210
    jobs = [(30, 1, 150)] * 5
    result, log, policy = replay(make_slot_policy("gandiva-ef"), jobs)
    assert all(sorted(g) == [0, 1, 2, 3] for t, g, _ in log if t < 210)
    assert policy.rotations == 0
    assert result.jobs["start"][4] == 210 and result.jobs["finish"][4] == 360


def test_gandiva_strict_capacity_and_shrink():
    # two 2-GPU jobs on two 4-GPU nodes: the second does not join the first set (1 + 1 < 2 fails) but
    # takes node 1; the adjust step then shrinks the class to one set: both jobs share node 1
    def sets(policy):
        return [(s.nodes[:], s.jobs[:]) for s in policy.sets[2]], policy.free_nodes[:]

    _, log, _ = replay(make_slot_policy("gandiva-ef"), [(0, 2, 600), (0, 2, 600)], nodes=2, state=sets)
    assert log[0][2] == ([([1], [1, 0])], [0])
    assert log[0][1] == {0: 2, 1: 2}


def test_gandiva_pending_retry_skips_after_each_start():
    policy = Gandiva()
    policy.gpus_per_node, policy.total_gpus, policy.free_nodes = 4, 16, [0, 1, 2]
    policy.pending = [0, 1, 2, 3]
    view = types.SimpleNamespace(requested=np.array([4, 4, 4, 4]))
    policy._retry_pending(view)
    assert policy.pending == [1, 3]                 # 0 and 2 started; 1 and 3 were skipped
    fair = Gandiva(pending_skip=False)
    fair.gpus_per_node, fair.total_gpus, fair.free_nodes = 4, 16, [0, 1, 2]
    fair.pending = [0, 1, 2, 3]
    fair._retry_pending(view)
    assert fair.pending == []                       # three new sets, then job 3 oversubscribes one


# --------------------------------------------------------------------------------------------- Themis

def hand_program():
    # rho_j = (A_j + B_j / x_j) / D_j; job 0 has waited 100 s: at x = 1 its ratio is 1.5 vs 0.5
    return np.array([100.0, 0.0]), np.array([50.0, 50.0]), np.array([100.0, 100.0]), np.array([4.0, 4.0]), 4.0


def test_themis_program_by_hand():
    A, B, D, n, G = hand_program()
    # x0 + x1 = 1 and 100 + 50 / x0 = 50 / x1  =>  x0 = 1 / sqrt(2), rho = 1 + 1 / sqrt(2)
    level, _ = solve_by_bisection(A, B, D, n, G)
    assert level == pytest.approx(1 + 1 / math.sqrt(2), rel=1e-12)
    x = least_shares(level, A, B, D)
    assert x == pytest.approx([1 / math.sqrt(2), 1 - 1 / math.sqrt(2)], rel=1e-9)
    scale = 1.5
    conic = solve(build_conic(A, B, D, n, G, scale), "clarabel")
    assert conic.x[2] * scale == pytest.approx(level, rel=1e-6)
    assert conic.x[:2] == pytest.approx(x, abs=1e-6)
    lp = solve(build_level_lp(level * (1 + 1e-6), A, B, D, n, G), "highs")
    assert lp.status is Status.OPTIMAL and lp.objective >= 1.0
    below = solve(build_level_lp(level * (1 - 1e-6), A, B, D, n, G), "highs")
    assert below.objective < 1.0


@pytest.mark.parametrize("params", [{}, {"method": "bisection", "shares": "least"}, {"method": "lp"}])
def test_themis_gives_the_worst_ratio_job_its_share(params):
    # two 4-GPU jobs on 4 GPUs; at equal shares the slow one has the worse finish-time ratio.
    # iso = min(1, ceil(4 / 2) / 4) = 1/2, so rho_j = (L_j / (T_j x_j)) / (2 L_j) = 1 / (2 T_j x_j):
    # equal T_j x_j with x_slow + x_fast = 1 gives x_slow = 4 / (2 + 4) = 2/3, and the slow job runs.
    policy = make_slot_policy("themis", **params)
    _, log, _ = replay(policy, [(0, 4, 600, "fast"), (0, 4, 600, "slow")])
    assert log[0][1] == {1: 4}
    assert policy.solve_log()[0]["level"] == pytest.approx(1 / (2 * 2 * (2 / 3)), rel=1e-6)
    assert policy.solve_log()[0]["jobs"] == 2


def test_themis_skips_the_program_when_every_job_fits():
    policy = make_slot_policy("themis")
    result, log, _ = replay(policy, [(0, 2, 600, "fast"), (0, 2, 600, "slow")])
    assert log[0][1] == {0: 2, 1: 2} and policy.solve_log() == [] and policy.skipped >= 1
    assert result.summary["finished_late"] == 0


def test_themis_rejects_a_conic_method_without_cones():
    with pytest.raises(ValueError, match="SOC"):
        make_slot_policy("themis", "highs", method="conic", conic_solver="highs")


# --------------------------------------------------------------------------------------------- published traces

EF = "elasticflow"
#: (trace, cluster, tables, slot) -> published deadline satisfactory ratio per policy
PUBLISHED = {
    ("traces/elasticVpollux_e.csv", "n16g4", "throughputs_T4", 60.0): {"gandiva-ef": 0.092, "dlas-gpu": 0.287,
                                                                       "themis": 0.312},
    ("generated/100jobs_1500lam.csv", "n16g8", "throughputs_A100", 240.0): {"gandiva-ef": 0.79, "dlas-gpu": 1.0,
                                                                            "themis": 0.99},
}


@pytest.mark.parametrize("case", list(PUBLISHED), ids=lambda c: c[0].split("/")[-1])
@pytest.mark.parametrize("policy", ["dlas-gpu", "gandiva-ef", "themis"])
def test_published_ratios(shared_data, case, policy):
    trace, spec, tables, slot = case
    root = shared_data / EF
    result = simulate_deadlines(root / trace, root / "cluster_specs" / f"{spec}.csv", root / tables,
                                policy=policy, slot=slot)
    s = result.summary
    assert s["unfinished"] == 0 and s["declined"] == 0
    assert abs(s["deadline_satisfactory_ratio"] - PUBLISHED[case][policy]) <= 0.02
