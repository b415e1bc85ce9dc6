"""GPU sharing on the slot clock (co-located jobs progress at the measured pair speeds, the engine
refuses plans that are not measured pairs) and Lucid's policy and models (its packing rule on a
hand-sized trace, estimators trained on the past only)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_helios_fifo import vc_workloads, write_log

from allocators.helios.queued import HeliosPolicy
from allocators.lucid.additive import AdditiveModel
from allocators.lucid.lucid import Lucid
from allocators.lucid.packing_tree import PackingTree
from allocators.slot_plans import NodePlan
from simulator.engine import Engine, SlotConfig
from simulator.engine.clock import SimulationError
from simulator.simulate import job_log_workload
from simulator.views import slot_view

#: three workloads: A and B share well (labels 0, 1), C badly (2); A beside B runs at 0.8, B beside A at 0.5
PROFILES = ("model,dataset,batchsize,amp,speed,gpu_util,gmem_util,gmem,label\n"
            "A,d,32,0,100,30,10,4000,0\nB,d,32,0,50,60,20,6000,1\nC,d,32,0,20,99,80,20000,2\n")
PAIRS = (",model1,dataset1,gpu_num1,batchsize1,amp1,speed1,model2,dataset2,gpu_num2,batchsize2,amp2,speed2,"
         "gpu_util,gmem_util,gmem\n0,A,d,1,32,0,0.8,B,d,1,32,0,0.5,90,30,10000\n")


def sharing_workload(tmp_path, jobs, layout, profile):
    """A job log of ``jobs`` on ``layout`` whose job i runs workload ``profile[i]`` (0: A, 1: B, 2: C)."""
    log, config = write_log(tmp_path, jobs, layout)
    data = tmp_path / "lucid"
    data.mkdir(exist_ok=True)
    (data / "single_data.csv").write_text(PROFILES)
    (data / "colocate_info.csv").write_text(PAIRS)
    workload = job_log_workload(log, config, lucid_data=data)
    sharing = workload.sharing
    forced = type(sharing)(sharing.profiles, np.asarray(profile, dtype=np.int64), sharing.speed)
    return type(workload)(workload.jobs, workload.cluster, workload.rates, workload.notes, forced)


class Pairing(HeliosPolicy):
    """Jobs 0 and 1 on node 0's first GPU, job 1 as job 0's guest while both run (or the plan
    ``fixed(view)`` returns, to be refused)."""

    name = "pairing"

    def __init__(self, fixed=None):
        super().__init__()
        self.fixed = fixed

    def allocate(self, view):
        if self.fixed is not None:
            return self.fixed(view)
        jobs = np.array([j for j in (0, 1) if view.state[j] in (1, 2)], dtype=np.int64)
        host = np.where((jobs == 1) & (view.state[0] in (1, 2)), 0, -1)
        return NodePlan(jobs, np.zeros(jobs.size, dtype=np.int64), np.ones(jobs.size, dtype=np.int64), host)


def run(workload, policy):
    view = slot_view(workload, None, policy.name)
    return Engine(view, policy, SlotConfig(slot=1.0, preset="helios")).run()


def test_pairs_progress_at_measured_speeds(tmp_path):
    """A (100 s) beside B (60 s) on one GPU: A at 0.8, B at 0.5, so B ends at 120 s having done its 60 s;
    A did 96 s by then and its last 4 s alone: 124 s."""
    workload = sharing_workload(tmp_path, [(0, 100, 1, "v"), (0, 60, 1, "v")], {"v": 1}, [0, 1])
    finish = run(workload, Pairing()).jobs["finish"]
    assert finish[1] == pytest.approx(120.0)
    assert finish[0] == pytest.approx(124.0)


#: plans that break one rule of the engine's checks each, and the error each gets (jobs 0-2 arrive at
#: 0 s on two nodes of 8 GPUs, job 3 at 50 s; job 2's workload was not measured beside job 0's)
REFUSED = {
    "no_host_entry": ((0, 1), (0, 1), (1, 1), (-1, 0), "job 1 on 1 GPU.s. of job 0 on node 1, which holds 0 there"),
    "self": ((0, 0), (0, 1), (1, 1), (-1, 0), "job 0 on 1 GPU.s. of job 0 on node 1"),
    "unequal": ((0, 1), (0, 0), (2, 1), (-1, 0), "which holds 2 there as its own"),
    "two_guests": ((0, 1, 2), (0, 0, 0), (1, 1, 1), (-1, 0, 0), "not pairs"),
    "guest_and_own": ((0, 1, 1), (0, 0, 1), (1, 1, 1), (-1, 0, -1), "not pairs"),
    "unmeasured": ((0, 2), (0, 0), (1, 1), (-1, 0), "jobs 2 and 0 on the same GPUs.*not measured"),
    "range": ((0,), (2,), (1,), None, "entries out of range"),
    "negative": ((0,), (0,), (-1,), None, "entries out of range"),
    "twice": ((0, 0), (1, 1), (1, 2), None, "two entries for one job on one node"),
    "inactive": ((3,), (0,), (1,), None, "job 3, which is not active"),
    "over": ((0, 1), (1, 1), (8, 1), (-1, -1), "put 9 GPUs on node 1 of 8"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_engine_refuses_plans_that_break_its_rules(tmp_path, case):
    jobs = [(0, 100, 1, "v"), (0, 60, 1, "v"), (0, 60, 1, "v"), (50, 60, 1, "v")]
    *entries, host, error = REFUSED[case]

    def plan(view):
        return NodePlan(*(np.array(a, dtype=np.int64) for a in entries),
                        None if host is None else np.array(host, dtype=np.int64))

    workload = sharing_workload(tmp_path, jobs, {"v": 2}, [0, 1, 2, 1])
    with pytest.raises(SimulationError, match=error):
        run(workload, Pairing(plan))


def test_engine_takes_a_plan_with_zero_entries_and_guests(tmp_path):
    """Entries of 0 GPUs are dropped before the rules apply (here a guest's entry where its host has
    none): the pair runs as without them."""
    def plan(view):
        active = np.isin([0, 1, 1], np.flatnonzero((view.state == 1) | (view.state == 2)))
        host = np.where(active[0], [-1, 0, 0], -1)
        return NodePlan(np.array([0, 1, 1])[active], np.array([0, 0, 1])[active], np.array([1, 1, 0])[active],
                        host[active])

    workload = sharing_workload(tmp_path, [(0, 100, 1, "v"), (0, 60, 1, "v")], {"v": 2}, [0, 1])
    finish = run(workload, Pairing(plan)).jobs["finish"]
    assert finish[1] == pytest.approx(120.0)
    assert finish[0] == pytest.approx(124.0)


def test_sharing_needs_measured_speeds(tmp_path):
    log, config = write_log(tmp_path, [(0, 100, 1, "v"), (0, 60, 1, "v")], {"v": 1})
    with pytest.raises(SimulationError, match="no measured pair speeds"):
        run(job_log_workload(log, config), Pairing())
    with pytest.raises(ValueError, match="--lucid-data"):
        run(job_log_workload(log, config), Lucid())


def test_lucid_packs_by_its_rule(tmp_path):
    """One 8-GPU node: a (A, 8 GPUs) runs; b (B, 8 GPUs) may share with it (labels 0 + 1, memory
    10,000 MB) and does; c (C, 8 GPUs, label 2) may not share and waits for a whole node."""
    jobs = [(0, 100, 8, "v"), (1, 50, 8, "v"), (2, 30, 8, "v")]
    workload = sharing_workload(tmp_path, jobs, {"v": 1}, [0, 1, 2])
    policy = Lucid()
    finish = run(workload, policy).jobs["finish"]
    assert policy.paired == 1
    # b beside a from 1 s: b at 0.5 ends at 101 s; a at 0.8 did 1 + 80 s by then, its last 19 s alone: 120 s;
    # c starts on the freed node at 120 s
    assert finish[1] == pytest.approx(101.0)
    assert finish[0] == pytest.approx(120.0)
    assert finish[2] == pytest.approx(150.0)


def test_lucid_estimator_learns_the_past_only(tmp_path, monkeypatch):
    """Every fit of the Workload Estimate Model reads only jobs that ended by the decision."""
    rng = np.random.default_rng(3)
    jobs = [(int(t), int(d), int(g), "v") for t, d, g in zip(np.sort(rng.integers(0, 4000, 160)),
                                                             rng.integers(10, 400, 160), rng.choice([1, 2, 4], 160))]
    workload = sharing_workload(tmp_path, jobs, {"v": 2}, rng.integers(0, 2, 160))
    fits = []
    original = AdditiveModel.fit.__func__

    def recording(cls, X, y, *args, **kwargs):
        fits.append(len(y))
        return original(cls, X, y, *args, **kwargs)

    policy = Lucid(retrain_every=20)
    seen = []
    real_estimate = policy._estimate

    def estimate(view, new):
        real_estimate(view, new)
        seen.append((view.now, list(policy.ended[:policy.fitted_on])))

    monkeypatch.setattr(AdditiveModel, "fit", classmethod(recording))
    policy._estimate = estimate
    finish = run(workload, policy).jobs["finish"]
    assert fits and policy.fits == len(fits)
    for now, trained in seen:
        assert (finish[trained] <= now + 1e-9).all()


def test_packing_tree_separates_labels():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 100, (60, 4))
    y = (X[:, 1] > 50).astype(np.int64) + (X[:, 3] > 70)
    tree = PackingTree.train(X, y)
    assert tree.accuracy >= 0.9
    assert (tree.predict(X) == y).mean() >= 0.95


@given(st.integers(0, 2**31 - 1))
def test_additive_model_recovers_additive_targets(seed):
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, 4, 800), rng.uniform(0, 1, 800)], axis=1)
    y = 3 * X[:, 0] + np.where(X[:, 1] > 0.5, 2.0, 0.0)
    model = AdditiveModel.fit(X, y, (True, False), ("k", "u"))
    assert np.abs(model.predict(X) - y).mean() < 0.2
    assert model.shapes()["k"] > model.shapes()["u"] > 0


def test_request_runs_lucid_with_scaled_vcs(tmp_path):
    """``simulate --lucid-data DIR --vc-scale F`` on a job log: lucid runs, every VC at F times its
    nodes (at least one); without the profiles lucid is one clear error."""
    from simulator.readers.lucid_measurements import read_vc_config
    from simulator.request import SimulateRequest, run_request

    jobs = [(t, 50 + 10 * t, 1 + t % 2, "v" if t % 3 else "w") for t in range(12)]
    sharing_workload(tmp_path, jobs, {"v": 4, "w": 1}, [0] * 12)
    log, config, data = tmp_path / "log.csv", tmp_path / "vc.csv", tmp_path / "lucid"
    assert read_vc_config(config).scaled(0.25).as_dict() == {"v": 1, "w": 1}
    req = SimulateRequest(trace=str(log), vc_config=str(config), lucid_data=str(data), vc_scale=0.25, policy="lucid")
    result = run_request(req)
    assert result.summary["jobs_completed"] == 12 and result.summary["gpus"] == 16
    assert any(note.startswith("lucid: Workload Estimate Model") for note in result.summary["notes"])
    with pytest.raises(ValueError, match="--lucid-data"):
        run_request(SimulateRequest(trace=str(log), vc_config=str(config), policy="lucid"))


@given(st.integers(0, 2**31 - 1))
def test_pairing_program_is_optimal(seed):
    """The pairing program's choice is worth as much as the best of every assignment (brute force)."""
    import itertools

    from formulations.lucid_pairing import PairingProblem, solve_pairing

    rng = np.random.default_rng(seed)
    W, H = int(rng.integers(1, 4)), int(rng.integers(0, 3))
    pairs = [(w, h) for w in range(W) for h in range(H) if rng.random() < 0.7]
    problem = PairingProblem(rng.integers(1, 5, W), rng.uniform(0.1, 1, W), np.array([p[0] for p in pairs], int),
                             np.array([p[1] for p in pairs], int), rng.uniform(0.01, 1, len(pairs)),
                             int(rng.integers(0, 8)))
    got = solve_pairing(problem)
    value = problem.alone[got.alone].sum() + sum(problem.pair_value[i] for i, (w, h) in enumerate(pairs)
                                                 if got.host[w] == h)
    best = 0.0
    for alone in itertools.product((0, 1), repeat=W):
        if np.dot(alone, problem.gpus) > problem.free:
            continue
        free_jobs = [w for w in range(W) if not alone[w]]
        for picks in itertools.product(*[[None] + [i for i, p in enumerate(pairs) if p[0] == w] for w in free_jobs]):
            chosen = [i for i in picks if i is not None]
            if len({pairs[i][1] for i in chosen}) < len(chosen):
                continue
            best = max(best, problem.alone[np.array(alone, bool)].sum() + problem.pair_value[chosen].sum())
    assert value == pytest.approx(best, abs=1e-9)


