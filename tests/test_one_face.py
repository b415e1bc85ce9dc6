"""Every policy on every workload, on equal terms: the cross-family matrix at small scale, the
metrics every run reports, the conversions between trace formats and the properties every
schedule keeps (capacity, gang sizes, work)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_slot_engine import write_inputs

from allocators.registry import SLOT_POLICIES
from simulator.cluster import Cluster, parse_cluster
from simulator.example_table import example_table
from simulator.executor import Executor, LeaseResults
from simulator.generator import generate_trace
from simulator.outcomes import JOB_COLUMNS, SUMMARY_KEYS
from simulator.rates import CurveRates, TableRates
from simulator.readers.elasticflow_traces import read_deadline_trace
from simulator.readers.iteration_tables import read_throughput_dir
from simulator.readers.node_cluster import read_cluster_spec
from simulator.round_view import WorkloadError
from simulator.simulate import simulate, simulate_deadlines
from simulator.views import DeadlineRule, round_view, slot_view, with_deadlines
from simulator.workload import Jobs, Workload

MATRIX = ("max_min_fairness_perf", "finish_time_fairness_perf", "shockwave", "elasticflow", "chronus", "edf",
          "dlas-gpu", "themis", "gandiva", "fifo")
ENDS = {"finished", "declined", "failed"}


def _gavel_run(policy: str, num_jobs: int = 10, seed: int = 0):
    trace = generate_trace(example_table(), num_jobs, seed=seed, lam=300.0, multi_gpu=True)
    return simulate(trace, policy=policy, cluster="v100=8", gpus_per_server=4, deadlines="uniform:0.5:1.5",
                    seed=seed)


def _elasticflow_run(tmp_path, policy: str):
    jobs = [(0, 6000, 900, 2), (30, 3000, 400, 1), (60, 20000, 5000, 4), (90, 2000, 200, 1, 1), (120, 9000, 700, 8)]
    trace, spec, tables = write_inputs(tmp_path, jobs, nodes=2, gpus_per_node=4)
    return simulate_deadlines(trace, spec, tables, policy=policy, slot=60.0)


@pytest.mark.parametrize("policy", MATRIX)
def test_every_policy_runs_on_a_gavel_workload_and_reports_every_metric(policy):
    result = _gavel_run(policy)
    assert set(SUMMARY_KEYS) <= set(result.summary), set(SUMMARY_KEYS) - set(result.summary)
    assert set(JOB_COLUMNS) <= set(result.jobs)
    assert set(result.jobs["state"]) <= ENDS
    assert result.summary["deadline_jobs"] == 10
    assert "deadlines drawn: uniform:0.5:1.5 (seed 0)" in result.summary["notes"]


@pytest.mark.parametrize("policy", MATRIX)
def test_every_policy_runs_on_an_elasticflow_workload_and_reports_every_metric(tmp_path, policy):
    result = _elasticflow_run(tmp_path, policy)
    assert set(SUMMARY_KEYS) <= set(result.summary)
    assert set(JOB_COLUMNS) <= set(result.jobs)
    assert set(result.jobs["state"]) <= ENDS
    assert result.summary["deadline_jobs"] == 4 and result.summary["jobs"] == 5


def test_round_and_slot_policies_see_the_same_drawn_deadlines():
    rounds, slots = _gavel_run("max_min_fairness_perf"), _gavel_run("edf")
    np.testing.assert_allclose(rounds.jobs["deadline"], slots.jobs["deadline"], rtol=1e-9)
    assert np.isfinite(rounds.jobs["deadline"]).all()


def test_a_deadline_trace_round_trips_through_the_round_view(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 6000, 900, 2), (30, 3000, 400, 1), (60, 900, 9e9, 4, 1)])
    rates = CurveRates(read_throughput_dir(tables))
    nodes = read_cluster_spec(spec)
    dw = Workload(Jobs.from_deadlines(read_deadline_trace(trace)), Cluster.of_nodes(nodes, "gpu"), rates)
    slots = slot_view(dw, None, "edf")
    rounds = round_view(dw)
    back = slot_view(Workload(Jobs.from_gavel(rounds.trace), rounds.cluster, TableRates(rounds.table)), None, "edf")
    for name in ("submit", "iterations", "requested", "best_effort"):
        np.testing.assert_array_equal(getattr(back, name), getattr(slots, name))
    np.testing.assert_allclose(back.deadline[:2], slots.deadline[:2])
    assert np.isinf(back.deadline[2])
    np.testing.assert_allclose(back.rates, slots.rates)
    assert (back.total_gpus, back.gpus_per_node) == (slots.total_gpus, slots.gpus_per_node) == (
        nodes.num_gpus, nodes.gpus_per_node)


def test_a_gavel_trace_without_deadlines_or_on_many_types_is_one_clear_error():
    trace = generate_trace(example_table(), 4, seed=0)
    with pytest.raises(WorkloadError, match="needs deadlines.*--deadlines uniform"):
        simulate(trace, policy="edf", cluster="v100=8")
    with pytest.raises(WorkloadError, match="one GPU type.*--cluster v100="):
        simulate(trace, policy="edf", cluster="v100=8,k80=8", deadlines="uniform:0.5:1.5")
    with pytest.raises(ValueError, match="uniform:LO:HI"):
        DeadlineRule.parse("normal:1:2")
    own = with_deadlines(Workload(Jobs.from_gavel(trace), parse_cluster("v100=8"), TableRates(example_table())),
                         DeadlineRule(1, 1))
    assert own.notes == ("deadlines drawn: uniform:1:1 (seed 0)",)
    with pytest.raises(WorkloadError, match="deadlines of its own"):
        with_deadlines(own, DeadlineRule(1, 1))


def test_no_policy_name_means_two_policies():
    from allocators.registry import POLICIES

    assert not set(POLICIES) & set(SLOT_POLICIES)


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(MATRIX), jobs=st.integers(2, 12))
def test_capacity_and_gang_sizes_hold_for_random_workloads_under_random_policies(seed, policy, jobs):
    result = _gavel_run(policy, num_jobs=jobs, seed=seed)
    assert (result.timeline["busy_gpus"] <= 8).all()
    assert {"start", "end", "busy_gpus", "running_jobs", "queued_jobs"} <= set(result.timeline)
    finished = result.jobs["state"] == "finished"
    assert (result.jobs["finish"][finished] >= result.jobs["arrival"][finished]).all()
    assert (result.jobs["start"][finished] >= result.jobs["arrival"][finished] - 1e-9).all()


JOB = st.tuples(st.integers(0, 600), st.integers(100, 30_000), st.integers(60, 20_000), st.sampled_from([1, 2, 4, 8]))


@settings(max_examples=12)
@given(jobs=st.lists(JOB, min_size=1, max_size=8), policy=st.sampled_from(MATRIX))
def test_capacity_holds_and_every_job_ends_on_random_deadline_workloads(tmp_path_factory, jobs, policy):
    rows = [(submit, iters, submit + slack, n) for submit, iters, slack, n in jobs]
    trace, spec, tables = write_inputs(tmp_path_factory.mktemp("w"), rows, nodes=2, gpus_per_node=4)
    result = simulate_deadlines(trace, spec, tables, policy=policy, slot=60.0)
    assert (result.timeline["busy_gpus"] <= 8).all()
    assert set(result.jobs["state"]) <= ENDS
    finished = result.jobs["state"] == "finished"
    assert (result.jobs["jct"][finished] > 0).all()


class Ledger(Executor):
    """Does every planned step, as the simulation does, and keeps every interval's leases."""

    def __init__(self):
        self.intervals = []

    def execute(self, leases):
        self.intervals.append(leases)
        return LeaseResults(leases.steps.copy(), np.zeros(leases.steps.size, dtype=bool))


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from([p for p in MATRIX if p != "gandiva"]),
       jobs=st.integers(2, 10))
