"""The one workload: every trace reader yields the same job model, which writes back and reads to
equal jobs; both rate models answer rate(models, batch sizes, GPUs, type) as each clock's view reads it."""

from __future__ import annotations

import numpy as np
import pytest
from test_slot_engine import write_inputs

from simulator.cluster import Cluster, parse_cluster
from simulator.example_table import example_table
from simulator.generator import generate_trace
from simulator.rates import CurveRates, TableRates
from simulator.readers.elasticflow_traces import DeadlineInputError
from simulator.readers.iteration_tables import read_throughput_dir
from simulator.readers.node_cluster import read_cluster_spec
from simulator.readers.pollux_traces import PolluxInputError
from simulator.readers.traces import TraceError, write_trace
from simulator.round_view import WorkloadError
from simulator.views import DeadlineRule, round_view, slot_view, with_deadlines
from simulator.workload import DeadlineKind, Jobs, Workload, read_jobs, write_jobs

FIELDS = ("ids", "arrival", "work", "model", "batch_size", "requested", "weight", "kind", "deadline", "slo",
          "duration")


def assert_same_jobs(a: Jobs, b: Jobs, rtol: float = 0.0) -> None:
    assert len(a) == len(b) and a.unit == b.unit and a.mode == b.mode
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if x.dtype.kind in "fc":
            np.testing.assert_allclose(x, y, rtol=rtol, err_msg=name)
        else:
            np.testing.assert_array_equal(x, y, err_msg=name)


def round_trip(jobs: Jobs, tmp_path, name: str) -> Jobs:
    path = tmp_path / name
    write_jobs(jobs, path)
    return read_jobs(path)


SHOCKWAVE_120 = "shockwave/traces/120_0.2_5_100_40_25_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace"


@pytest.mark.parametrize("name, unit", [
    ("gavel/traces/small_test.trace", "steps"), ("gavel/traces/max_min_fairness.trace", "steps"),
    (SHOCKWAVE_120, "steps"), ("elasticflow/traces/elasticVpollux_e.csv", "iterations"),
    ("elasticflow/generated/100jobs_1500lam.csv", "iterations"), ("elasticflow/itp/195job.csv", "iterations")])
def test_shared_traces_read_into_the_job_model_and_round_trip(shared_data, tmp_path, name, unit):
    """Gavel and Shockwave traces (SLOs as soft deadlines), ElasticFlow and ITP ones (strict)."""
    path = shared_data / name
    if not path.exists():
        pytest.skip(f"{path} not in the shared data")
    jobs = read_jobs(path)
    assert jobs.unit == unit and len(jobs) == len(jobs.record)
    requested = jobs.record.scale_factors if unit == "steps" else jobs.record.num_gpus
    np.testing.assert_array_equal(jobs.requested, requested)
    given = np.isfinite(jobs.slo) | np.isfinite(jobs.deadline)
    kind = DeadlineKind.SOFT if unit == "steps" else DeadlineKind.STRICT
    assert ((jobs.kind == kind) == given).all() and ((jobs.kind == DeadlineKind.BEST_EFFORT) == ~given).all()
    assert_same_jobs(jobs, round_trip(jobs, tmp_path, path.name))


def test_chronus_traces_read_into_the_job_model_and_round_trip(shared_data, tmp_path):
    jobs = read_jobs(shared_data / "chronus" / "trace_job_Philly_MIX2.csv")
    assert set(np.unique(jobs.kind)) == {DeadlineKind.BEST_EFFORT, DeadlineKind.STRICT, DeadlineKind.SOFT}
    assert np.isinf(jobs.deadline[jobs.best_effort]).all() and np.isfinite(jobs.deadline[~jobs.best_effort]).all()
    back = round_trip(jobs, tmp_path, "back.csv")
    assert_same_jobs(jobs, back, rtol=1e-12)
    np.testing.assert_array_equal(back.record.option_offsets, jobs.record.option_offsets)
    np.testing.assert_allclose(back.record.option_value, jobs.record.option_value)


@pytest.mark.parametrize("folder", ["workloads", "workloads-0.5", "workloads-realistic"])
def test_pollux_workloads_read_into_the_job_model_and_round_trip(shared_data, tmp_path, folder):
    path = shared_data / "pollux" / folder / "workload-1.csv"
    jobs = read_jobs(path)
    assert jobs.unit == "epochs" and jobs.best_effort.all()
    assert {int(w) for w in jobs.work} <= {2, 10, 50, 80, 90, 100}
    np.testing.assert_array_equal(jobs.requested, jobs.record.num_replicas)
    back = round_trip(jobs, tmp_path, "back.csv")
    assert_same_jobs(jobs, back)
    assert (tmp_path / "back.csv").read_text() == path.read_text()


