"""``schedopt bench``: solve time against size for every program-based policy × backend.

One *case* is (policy, jobs, GPUs per type, worker types, seed, repetition); every backend
solves it. Jobs are sampled (``simulator.sample_jobs``, the case's seed) from the table; the
cluster has ``gpus_per_type`` GPUs of each chosen worker type (default: jobs / 4, at least
one). Each row times, in wall and CPU seconds, the model's *build* (formulation ->
solver-neutral model -> canonical arrays), the backend's *translate* and its *solve*, and
records the program's size (rows, columns, non-zeros, integers), the status, objective,
bound and gap. A backend that lacks a capability, is not installed or hits a license limit
is a row with that status and its one-line reason, never a crash.

Files (:func:`write_outputs`): ``bench.csv`` and ``bench.parquet`` (one row per solve),
``bench.png`` (median solve wall time against jobs, log-log, one line per backend, one panel
per policy) and ``machine.json`` (CPU model, cores, load average, library versions). Rows of
Gurobi backends are never written (the pip license forbids publishing its timings).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from allocators import POLICIES
from allocators.base import FormulationPolicy
from allocators.max_sum_throughput import MaxSumThroughput
from allocators.min_total_duration import MinTotalDuration
from formulations import max_sum_throughput, min_total_duration
from optim import Model, OptimError, SolveOptions, Status, solve
from simulator import build_problem, parse_cluster, sample_jobs
from simulator.files import write_atomically
from simulator.throughputs import ThroughputTable

#: library versions recorded with every run
LIBRARIES = ("numpy", "scipy", "pandas", "highspy", "cvxpy", "clarabel", "scs", "osqp", "pyomo", "gurobipy")


FAMILY_MODULES = {MaxSumThroughput: max_sum_throughput, MinTotalDuration: min_total_duration}
#: families whose policy is one program ``module.build(problem, variant)``
ONE_PROGRAM = (FormulationPolicy, MaxSumThroughput, MinTotalDuration)


def bench_policies() -> list[str]:
    """Policies a sweep can time: one program each, built from the problem alone (space-sharing
    policies are priced by column generation: ``python -m benchmarks.packed``; the iterated
    programs of water filling and finish-time fairness are timed whole by ``schedopt solve``)."""
    return sorted(name for name, cls in POLICIES.items() if issubclass(cls, ONE_PROGRAM) and not cls.uses_pairs)


def build_program(policy: str, problem) -> Model:
    """The policy's program for ``problem``."""
    cls = POLICIES[policy]
    module = cls.formulation if issubclass(cls, FormulationPolicy) else next(
        m for family, m in FAMILY_MODULES.items() if issubclass(cls, family))
    return module.build(problem, cls.variant)


@dataclass(frozen=True)
class Case:
    policy: str
    jobs: int
    gpus_per_type: int
    worker_types: tuple[str, ...]
    seed: int
    repeat: int