@example(seed=3, policy="elasticflow", jobs=8)  # leased, a job ended 2 s late: 1e-9 steps, not 1e-9 s
def test_work_is_conserved_for_random_workloads_under_random_policies(seed, policy, jobs):
    """Every lease runs at the table's rate for its GPUs over its seconds (overheads excluded), a
    finished job's leases add up to its work, no interval holds more GPUs than the cluster or a gang
    other than a count the job can run on, and the leased run ends exactly as the simulated one."""
    table = example_table()
    trace = generate_trace(table, jobs, seed=seed, lam=300.0, multi_gpu=True)
    run = dict(policy=policy, cluster="v100=8", gpus_per_server=4, deadlines="uniform:0.5:1.5", seed=seed)
    ledger = Ledger()
    leased, simulated = simulate(trace, executor=ledger, **run), simulate(trace, **run)
    np.testing.assert_allclose(leased.jobs["finish"], simulated.jobs["finish"], rtol=1e-12)
    assert leased.jobs["state"].tolist() == simulated.jobs["state"].tolist()
    col = table.type_columns(("v100",))[0]
    work, steps = np.zeros(jobs), np.zeros(jobs, dtype=np.int64)
    for leases in ledger.intervals:
        assert leases.gpus.sum() <= 8 and np.unique(leases.jobs).size == leases.jobs.size
        keys = [(trace.job_types[j], int(n)) for j, n in zip(leases.jobs, leases.gpus)]
        assert all(key in table.keys for key in keys), keys
        rate = np.array([table.isolated[table.index_of(*key), col] for key in keys])
        assert (leases.steps <= rate * leases.seconds + 1 + 1e-9).all()
        np.add.at(work, leases.jobs, rate * leases.seconds)
        np.add.at(steps, leases.jobs, leases.steps)
    finished = leased.jobs["state"] == "finished"
    np.testing.assert_allclose(work[finished], trace.total_steps[finished], rtol=1e-9)
    np.testing.assert_array_equal(steps[finished], trace.total_steps[finished])


