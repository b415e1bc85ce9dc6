"""Reference workloads, checkpoints and the profiler (PyTorch on the CPU, tiny models)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from runtime_bridge import profiler  # noqa: E402
from runtime_bridge.checkpoint import CheckpointError, load_checkpoint, save_checkpoint  # noqa: E402
from runtime_bridge.data_parallel import train_data_parallel_lease  # noqa: E402
from runtime_bridge.lease import LeaseIterator  # noqa: E402
from runtime_bridge.profiler import local_cpu_cores, measure, profile, threads_per_gpu  # noqa: E402
from runtime_bridge.training import train_lease  # noqa: E402
from runtime_bridge.workloads import WORKLOADS, WorkloadSpec, make_workload  # noqa: E402
from schedopt.cli import app  # noqa: E402
from simulator.throughputs import read_gavel_json, write_gavel_json  # noqa: E402

CPU = torch.device("cpu")


def leased_losses(workload, steps, path):
    """Train one lease of ``steps`` through the iterator's hooks; the losses."""
    lease = LeaseIterator(workload.batches(), steps=steps, restore=lambda: workload.resume(path),
                          checkpoint=lambda step: workload.save(path))
    losses = [workload.train_step(batch) for batch in lease]
    return losses, lease.report


@pytest.fixture
def one_thread():
    """One intra-op thread: with more, the BLAS library may split a reduction differently from one
    call to the next under load (a loss once differed at 1e-7 at step 4), and these tests compare
    losses bit for bit."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_checkpoint_round_trip_continues_the_loss_sequence(name, tmp_path, one_thread):
    reference = make_workload(name, 4, "tiny", seed=3)
    batches = reference.batches()
    expected = [reference.train_step(next(batches)) for _ in range(6)]

    path = tmp_path / "job.pt"
    first, report = leased_losses(make_workload(name, 4, "tiny", seed=3), 2, path)
    assert (report.start_step, report.step) == (0, 2)
    second, report = leased_losses(make_workload(name, 4, "tiny", seed=3), 4, path)
    assert (report.start_step, report.step) == (2, 6)
    assert first + second == expected
    resumed = make_workload(name, 4, "tiny", seed=3)
    assert resumed.restore(path) == 6
    assert all(torch.equal(a, b) for a, b in zip(resumed.model.state_dict().values(),
                                                  reference.model.state_dict().values()))


def test_checkpoints_are_refused_for_another_workload_or_when_unreadable(tmp_path):
    path = tmp_path / "job.pt"
    make_workload("resnet", 4, "tiny").save(path)
    with pytest.raises(CheckpointError, match="holds workload"):
        make_workload("resnet", 8, "tiny").restore(path)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="junk.pt: not a readable checkpoint"):
        make_workload("resnet", 4, "tiny").restore(tmp_path / "junk.pt")
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        make_workload("resnet", 4, "tiny").restore(tmp_path / "missing.pt")


def test_a_failed_save_leaves_the_previous_checkpoint_and_no_temporary_file(tmp_path):
    path = tmp_path / "job.pt"
    workload = make_workload("recommendation", 4, "tiny")
    workload.save(path)
    before = path.read_bytes()
    with pytest.raises(Exception):
        save_checkpoint({"model": lambda: None}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["job.pt"]


def test_seeds_fix_weights_and_ranks_pick_distinct_data():
    a, b = make_workload("transformer", 4, "tiny", seed=1), make_workload("transformer", 4, "tiny", seed=1, rank=1)
    assert all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))
    assert not torch.equal(a.next_batch()[0], b.next_batch()[0])
    c = make_workload("transformer", 4, "tiny", seed=2)
    assert not torch.equal(next(a.model.parameters()), next(c.model.parameters()))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_the_synthetic_tasks_are_learnable(name):
    workload = make_workload(name, 32, "tiny", seed=0)
    batches = workload.batches()
    losses = [workload.train_step(next(batches)) for _ in range(40)]
    assert np.mean(losses[-8:]) < 0.9 * np.mean(losses[:8])


def test_bad_workload_specs_are_named():
    with pytest.raises(ValueError, match="unknown workload 'vgg'"):
        WorkloadSpec("vgg", 4)
    with pytest.raises(ValueError, match="batch size"):
        WorkloadSpec("resnet", 0)
    with pytest.raises(ValueError, match="model size 'huge'"):
        WorkloadSpec("resnet", 4, "huge")


def test_train_lease_stops_at_the_deadline():
    report = train_lease(make_workload("resnet", 4, "tiny"), seconds=0.3)
    assert report.reason == "deadline" and report.steps > 0  # where it stops exactly: the lease tests' fake clock


def test_the_profiled_table_reads_back(tmp_path):
    specs = [WorkloadSpec("resnet", 4, "tiny"), WorkloadSpec("recommendation", 8, "tiny")]
    table = profile(specs, [1], CPU, steps=5, seconds=1.0, warmup=1)
    write_gavel_json(table, tmp_path / "table.json")
    back = read_gavel_json(tmp_path / "table.json")
    assert back.worker_types == ("cpu",)
    assert set(back.keys) == {("ResNet-8 (batch size 4)", 1), ("Recommendation-8 (batch size 8)", 1)}
    assert np.all(np.isfinite(back.isolated)) and np.all(back.isolated > 0)


def test_a_process_trains_on_one_thread_per_slot_or_the_cores_over_the_gpus():
    assert threads_per_gpu("cpu") == 1 and threads_per_gpu("cpu", cores=16, gpus=0) == 1
    assert [threads_per_gpu("cuda", cores=16, gpus=g) for g in (1, 2, 8, 32)] == [16, 8, 2, 1]


def test_the_profile_trains_on_the_threads_a_lease_trains_on(monkeypatch):
    """An H200 profile on 16 threads against leases on one overstated the Transformer's rate."""
    seen, previous, real = [], torch.get_num_threads(), torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (seen.append(n), real(n)))
    monkeypatch.setattr(profiler, "threads_per_gpu", lambda device_type: 2 if device_type == "cpu" else 0)
    profile([WorkloadSpec("resnet", 4, "tiny")], [1], CPU, steps=2, seconds=1.0, warmup=1)
    assert seen == [2, previous]