def test_pairing_decides_plain_cases_without_a_solver():
    """Nothing fits and nothing may pair: nothing starts; everything fits and is worth most alone: all
    start; both without a solve. Otherwise the program is solved."""
    from formulations.lucid_pairing import PairingProblem, solve_pairing

    none = np.zeros(0, dtype=np.int64)
    blocked = solve_pairing(PairingProblem(np.array([4, 8]), np.array([1.0, 2.0]), none, none, np.zeros(0), 3))
    assert not blocked.solved and not blocked.alone.any() and (blocked.host == -1).all()
    fits = solve_pairing(PairingProblem(np.array([1, 2]), np.array([1.0, 2.0]), none, none, np.zeros(0), 3))
    assert not fits.solved and fits.alone.all()
    knapsack = solve_pairing(PairingProblem(np.array([2, 2]), np.array([1.0, 2.0]), none, none, np.zeros(0), 3))
    assert knapsack.solved and knapsack.alone.tolist() == [False, True]


def test_lucid_exact_runs_every_job(tmp_path):
    rng = np.random.default_rng(5)
    jobs = [(int(t), int(d), int(g), "v") for t, d, g in zip(np.sort(rng.integers(0, 600, 40)),
                                                             rng.integers(20, 300, 40), rng.choice([1, 2, 8], 40))]
    workload = sharing_workload(tmp_path, jobs, {"v": 1}, rng.integers(0, 2, 40))
    from allocators.lucid.exact import LucidExact

    policy = LucidExact()
    result = run(workload, policy)
    assert result.summary["jobs_completed"] == 40 and policy.solves > 0
    assert any(note.startswith("lucid-exact:") for note in result.summary["notes"])