def test_every_policy_is_a_scheduling_policy_grouped_by_its_system():
    from allocators import ALL_POLICIES, POLICIES, SLOT_POLICIES, Plans, SchedulingPolicy
    from allocators.round_plans import RoundPlanner
    from allocators.slot_plans import SlotPolicy

    assert ALL_POLICIES.keys() == POLICIES.keys() | SLOT_POLICIES.keys()
    for name, cls in ALL_POLICIES.items():
        assert issubclass(cls, SchedulingPolicy) and cls.name == name
        assert cls.plans is (Plans.GPUS if issubclass(cls, (RoundPlanner, SlotPolicy)) else Plans.SHARES)
        assert cls.system in ("Gavel", "Shockwave", "ElasticFlow", "Chronus", "Pollux", "Helios", "Lucid")
        package = cls.__module__.split(".")[1]
        assert package == cls.system.lower(), (name, cls.__module__)


def test_every_policy_writes_the_same_columns_and_summary_keys(tmp_path):
    runs = {p: _gavel_run(p, num_jobs=6) for p in ("max_min_fairness_perf", "shockwave", "edf", "elasticflow")}
    first = runs["max_min_fairness_perf"]
    assert first.summary["clock"] == "rounds" and runs["edf"].summary["clock"] == "slots"
    for policy, result in runs.items():
        assert list(result.jobs) == list(first.jobs), policy
        assert list(result.timeline) == list(first.timeline), policy
        assert list(result.summary) == list(first.summary), policy
        assert "busy_v100" in result.timeline and "gpu_seconds_v100" in result.jobs
        result.write(tmp_path / policy)
    heads = {p: (tmp_path / p / "jobs.csv").read_text().splitlines()[0] for p in runs}
    assert len(set(heads.values())) == 1


def test_a_column_outside_the_common_set_is_an_error():
    from simulator.outcomes import conform

    with pytest.raises(ValueError, match="job column.*'extra'.*common set"):
        conform({"job_id": np.arange(2), "extra": np.zeros(2)}, {"start": np.zeros(1)}, {}, ("v100",))


def test_the_one_engine_runs_a_policy_only_on_the_clock_it_plans_for():
    from allocators import make_policy
    from allocators.registry import make_slot_policy
    from simulator.engine import Engine, Rounds, Slots

    table = example_table()
    trace = generate_trace(table, 4, seed=0, lam=300.0)
    workload = with_deadlines(Workload(Jobs.from_gavel(trace), parse_cluster("v100=8"), TableRates(table)),
                              DeadlineRule(0.5, 1.5))
    rounds, slots = round_view(workload), slot_view(workload, 4, "edf")
    gavel, edf = make_policy("max_min_fairness_perf", "clarabel"), make_slot_policy("edf", "highs")
    assert isinstance(Engine(rounds, gavel).clock, Rounds) and isinstance(Engine(slots, edf).clock, Slots)
    with pytest.raises(ValueError, match="plans GPUs per slot, not time shares"):
        Engine(rounds, edf)
    with pytest.raises(ValueError, match="plans time shares or rounds, not GPUs per slot"):
        Engine(slots, gavel)