@dataclass(frozen=True)
class Sweep:
    """The grid: every combination of ``jobs`` × ``gpus_per_type`` (None: jobs / 4) ×
    ``policies`` × ``seeds`` × ``repeat`` repetitions, each solved by every backend."""

    policies: tuple[str, ...]
    jobs: tuple[int, ...]
    backends: tuple[str, ...]
    worker_types: tuple[str, ...]
    gpus_per_type: tuple[int | None, ...] = (None,)
    seeds: tuple[int, ...] = (0,)
    repeat: int = 1
    time_limit: float | None = None

    def __post_init__(self) -> None:
        known = set(bench_policies())
        for name in self.policies:
            if name not in known:
                raise ValueError(f"bench: policy {name!r} cannot be timed here; choose from {', '.join(sorted(known))}"
                                 + (" (space-sharing policies: python -m benchmarks.packed)"
                                    if name in POLICIES and POLICIES[name].uses_pairs else ""))
        if not self.jobs or min(self.jobs) < 1:
            raise ValueError(f"bench: job counts must be >= 1, got {list(self.jobs)}")
        if any(g is not None and g < 1 for g in self.gpus_per_type):
            raise ValueError(f"bench: GPUs per type must be >= 1, got {list(self.gpus_per_type)}")
        if self.repeat < 1:
            raise ValueError(f"bench: repeat must be >= 1, got {self.repeat}")
        if not self.backends:
            raise ValueError("bench: no backend to time")

    def cases(self) -> list[Case]:
        return [Case(policy, n, g if g is not None else max(1, n // 4), self.worker_types, seed, rep)
                for policy in self.policies for n in self.jobs for g in self.gpus_per_type
                for seed in self.seeds for rep in range(self.repeat)]

    @property
    def num_solves(self) -> int:
        return len(self.cases()) * len(self.backends)


def _timed(fn: Callable):
    """(result, wall seconds, CPU seconds of this process) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run(sweep: Sweep, table: ThroughputTable, on_row: Callable[[dict], None] | None = None) -> Iterator[dict]:
    """Yield one row per (case, backend), in grid order."""
    options = SolveOptions(time_limit=sweep.time_limit)
    for case in sweep.cases():
        cluster = parse_cluster(",".join(f"{t}={case.gpus_per_type}" for t in case.worker_types))
        problem = build_problem(cluster, sample_jobs(table, case.jobs, case.seed), table)
        for backend in sweep.backends:
            row = {"policy": case.policy, "jobs": case.jobs, "gpus_per_type": case.gpus_per_type,
                   "worker_types": "+".join(case.worker_types), "seed": case.seed, "repeat": case.repeat,
                   "backend": backend}
            canon, build_wall, build_cpu = _timed(lambda: build_program(case.policy, problem).canonical())
            row.update(rows=canon.num_rows, cols=canon.num_vars, nonzeros=canon.num_nonzeros,
                       integers=canon.num_integers, build_s=build_wall, build_cpu_s=build_cpu)
            try:
                result, wall, cpu = _timed(lambda: solve(canon, backend, options, check=False))
            except OptimError as exc:  # capability missing, backend not installed: a row, not a crash
                row.update(status=type(exc).__name__, message=str(exc))
            else:
                timings = result.timings
                row.update(status=str(result.status), objective=result.objective, bound=result.bound,
                           gap=_gap(result.objective, result.bound), translate_s=timings.translate,
                           solve_s=timings.solve, solve_wall_s=wall, solve_cpu_s=cpu,
                           solver_version=result.solver_version,
                           message="" if result.status is Status.OPTIMAL else result.message)
            if on_row is not None:
                on_row(row)
            yield row


def _gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return abs(bound - objective) / max(1.0, abs(objective))


def machine() -> dict:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = None
    return {"cpu": cpu, "cores": os.cpu_count(), "load_average": list(os.getloadavg()),
            "python": platform.python_version(), "platform": platform.platform(), "libraries": versions}


def publishable(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows that may be written: no Gurobi backend (pip license terms)."""
    return frame[~frame["backend"].str.contains("gurobi", case=False)]


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Median times per (policy, jobs, GPUs per type, backend) over seeds and repetitions."""
    keys = ["policy", "jobs", "gpus_per_type", "backend"]
    cols = [c for c in ("build_s", "translate_s", "solve_s", "solve_wall_s") if c in frame]
    agg = frame.groupby(keys, sort=False)[cols].median()
    agg["status"] = frame.groupby(keys, sort=False)["status"].agg(lambda s: "/".join(sorted(set(s))))
    agg["objective"] = frame.groupby(keys, sort=False)["objective"].median() if "objective" in frame else np.nan
    return agg.reset_index()


def write_outputs(frame: pd.DataFrame, info: dict, out: Path) -> list[Path]:
    """``bench.csv``, ``bench.parquet``, ``bench.png``, ``machine.json`` in ``out`` (Gurobi rows left out)."""
    rows = publishable(frame)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "bench.csv", out / "bench.parquet", out / "bench.png", out / "machine.json"]
    write_atomically(paths[0], rows.to_csv(index=False))
    tmp = paths[1].with_suffix(".parquet.tmp")
    rows.to_parquet(tmp, index=False)
    tmp.replace(paths[1])
    plot(rows, paths[2])
    write_atomically(paths[3], json.dumps(info, indent=2) + "\n")
    return paths


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Median solve wall time against jobs, log-log, one line per backend, one panel per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    solved = frame[frame["status"].isin([str(Status.OPTIMAL), str(Status.FEASIBLE), str(Status.TIME_LIMIT)])]
    policies = list(dict.fromkeys(frame["policy"]))
    fig, axes = plt.subplots(1, max(1, len(policies)), figsize=(5.5 * max(1, len(policies)), 4), squeeze=False)
    for ax, policy in zip(axes[0], policies):
        part = solved[solved["policy"] == policy]
        for backend, group in part.groupby("backend", sort=True):
            med = group.groupby("jobs")["solve_wall_s"].median()
            ax.plot(med.index, med.values, marker="o", label=backend)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("jobs")
        ax.set_ylabel("solve time (s, wall)")
        ax.set_title(policy)
        ax.grid(True, which="both", alpha=0.3)
        if len(part):
            ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path.with_suffix(".png.tmp")
    fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    tmp.replace(path)
