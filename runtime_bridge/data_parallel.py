"""Data parallelism: one workload trained by ``scale`` local processes through
``torch.distributed`` (gloo on CPUs, NCCL on GPUs, one GPU per process), for the
profiler's throughput and for a multi-GPU job's lease.

Every process draws its own batches of the per-process batch size, so a step trains
``scale`` batches. All ranks run the same number of steps (a deadline seen by one rank
alone would leave the others waiting in an all-reduce). The profiler agrees on the count
after a warm-up from the slowest rank's step time; a lease lets rank 0's
:class:`~runtime_bridge.lease.LeaseIterator` decide before every step and broadcasts the
decision. Rank 0 saves the job's checkpoint (model, optimizer, its data RNG, step
counter); rank r > 0 keeps its own data RNG beside it (``<checkpoint>.rank<r>``), so a
resumed job continues every rank's batch stream.
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException

from .checkpoint import load_checkpoint, save_checkpoint
from .lease import LeaseIterator, LeaseReport
from .profiler import ProfileError
from .training import train_lease
from .workloads import WorkloadSpec, make_workload

RENDEZVOUS_TIMEOUT = timedelta(seconds=120)


def measure_data_parallel(spec: WorkloadSpec, device_type: str, scale: int, *, steps: int | None, seconds: float,
                          warmup: int, threads: int) -> float:
    """Steps/s of ``spec`` trained by ``scale`` processes on ``device_type`` (``cpu`` or
    ``cuda``), each CPU process with ``threads`` threads, for about ``seconds`` (at most
    ``steps`` steps where given) after ``warmup`` steps; a ProfileError says why a process failed.
    (Each step synchronizes through ``loss.item()``, so the timing covers GPU work.)"""
    with tempfile.TemporaryDirectory(prefix="schedopt-ddp-") as folder:
        why = _spawn(_worker, (asdict(spec), device_type, scale, steps, seconds, warmup, threads, folder), scale)
        if why is not None:
            raise ProfileError(f"data-parallel run of {spec.job_type} on {scale} processes failed: {why}")
        return json.loads((Path(folder) / "result.json").read_text())["steps_per_second"]


def _spawn(worker, args: tuple, scale: int) -> str | None:
    """Run ``worker(rank, *args)`` in ``scale`` spawned processes; the last line of a
    failed process's error, None when all succeeded."""
    try:
        mp.start_processes(worker, args=args, nprocs=scale, start_method="spawn")
    except ProcessException as exc:
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        return lines[-1] if lines else str(exc)
    return None


def _join(rank: int, device_type: str, scale: int, threads: int, folder: str) -> torch.device:
    """This process's device, with the process group of ``scale`` ranks joined (rendezvous
    in ``folder``): NCCL on GPU ``rank``, gloo on CPUs with ``threads`` threads."""
    torch.set_num_threads(threads)
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if device_type == "cuda" else "gloo", init_method=f"file://{folder}/rendezvous",
                            rank=rank, world_size=scale, timeout=RENDEZVOUS_TIMEOUT)
    return torch.device(device_type, rank) if device_type == "cuda" else torch.device("cpu")


def _worker(rank: int, spec: dict, device_type: str, scale: int, steps: int | None, seconds: float, warmup: int,
            threads: int, folder: str) -> None:
    _in_group(rank, device_type, scale, threads, folder, _measure, spec, steps, seconds, warmup)


def _in_group(rank: int, device_type: str, scale: int, threads: int, folder: str, body, *args) -> None:
    """``body(rank, device, *args, folder)`` in the process group of ``scale`` ranks, then leave it
    with every rank (:func:`_leave_together`, :func:`_leave`)."""
    device = _join(rank, device_type, scale, threads, folder)
    try:
        body(rank, device, *args, folder)
        _leave_together(rank, scale, folder)
    finally:
        _leave()


def _measure(rank: int, device: torch.device, spec: dict, steps: int | None, seconds: float, warmup: int,
             folder: str) -> None:
    workload = make_workload(**spec, device=device, rank=rank)
    workload.data_parallel()
    step_time = torch.tensor([train_lease(workload, steps=max(1, warmup)).seconds / max(1, warmup)])
    dist.all_reduce(step_time, op=dist.ReduceOp.MAX)
    timed = int(seconds / max(step_time.item(), 1e-9))
    count = max(1, timed if steps is None else min(steps, timed))
    dist.barrier()
    started = time.perf_counter()
    train_lease(workload, steps=count)
    dist.barrier()
    elapsed = time.perf_counter() - started
    if rank == 0:
        (Path(folder) / "result.json").write_text(json.dumps({"steps_per_second": count / elapsed}))