@pytest.mark.parametrize("line, message", [
    ("a-0,12,cifar10,x,128", r"w.csv:3: column num_replicas: expected a number, got 'x'"),
    ("a-0,-4,cifar10,1,128", r"w.csv:3: column time: must be >= 0, got '-4'"),
    ("a-0,12,cifar10,1", r"w.csv:3: column batch_size: missing \(the row has 4 of the header's 5 columns\)"),
    ("a-0,12,cifar10,1,99999999999999999999999", r"w.csv:3: column batch_size: out of range \(beyond 64 bits\)"),
    ("a-0,12,resnet,1,128", r"w.csv:3: column application: unknown application 'resnet' \(known: bert, "),
])
def test_a_malformed_pollux_workload_names_file_line_and_column(tmp_path, line, message):
    (tmp_path / "w.csv").write_text(f"name,time,application,num_replicas,batch_size\nb-1,0,ncf,1,256\n{line}\n")
    with pytest.raises(PolluxInputError, match=message):
        read_jobs(tmp_path / "w.csv")


def test_a_generated_trace_round_trips_and_bad_input_is_one_clear_error(tmp_path):
    trace = generate_trace(example_table(), 20, seed=1, multi_gpu=True)
    write_trace(trace, tmp_path / "t.trace")
    jobs = read_jobs(tmp_path / "t.trace")
    assert_same_jobs(jobs, Jobs.from_gavel(trace))
    (tmp_path / "bad.csv").write_text("job_id,submit_time\n1,2\n")
    with pytest.raises(DeadlineInputError, match="bad.csv:1: unknown deadline trace header"):
        read_jobs(tmp_path / "bad.csv")
    with pytest.raises(TraceError, match="cannot read"):
        read_jobs(tmp_path / "missing.trace")


def test_table_rates_are_what_the_round_view_reads():
    table = example_table()
    trace = generate_trace(table, 30, seed=2, multi_gpu=True)
    cluster = parse_cluster("v100=8,p100=8,k80=8")
    workload = Workload(Jobs.from_gavel(trace), cluster, TableRates(table))
    view = round_view(workload)
    for col, worker_type in enumerate(cluster.worker_types):
        rate = workload.rates.rate(workload.jobs.model, 0, workload.jobs.requested, worker_type)
        np.testing.assert_array_equal(np.nan_to_num(rate), view.rates[:, col])


def test_curve_rates_are_what_the_slot_view_reads(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 6000, 900, 2), (30, 3000, 400, 1), (60, 900, 9e9, 4, 1)])
    rates = CurveRates(read_throughput_dir(tables), "T4")
    workload = Workload(read_jobs(trace), Cluster.of_nodes(read_cluster_spec(spec), "T4"), rates)
    view = slot_view(workload, None, "edf")
    jobs = workload.jobs
    for col, n in enumerate(view.gpu_counts):
        np.testing.assert_array_equal(rates.rate(jobs.model, jobs.batch_size, n, "T4"), view.rates[:, col])
    assert (view.total_gpus, view.gpus_per_node) == (int(workload.cluster.gpus[0]), workload.cluster.gpus_per_node)
    with pytest.raises(ValueError, match="one GPU type"):
        rates.rate(jobs.model, jobs.batch_size, 1, "v100")


def test_drawn_deadlines_are_recorded_and_only_for_traces_without_deadlines(tmp_path):
    trace, spec, tables = write_inputs(tmp_path, [(0, 6000, 900, 2)])
    workload = Workload(read_jobs(trace), Cluster.of_nodes(read_cluster_spec(spec), "gpu"),
                        CurveRates(read_throughput_dir(tables)))
    with pytest.raises(WorkloadError, match="deadlines of its own"):
        with_deadlines(workload, DeadlineRule(0.5, 1.5))
    gavel = Workload(Jobs.from_gavel(generate_trace(example_table(), 5, seed=0)), parse_cluster("v100=4"),
                     TableRates(example_table()))
    drawn = with_deadlines(gavel, DeadlineRule(0.5, 1.5, seed=3))
    assert drawn.notes == ("deadlines drawn: uniform:0.5:1.5 (seed 3)",)
    assert (drawn.jobs.kind == DeadlineKind.SOFT).all() and np.isfinite(drawn.jobs.slo).all()


def test_a_slot_view_needs_one_type_in_whole_nodes(tmp_path):
    trace, _, tables = write_inputs(tmp_path, [(0, 6000, 900, 2)])
    jobs, rates = read_jobs(trace), CurveRates(read_throughput_dir(tables))
    loose = Workload(jobs, Cluster(("gpu",), np.array([10])), rates)
    with pytest.raises(WorkloadError, match="one GPUs-per-server count, got None"):
        slot_view(loose, None, "edf")
    with pytest.raises(WorkloadError, match="10 GPUs are not whole servers of 4"):
        slot_view(loose, 4, "edf")
    assert slot_view(loose, 5, "edf").gpus_per_node == 5
    with pytest.raises(WorkloadError, match="one GPU type"):
        slot_view(Workload(jobs, Cluster(("a", "b"), np.array([8, 8]), 4), rates), None, "edf")
