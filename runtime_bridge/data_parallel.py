"""Data-parallel throughput: one workload trained by ``scale`` local processes through
``torch.distributed`` (gloo on CPUs, NCCL on GPUs, one GPU per process).

Every process draws its own batches of the per-process batch size, so a step trains
``scale`` batches. All ranks run the same number of steps (a deadline seen by one rank
alone would leave the others waiting in an all-reduce): the count is agreed after the
warm-up from the slowest rank's step time.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from .profiler import ProfileError
from .training import train_lease
from .workloads import WorkloadSpec, make_workload

RENDEZVOUS_TIMEOUT = timedelta(seconds=120)


def measure_data_parallel(spec: WorkloadSpec, device_type: str, scale: int, *, steps: int, seconds: float,
                          warmup: int, threads: int) -> float:
    """Steps/s of ``spec`` trained by ``scale`` processes on ``device_type`` (``cpu`` or
    ``cuda``), each CPU process with ``threads`` threads, for at most ``steps`` steps and
    about ``seconds`` after ``warmup`` steps; a ProfileError says why a process failed.
    (Each step synchronizes through ``loss.item()``, so the timing covers GPU work.)"""
    with tempfile.TemporaryDirectory(prefix="schedopt-ddp-") as folder:
        args = (asdict(spec), device_type, scale, steps, seconds, warmup, threads, folder)
        try:
            mp.start_processes(_worker, args=args, nprocs=scale, start_method="spawn")
        except mp.ProcessException as exc:
            lines = [line for line in str(exc).strip().splitlines() if line.strip()]
            raise ProfileError(f"data-parallel run of {spec.job_type} on {scale} processes failed: "
                               f"{lines[-1] if lines else exc}") from None
        return json.loads((Path(folder) / "result.json").read_text())["steps_per_second"]


def _worker(rank: int, spec: dict, device_type: str, scale: int, steps: int, seconds: float, warmup: int,
            threads: int, folder: str) -> None:
    torch.set_num_threads(threads)
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    device = torch.device(device_type, rank) if device_type == "cuda" else torch.device("cpu")
    dist.init_process_group("nccl" if device_type == "cuda" else "gloo", init_method=f"file://{folder}/rendezvous",
                            rank=rank, world_size=scale, timeout=RENDEZVOUS_TIMEOUT)
    try:
        workload = make_workload(**spec, device=device, rank=rank)
        workload.data_parallel()
        step_time = torch.tensor([train_lease(workload, steps=max(1, warmup)).seconds / max(1, warmup)])
        dist.all_reduce(step_time, op=dist.ReduceOp.MAX)
        count = max(1, min(steps, int(seconds / max(step_time.item(), 1e-9))))
        dist.barrier()
        started = time.perf_counter()
        train_lease(workload, steps=count)
        dist.barrier()
        elapsed = time.perf_counter() - started
        if rank == 0:
            (Path(folder) / "result.json").write_text(json.dumps({"steps_per_second": count / elapsed}))
    finally:
        dist.destroy_process_group()