def _leave() -> None:
    """Free the training objects, then the process group, while the interpreter still runs: the
    ``DistributedDataParallel`` module sits in reference cycles and holds the group, so without a
    collection here the group's gloo threads were torn down during interpreter shutdown, the likely
    cause of a rank's rare abort (SIGABRT, "terminate called without an active exception")."""
    gc.collect()
    dist.destroy_process_group()


def _leave_together(rank: int, scale: int, folder: str) -> None:
    """Return once every rank has finished its last collective, so that none tears its
    connections down while a peer still drains them (gloo aborts that peer, SIGABRT:
    pytorch/gloo#155, a barrier followed by destruction). The handshake goes through a
    file store in ``folder``, not through the process group."""
    store = dist.FileStore(f"{folder}/leave", scale)
    store.set(f"left{rank}", "1")
    store.wait([f"left{r}" for r in range(scale)])


class LeaseFailedError(RuntimeError):
    """A process of a data-parallel lease failed (the message says why)."""


def train_data_parallel_lease(spec: WorkloadSpec, device_type: str, scale: int, *, checkpoint: str | Path,
                              steps: int | None, seconds: float | None, threads: int = 1,
                              save_to: str | Path | None = None) -> LeaseReport:
    """One lease of ``spec`` trained by ``scale`` processes (module doc): resume from
    ``checkpoint`` when it exists, train at most ``steps`` steps and about ``seconds``,
    checkpoint (to ``save_to`` where given, the ranks' files beside it); rank 0's report. A
    failed rank raises :class:`LeaseFailedError` and leaves the previous checkpoint in place
    (saves are atomic)."""
    with tempfile.TemporaryDirectory(prefix="schedopt-lease-") as folder:
        out = checkpoint if save_to is None else save_to
        args = (asdict(spec), device_type, scale, str(checkpoint), str(out), steps, seconds, threads, folder)
        why = _spawn(_lease_worker, args, scale)
        if why is not None:
            raise LeaseFailedError(f"data-parallel lease of {spec.job_type} on {scale} processes failed: {why}")
        return LeaseReport(**json.loads((Path(folder) / "report.json").read_text()))


def _lease_worker(rank: int, spec: dict, device_type: str, scale: int, checkpoint: str, save_to: str,
                  steps: int | None, seconds: float | None, threads: int, folder: str) -> None:
    _in_group(rank, device_type, scale, threads, folder, _lease, spec, checkpoint, save_to, steps, seconds)


def _lease(rank: int, device: torch.device, spec: dict, checkpoint: str, save_to: str, steps: int | None,
           seconds: float | None, folder: str) -> None:
    workload = make_workload(**spec, device=device, rank=rank)
    workload.resume(checkpoint)
    own_rng = Path(f"{checkpoint}.rank{rank}")
    if rank > 0 and own_rng.exists():
        saved = load_checkpoint(own_rng)
        if saved.get("step") == workload.step:  # else left by a lease whose checkpoint was not saved
            workload.generator.set_state(saved["data_rng"])
    workload.data_parallel()
    go = torch.zeros(1, dtype=torch.int64, device=device)
    if rank == 0:
        lease = LeaseIterator(workload.batches(), steps=steps, seconds=seconds, start_step=workload.step)
        for batch in lease:
            go.fill_(1)
            dist.broadcast(go, src=0)
            workload.train_step(batch)
        go.fill_(0)
        dist.broadcast(go, src=0)
    else:
        batches = workload.batches()
        while True:
            dist.broadcast(go, src=0)
            if not go.item():
                break
            workload.train_step(next(batches))
    dist.barrier()
    if rank == 0:
        workload.save(save_to)
        report = lease.report
        (Path(folder) / "report.json").write_text(json.dumps(asdict(report)))
    else:
        save_checkpoint({"step": workload.step, "data_rng": workload.generator.get_state()},
                        f"{save_to}.rank{rank}")
    dist.barrier()
