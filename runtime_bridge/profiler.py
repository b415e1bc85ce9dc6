"""The throughput profiler: steps/s of reference workloads per (job type, scale) on the
hardware at hand, as a throughput table (``simulator.ThroughputTable``) whose one worker
type is the device profiled (``cpu``, or the GPU's short name such as ``h100``).

Scale 1 trains in this process; scale ``n > 1`` trains data-parallel in ``n`` local
processes (:mod:`runtime_bridge.data_parallel`), one GPU each, or on a machine without
GPUs ``n`` CPU processes. Every process trains on :func:`threads_per_gpu` threads, as
``schedopt run`` leases it (one on a CPU: an emulated GPU slot is one core). A scale the
machine cannot hold is refused, never estimated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import torch

from simulator.throughputs import ThroughputTable

from .training import train_lease
from .workloads import WorkloadSpec, make_workload


class ProfileError(ValueError):
    """A profile the machine cannot run as asked (missing devices, bad options)."""


@dataclass(frozen=True)
class Measurement:
    """Steps/s of one job type at one scale (0 where the model does not fit the device)."""

    spec: WorkloadSpec
    scale: int
    steps_per_second: float
    note: str = ""


def resolve_device(device: str) -> torch.device:
    """``auto`` (a GPU where there is one, else the CPU), ``cpu`` or ``cuda``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device not in ("cpu", "cuda"):
        raise ProfileError(f"--device {device!r}: expected auto, cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise ProfileError("--device cuda: no GPU visible to PyTorch (torch.cuda.is_available() is False)")
    return torch.device(device)


def worker_type(device: torch.device) -> str:
    """The table's name for ``device``: ``cpu``, or the GPU model in lower case
    (``NVIDIA H100 80GB HBM3`` -> ``h100``; a name without such a token is slugged whole)."""
    if device.type == "cpu":
        return "cpu"
    name = torch.cuda.get_device_name(device)
    token = re.search(r"\b([A-Z]+\d+[A-Z]*)\b", name)
    return token.group(1).lower() if token else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def local_cpu_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def threads_per_gpu(device_type: str, cores: int | None = None, gpus: int | None = None) -> int:
    """CPU threads of one process training on one GPU, the same in a profile and in every lease
    (a profile measured on more threads than a lease trains with overstates its rate): on CPUs 1,
    an emulated GPU slot being one core; on GPUs the machine's ``cores`` shared evenly among its
    ``gpus`` (default: this machine's), as when every GPU runs a lease."""
    if device_type == "cpu":
        return 1
    cores = local_cpu_cores() if cores is None else cores
    gpus = torch.cuda.device_count() if gpus is None else gpus
    return max(1, cores // max(1, gpus))


def check_scales(scales: Iterable[int], device: torch.device) -> None:
    """Refuse a scale this machine cannot run: ``N GPUs requested, found M``."""
    for scale in scales:
        if scale < 1:
            raise ProfileError(f"--gpus: scale must be >= 1, got {scale}")
        if device.type == "cuda" and scale > torch.cuda.device_count():
            raise ProfileError(f"--gpus: {scale} GPUs requested, found {torch.cuda.device_count()}")
        if device.type == "cpu" and scale > local_cpu_cores():
            raise ProfileError(f"--gpus: {scale} GPUs requested, found 0 GPUs and {local_cpu_cores()} CPU cores "
                               "(a CPU profile runs at most one process per core)")


def measure(spec: WorkloadSpec, scale: int, device: torch.device, *, steps: int | None = None,
            seconds: float = 5.0, warmup: int = 3) -> Measurement:
    """Train ``spec`` at ``scale`` for ``warmup`` steps, then time about ``seconds`` (at most
    ``steps`` steps where given); a model that runs out of GPU memory measures 0 (cannot run
    there). A measurement as long as a lease: on a GPU, 50 steps of a small model last 0.3 s and
    were off a lease's rate by -25 to +30 %."""
    try:
        if scale == 1:
            workload = make_workload(spec.name, spec.batch_size, spec.model_size, spec.seed, device=device)
            train_lease(workload, steps=warmup)
            rate = train_lease(workload, steps=steps, seconds=seconds).steps_per_second
        else:
            from .data_parallel import measure_data_parallel

            rate = measure_data_parallel(spec, device.type, scale, steps=steps, seconds=seconds, warmup=warmup,
                                         threads=threads_per_gpu(device.type))
    except torch.cuda.OutOfMemoryError:
        return Measurement(spec, scale, 0.0, "out of GPU memory")
    return Measurement(spec, scale, rate)


def profile(specs: Iterable[WorkloadSpec], scales: Iterable[int], device: torch.device, *,
            steps: int | None = None, seconds: float = 5.0, warmup: int = 3, name: str | None = None,
            on_measurement: Callable[[Measurement], None] | None = None) -> ThroughputTable:
    """Measure every ``spec`` at every scale on ``device``; the throughput table, with the
    worker type ``name`` (default: :func:`worker_type`). Every process trains on
    :func:`threads_per_gpu` threads, as ``schedopt run`` leases it: one on a CPU (an emulated GPU
    slot is one core), the machine's cores over its GPUs on GPUs."""
    specs, scales = list(specs), sorted(set(scales))
    check_scales(scales, device)
    if len({spec.job_type for spec in specs}) != len(specs):
        raise ProfileError("the same job type is profiled twice (repeated workload or batch size)")
    keys, rates = [], []
    previous = torch.get_num_threads()
    torch.set_num_threads(threads_per_gpu(device.type))
    try:
        for scale in scales:
            for spec in specs:
                result = measure(spec, scale, device, steps=steps, seconds=seconds, warmup=warmup)
                if on_measurement is not None:
                    on_measurement(result)
                keys.append((spec.job_type, scale))
                rates.append(result.steps_per_second)
    finally:
        torch.set_num_threads(previous)
    label = name or worker_type(device)
    isolated = np.asarray(rates, dtype=float).reshape(-1, 1)
    return ThroughputTable((label,), tuple(keys), isolated, np.full_like(isolated, np.nan),
                           source=f"profile on {label}")