def test_profiler_runs_small_jobs_first_on_its_vc(tmp_path):
    """A profiling VC of one node carved from v's two: a 50 s job of 1 GPU is done there; an 8-GPU
    job skips it and holds v's node to 100 s; a 300 s job leaves the profiler after 80 s with its
    progress, waits for v's node and runs its last 220 s there: 320 s."""
    from dataclasses import replace

    jobs = [(0, 50, 1, "v"), (0, 300, 2, "v"), (0, 100, 8, "v")]
    workload = sharing_workload(tmp_path, jobs, {"v": 2}, [2, 2, 2])
    cluster = workload.cluster
    workload = replace(workload, cluster=replace(cluster, vcs=cluster.vcs.with_profiling(1)))
    policy = Lucid()
    result = run(workload, policy)
    finish = result.jobs["finish"]
    assert policy.profiled == 2
    assert finish[0] == pytest.approx(50.0) and finish[2] == pytest.approx(100.0)
    assert finish[1] == pytest.approx(320.0)
    assert result.summary["preemptions"] == 1


@given(vc_workloads(), st.booleans(), st.integers(0, 2**16))
def test_lucid_runs_jobs_inside_their_vcs(tmp_path_factory, case, profiler, seed):
    """Under lucid (and lucid-exact) every plan keeps each job on its VC's nodes or the profiling VC's,
    no node over its own GPUs, a job on all its requested GPUs or none, every guest on a host; every
    job that fits its VC finishes."""
    from dataclasses import replace

    from allocators.lucid.exact import LucidExact

    jobs, layout = case
    tmp = tmp_path_factory.mktemp("lucid")
    rng = np.random.default_rng(seed)
    workload = sharing_workload(tmp, jobs, layout, rng.integers(0, 3, len(jobs)))
    vcs = workload.cluster.vcs
    if profiler and vcs.nodes.max() > 1:
        workload = replace(workload, cluster=replace(workload.cluster, vcs=vcs.with_profiling(1)))
    for cls in (Lucid, LucidExact):
        plans = []

        class Recording(cls):
            def allocate(self, view):
                plan = super().allocate(view)
                plans.append(plan)
                return plan

        view = slot_view(workload, None, cls.name)
        result = Engine(view, Recording(), SlotConfig(slot=1.0, preset="helios")).run()
        bounds = view.vcs.bounds
        node_vc = np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))
        open_ = np.zeros(len(bounds) - 1, bool) if view.vcs.open is None else view.vcs.open
        for plan in plans:
            host = np.full(plan.jobs.size, -1) if plan.host is None else plan.host
            assert ((node_vc[plan.nodes] == view.job_vc[plan.jobs]) | open_[node_vc[plan.nodes]]).all()
            own = host < 0
            assert (np.bincount(plan.nodes[own], weights=plan.gpus[own], minlength=node_vc.size) <= 8).all()
            held = plan.per_job(len(view.job_vc))
            assert ((held == 0) | (held == view.requested)).all()
            assert np.isin(host[~own], plan.jobs[own]).all()
        fits = np.array([job[2] <= layout[job[3]] * 8 for job in jobs])
        assert (result.jobs["state"][fits] == "finished").all()