@pytest.mark.skipif(local_cpu_cores() < 2, reason="data-parallel profiling needs 2 CPU cores")
def test_data_parallel_measurement_on_two_processes():
    result = measure(WorkloadSpec("recommendation", 4, "tiny"), 2, CPU, steps=5, seconds=1.0, warmup=1)
    assert result.scale == 2 and result.steps_per_second > 0


def test_profile_command_writes_a_table_and_refuses_missing_devices(tmp_path):
    runner = CliRunner()
    out = tmp_path / "table.json"
    res = runner.invoke(app, ["profile", "--workloads", "transformer", "--batch-sizes", "2,4", "--model-size",
                              "tiny", "--gpus", "1", "--steps", "3", "--warmup", "1", "--device", "cpu",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert set(read_gavel_json(out).keys) == {("Transformer-1x32 (batch size 2)", 1),
                                              ("Transformer-1x32 (batch size 4)", 1)}
    assert set(json.loads(out.read_text())) == {"cpu"}
    written = out.read_bytes()
    again = runner.invoke(app, ["profile", "--workloads", "resnet", "--device", "cpu", "--out", str(out)])
    assert again.exit_code == 2 and again.output.strip() == (f"schedopt: error: --out {str(out)!r}: exists; give "
                                                             f"--overwrite to replace it, or another file name")
    assert out.read_bytes() == written
    again = runner.invoke(app, ["profile", "--workloads", "transformer", "--batch-sizes", "2", "--model-size", "tiny",
                                "--steps", "1", "--warmup", "0", "--device", "cpu", "--out", str(out), "--overwrite"])
    assert again.exit_code == 0, again.output
    assert set(read_gavel_json(out).keys) == {("Transformer-1x32 (batch size 2)", 1)}
    many = local_cpu_cores() + 1
    bad = runner.invoke(app, ["profile", "--gpus", f"1,{many}", "--device", "cpu", "--out", str(tmp_path / "x.json")])
    assert bad.exit_code == 2
    assert bad.output.strip() == (f"schedopt: error: --gpus: {many} GPUs requested, found 0 GPUs and "
                                  f"{local_cpu_cores()} CPU cores (a CPU profile runs at most one process per core)")
    assert not (tmp_path / "x.json").exists()
    bad = runner.invoke(app, ["profile", "--workloads", "resnet,vgg", "--out", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "--workloads" in bad.output and "vgg" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_a_data_parallel_lease_resumes_every_rank_exactly(tmp_path):
    """Two leases of 3 + 2 steps on 2 gloo processes end where one lease of 5 steps does:
    model, optimizer and every rank's batch stream continue across the checkpoint."""
    spec = WorkloadSpec("recommendation", 8, "tiny")
    split, whole = tmp_path / "split.pt", tmp_path / "whole.pt"
    first = train_data_parallel_lease(spec, "cpu", 2, checkpoint=split, steps=3, seconds=None)
    second = train_data_parallel_lease(spec, "cpu", 2, checkpoint=split, steps=2, seconds=None)
    assert (first.start_step, first.steps, second.start_step, second.steps) == (0, 3, 3, 2)
    train_data_parallel_lease(spec, "cpu", 2, checkpoint=whole, steps=5, seconds=None)
    a, b = load_checkpoint(split), load_checkpoint(whole)
    assert a["step"] == b["step"] == 5 and load_checkpoint(f"{split}.rank1")["step"] == 5
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
