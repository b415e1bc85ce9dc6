"""``schedopt bench``: solve time against size for every program-based policy × backend.

One *case* is (policy, jobs, GPUs per type, worker types, seed, repetition); every backend
solves it. Jobs are sampled (``simulator.sample_jobs``, the case's seed) from the table; the
cluster has ``gpus_per_type`` GPUs of each worker type of the case's set (default: jobs / 4,
at least one), with co-located pairs for space-sharing policies. Before its first timed case,
each (policy, backend) pair solves one small instance (:data:`WARM_UP_JOBS` jobs, the sweep's
first worker-type set and seed) untimed, so that imports, first-call compilation and caches
are not charged to the first case.

Two ways of timing, one row per (case, backend) either way:

* a policy that is one program (Gavel's max-min fairness, makespan and throughput LPs) is
  built and solved directly: *build* (formulation -> solver-neutral model -> canonical
  arrays), the backend's *translate* and its *solve*, in wall and CPU seconds;
* every other program-based policy (water filling's level LPs and bottleneck MILPs,
  finish-time fairness' bisection LPs or conic program, the makespan bisection, the
  space-sharing LPs priced by column generation) runs its own ``allocate``: build, translate
  and solve are summed over the programs it solved (``programs``), and ``total_wall_s`` /
  ``total_cpu_s`` time the whole call. Sizes are those of its largest program (of the program
  its allocation keeps, for a policy that solves outside its ``_solve``).

``POLICY:VARIANT`` times another program of the same policy (:data:`VARIANTS`). A backend
that lacks a capability, is not installed or hits a license limit is a row with that
status and its one-line reason, never a crash. Heuristics (no program) and the round
planner ``shockwave`` (it plans from epoch profiles, not from an allocation snapshot) are
not timed here.

Files (:func:`write_outputs`): ``bench.csv`` and ``bench.parquet`` (one row per timed solve),
``bench_summary.csv`` (:func:`summary`: medians over seeds and repetitions, and the min and max
of the end-to-end time), ``bench.png`` (median end-to-end wall time against jobs, log-log, a band
from min to max, one line per backend and worker-type set, one panel per policy) and
``machine.json`` (CPU model, cores, load average, library versions; the caller adds the
repetitions and the warm-ups, :func:`run_info`). Rows of Gurobi backends are never written (the
pip license forbids publishing its timings).
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from allocators import POLICIES, Policy, ProgramClass, UnknownPolicyError, load
from allocators.base import FormulationPolicy
from allocators.gavel.finish_time_fairness import FinishTimeFairness
from allocators.gavel.max_sum_throughput import MaxSumThroughput
from allocators.gavel.min_total_duration import MinTotalDuration
from allocators.plugins import PolicyReferenceError
from allocators.registry import BUILT_IN
from allocators.round_plans import RoundPlanner
from formulations import AllocationProblem, max_sum_throughput, min_total_duration
from optim import CanonicalModel, LicenseLimitError, Model, OptimError, Result, SolveOptions, Status, solve
from optim.cvxpy_bridge import CvxpyProgram
from simulator import build_problem, parse_cluster, sample_jobs
from simulator.files import write_atomically
from simulator.throughputs import ThroughputTable

#: library versions recorded with every run
LIBRARIES = ("numpy", "scipy", "pandas", "highspy", "cvxpy", "clarabel", "scs", "osqp", "pyomo", "gurobipy")

FAMILY_MODULES = {MaxSumThroughput: max_sum_throughput, MinTotalDuration: min_total_duration}
#: families whose policy is one program ``module.build(problem, variant)``
ONE_PROGRAM = (FormulationPolicy, MaxSumThroughput, MinTotalDuration)
#: ``POLICY:VARIANT``: another program of the policy, by its constructor's parameters
VARIANTS: dict[type[Policy], dict[str, dict]] = {
    FinishTimeFairness: {"bisection": {"method": "bisection"}},
    MinTotalDuration: {"bisection": {"gavel_compat": True}},
}
#: column order of the written tables
COLUMNS = ("policy", "jobs", "gpus_per_type", "worker_types", "seed", "repeat", "backend", "programs", "rows", "cols",
           "nonzeros", "integers", "status", "objective", "bound", "gap", "build_s", "translate_s", "solve_s",
           "total_wall_s", "build_cpu_s", "solve_wall_s", "solve_cpu_s", "total_cpu_s", "solver_version", "message",
           "notes")
#: jobs of the instance each (policy, backend) pair solves untimed before its timed cases
WARM_UP_JOBS = 8
#: statuses that carry a solution worth plotting
SOLVED = (str(Status.OPTIMAL), str(Status.FEASIBLE), str(Status.TIME_LIMIT))


def _times_programs(cls: type[Policy]) -> bool:
    return cls.program is not ProgramClass.HEURISTIC and not issubclass(cls, RoundPlanner)


def bench_policies() -> list[str]:
    """What a sweep can time: every policy that solves programs built from an allocation
    snapshot, and ``POLICY:VARIANT`` for the other programs of some (see the module doc)."""
    names = [name for name, cls in POLICIES.items() if name in BUILT_IN and _times_programs(cls)]
    variants = [f"{name}:{variant}" for name in names for family, table in VARIANTS.items()
                if issubclass(POLICIES[name], family) for variant in table]
    return sorted(names + variants)


def _parts(spec: str) -> tuple[str, str]:
    """(policy, variant) of a bench name: ``POLICY:VARIANT`` for a built-in policy; anything else
    (``module:Class``, ``file.py:Class``, a plugin) is a policy reference without variant."""
    name, sep, variant = spec.rpartition(":")
    return (name, variant) if sep and name in BUILT_IN else (spec, "")


def _is_user_program(spec: str) -> bool:
    """``spec`` is a user's policy reference whose class solves programs from a snapshot."""
    if spec in BUILT_IN or _parts(spec)[1]:
        return False
    try:
        cls = load(spec)
    except PolicyReferenceError:
        raise  # a reference that does not load: its own one-line reason
    except UnknownPolicyError:
        return False
    return issubclass(cls, Policy) and _times_programs(cls)


def _not_timed(name: str) -> str:
    """Why ``name`` is not a policy a sweep can time."""
    try:
        cls = load(_parts(name)[0])
    except UnknownPolicyError:
        cls = None
    if cls is not None and cls.program is ProgramClass.HEURISTIC:
        return f"bench: policy {name!r} is a heuristic: there is no program to time"
    if cls is not None and issubclass(cls, RoundPlanner):
        return (f"bench: policy {name!r} plans rounds from epoch profiles, not from an allocation snapshot "
                f"(time it on its traces: python -m benchmarks.shockwave)")
    return (f"bench: policy {name!r} cannot be timed here; choose from {', '.join(bench_policies())}, or your own "
            f"(package.module:Class, path/to/file.py:Class)")


def policy_class(spec: str) -> type[Policy]:
    """The class behind a bench name (``POLICY`` or ``POLICY:VARIANT``)."""
    return load(_parts(spec)[0])


def is_one_program(spec: str) -> bool:
    """The bench name is a policy that solves exactly one program, timed directly."""
    cls = policy_class(spec)
    return spec in BUILT_IN and issubclass(cls, ONE_PROGRAM) and not cls.uses_pairs


def build_program(policy: str, problem) -> Model:
    """The program of a one-program policy for ``problem``."""
    cls = POLICIES[policy]
    module = cls.formulation if issubclass(cls, FormulationPolicy) else next(
        m for family, m in FAMILY_MODULES.items() if issubclass(cls, family))
    return module.build(problem, cls.variant)


class _KeepsPrograms:
    """Mixin for a policy class: ``solved`` lists (canonical program, result) of every
    program its ``allocate`` solved (each goes through the policy's ``_solve`` or, over classes,
    ``_solve_merged``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.solved: list[tuple[CanonicalModel, Result]] = []

    def _solve(self, model, *args, **kwargs):
        result = super()._solve(model, *args, **kwargs)
        if isinstance(model, CvxpyProgram):  # a cvxpy program with cones, solved by cvxpy: no model to size
            model = model.model
        if model is not None:
            self.solved.append((model.canonical() if isinstance(model, Model) else model, result))
        return result

    def _solve_merged(self, model, *args, **kwargs):
        result = super()._solve_merged(model, *args, **kwargs)
        self.solved.append((model.canonical(), result))
        return result


@functools.cache
def _keeping_programs(cls: type[Policy]) -> type[Policy]:
    return type(cls.__name__, (_KeepsPrograms, cls), {})


def make_bench_policy(spec: str, backend: str, options: SolveOptions):
    """The policy of bench name ``spec`` on ``backend``, keeping the programs it solves."""
    name, variant = _parts(spec)
    cls = load(name)
    params = next(table[variant] for family, table in VARIANTS.items() if issubclass(cls, family)) if variant else {}
    return _keeping_programs(cls)(backend, options, **params)


@dataclass(frozen=True)
class Case:
    policy: str
    jobs: int
    gpus_per_type: int
    worker_types: tuple[str, ...]
    seed: int
    repeat: int

    def problem(self, table: ThroughputTable) -> AllocationProblem:
        """The snapshot every backend solves (co-located pairs for space-sharing policies)."""
        cluster = parse_cluster(",".join(f"{t}={self.gpus_per_type}" for t in self.worker_types))
        return build_problem(cluster, sample_jobs(table, self.jobs, self.seed), table,
                             pairs=policy_class(self.policy).uses_pairs)


@dataclass(frozen=True)
class Sweep:
    """The grid: every combination of ``policies`` × ``jobs`` × ``gpus_per_type`` (None:
    jobs / 4) × ``worker_types`` (sets of worker types) × ``seeds`` × ``repeat``
    repetitions, each solved by every backend."""

    policies: tuple[str, ...]
    jobs: tuple[int, ...]
    backends: tuple[str, ...]
    worker_types: tuple[tuple[str, ...], ...]
    gpus_per_type: tuple[int | None, ...] = (None,)
    seeds: tuple[int, ...] = (0,)
    repeat: int = 1
    time_limit: float | None = None

    def __post_init__(self) -> None:
        known = set(bench_policies())
        for name in self.policies:
            if name not in known and not _is_user_program(name):
                raise ValueError(_not_timed(name))
        if not self.jobs or min(self.jobs) < 1:
            raise ValueError(f"bench: job counts must be >= 1, got {list(self.jobs)}")
        if any(g is not None and g < 1 for g in self.gpus_per_type):
            raise ValueError(f"bench: GPUs per type must be >= 1, got {list(self.gpus_per_type)}")
        if not self.worker_types or any(isinstance(s, str) or not s or len(set(s)) < len(s)
                                        for s in self.worker_types):
            raise ValueError(f"bench: worker types must be non-empty sets without repeats, got "
                             f"{list(self.worker_types)}")
        if self.repeat < 1:
            raise ValueError(f"bench: repeat must be >= 1, got {self.repeat}")
        if not self.backends:
            raise ValueError("bench: no backend to time")

    def cases(self) -> list[Case]:
        return [Case(policy, n, g if g is not None else max(1, n // 4), types, seed, rep)
                for policy in self.policies for n in self.jobs for g in self.gpus_per_type
                for types in self.worker_types for seed in self.seeds for rep in range(self.repeat)]

    def warm_up_case(self, policy: str) -> Case:
        """The instance ``policy`` is solved on, untimed, by each backend before its timed cases."""
        return Case(policy, WARM_UP_JOBS, max(1, WARM_UP_JOBS // 4), self.worker_types[0], self.seeds[0], 0)

    @property
    def num_solves(self) -> int:
        return len(self.cases()) * len(self.backends)


def _timed(fn: Callable):
    """(result, wall seconds, CPU seconds of this process) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def run(sweep: Sweep, table: ThroughputTable, on_row: Callable[[dict], None] | None = None,
        warmed: list[dict] | None = None) -> Iterator[dict]:
    """Yield one row per (case, backend), in grid order. Each (policy, backend) pair first solves
    :meth:`Sweep.warm_up_case` once, outside every row; ``warmed`` gets one record per warm-up."""
    options = SolveOptions(time_limit=sweep.time_limit)
    done: set[tuple[str, str]] = set()
    for case in sweep.cases():
        problem = case.problem(table)
        timer = time_program if is_one_program(case.policy) else time_policy
        for backend in sweep.backends:
            if (case.policy, backend) not in done:
                done.add((case.policy, backend))
                record = _warm_up(sweep.warm_up_case(case.policy), table, backend, options, timer)
                if warmed is not None:
                    warmed.append(record)
            row = {"policy": case.policy, "jobs": case.jobs, "gpus_per_type": case.gpus_per_type,
                   "worker_types": "+".join(case.worker_types), "seed": case.seed, "repeat": case.repeat,
                   "backend": backend, **timer(case.policy, problem, backend, options)}
            if on_row is not None:
                on_row(row)
            yield row


def _warm_up(case: Case, table: ThroughputTable, backend: str, options: SolveOptions, timer: Callable) -> dict:
    """Solve ``case`` on ``backend`` once, for nothing but its side effects; what was solved."""
    wall = time.perf_counter()
    status = timer(case.policy, case.problem(table), backend, options).get("status")
    return {"policy": case.policy, "backend": backend, "jobs": case.jobs, "gpus_per_type": case.gpus_per_type,
            "worker_types": "+".join(case.worker_types), "seed": case.seed, "status": status,
            "wall_s": round(time.perf_counter() - wall, 6)}


def run_info(sweep: Sweep, warmed: list[dict]) -> dict:
    """What ``machine.json`` says of the run besides the machine: repetitions, seeds, warm-ups (a
    Gurobi warm-up without its time: the pip license forbids publishing it)."""
    pairs = [{k: v for k, v in r.items() if k != "wall_s" or "gurobi" not in r["backend"].lower()} for r in warmed]
    return {"repeat": sweep.repeat, "seeds": list(sweep.seeds),
            "warm_up": {"untimed": "one solve per (policy, backend) before its timed cases; its time is in no row",
                        "pairs": pairs}}


def _refused(exc: OptimError) -> dict:
    """The row fields of a backend that refused or failed (a capability missing, not
    installed, a license limit)."""
    status = str(Status.LICENSE_LIMIT) if isinstance(exc, LicenseLimitError) else type(exc).__name__
    return {"status": status, "message": str(exc)}


def _sizes(canon: CanonicalModel) -> dict:
    return {"rows": canon.num_rows, "cols": canon.num_vars, "nonzeros": canon.num_nonzeros,
            "integers": canon.num_integers}


def time_program(policy: str, problem: AllocationProblem, backend: str, options: SolveOptions) -> dict:
    """Build, translate and solve the one program of ``policy``, each timed."""
    canon, build_wall, build_cpu = _timed(lambda: build_program(policy, problem).canonical())
    row = {"programs": 1, **_sizes(canon), "build_s": build_wall, "build_cpu_s": build_cpu}
    try:
        result, wall, cpu = _timed(lambda: solve(canon, backend, options, check=False))
    except OptimError as exc:  # capability missing, backend not installed: a row, not a crash
        return row | _refused(exc)
    timings = result.timings
    return row | {"status": str(result.status), "objective": result.objective, "bound": result.bound,
                  "gap": _gap(result.objective, result.bound), "translate_s": timings.translate,
                  "solve_s": timings.solve, "solve_wall_s": wall, "solve_cpu_s": cpu,
                  "total_wall_s": build_wall + wall, "total_cpu_s": build_cpu + cpu,
                  "solver_version": result.solver_version,
                  "message": "" if result.status is Status.OPTIMAL else result.message}


def time_policy(policy: str, problem: AllocationProblem, backend: str, options: SolveOptions) -> dict:
    """Run the policy's ``allocate``: build / translate / solve summed over the programs it
    solved, the whole call timed, sizes of its largest program. Status: the first program's
    that ended neither optimal nor infeasible (a bisection's infeasible probes are answers),
    else optimal (infeasible if no program was feasible)."""
    try:
        agent = make_bench_policy(policy, backend, options)
    except OptimError as exc:  # the policy's program class needs what the backend lacks
        return {"programs": 0} | _refused(exc)
    try:
        allocation, wall, cpu = _timed(lambda: agent.allocate(problem))
    except OptimError as exc:
        return {"programs": len(agent.solved)} | _refused(exc)
    row = {"total_wall_s": wall, "total_cpu_s": cpu, "objective": allocation.objective,
           "notes": "; ".join(allocation.notes)}
    solved = agent.solved or _kept_program(allocation)
    if not solved:
        return row | {"programs": 0, "status": "untimed", "message": f"{policy} reported no program it solved"}
    programs = [canon for canon, _ in solved]
    results = [result for _, result in solved]
    trouble = next((r for r in results if r.status not in (Status.OPTIMAL, Status.INFEASIBLE)), None)
    answered = Status.OPTIMAL if any(r.status is Status.OPTIMAL for r in results) else Status.INFEASIBLE
    return row | _sizes(max(programs, key=lambda c: c.num_vars)) | {
        "programs": len(results), "build_s": sum(r.timings.build for r in results),
        "translate_s": sum(r.timings.translate for r in results), "solve_s": sum(r.timings.solve for r in results),
        "status": str(trouble.status if trouble else answered), "message": trouble.message if trouble else "",
        "gap": max((r.gap for r in results if r.gap is not None), default=None),
        "solver_version": results[-1].solver_version}


def _kept_program(allocation) -> list[tuple[CanonicalModel, Result]]:
    """The (program, result) an allocation keeps, for a policy that solves outside its
    ``_solve`` (as space-sharing policies may, generating their pair columns)."""
    if allocation.result is None or allocation.program is None:
        return []
    return [(allocation.program, allocation.result)]


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
    """Per (policy, jobs, GPUs per type, worker types, backend), over seeds and repetitions
    (``runs``): median times and program counts, and the spread of the end-to-end time
    (``total_wall_min_s``, ``total_wall_max_s``)."""
    keys = ["policy", "jobs", "gpus_per_type", "worker_types", "backend"]
    cols = [c for c in ("programs", "build_s", "translate_s", "solve_s", "total_wall_s") if c in frame]
    groups = frame.groupby(keys, sort=False)
    agg = groups[cols].median()
    agg["runs"] = groups.size()
    if "total_wall_s" in frame:
        agg["total_wall_min_s"] = groups["total_wall_s"].min()
        agg["total_wall_max_s"] = groups["total_wall_s"].max()
    agg["status"] = groups["status"].agg(lambda s: "/".join(sorted(set(s))))
    agg["objective"] = groups["objective"].median() if "objective" in frame else np.nan
    return agg.reset_index()


def write_outputs(frame: pd.DataFrame, info: dict, out: Path) -> list[Path]:
    """``bench.csv``, ``bench.parquet``, ``bench_summary.csv``, ``bench.png``, ``machine.json`` in
    ``out`` (Gurobi rows left out)."""
    rows = publishable(frame)
    rows = rows[[c for c in COLUMNS if c in rows] + [c for c in rows if c not in COLUMNS]]
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "bench.csv", out / "bench.parquet", out / "bench_summary.csv", out / "bench.png",
             out / "machine.json"]
    write_atomically(paths[0], rows.to_csv(index=False))
    parquet = io.BytesIO()
    rows.to_parquet(parquet, index=False)
    write_atomically(paths[1], parquet.getvalue())
    write_atomically(paths[2], summary(rows).to_csv(index=False))
    plot(rows, paths[3])
    write_atomically(paths[4], json.dumps(info, indent=2) + "\n")
    return paths


def plot(frame: pd.DataFrame, path: Path) -> None:
    """Median end-to-end wall time against jobs with a band from min to max, log-log, one panel per
    policy, one colour per backend and one line style per worker-type set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    solved = frame[frame["status"].isin(SOLVED)]
    policies = list(dict.fromkeys(frame["policy"])) or [""]
    colours = {b: plt.cm.tab10(i % 10) for i, b in enumerate(dict.fromkeys(frame["backend"]))}
    styles = {t: ("-", "--", ":", "-.")[i % 4] for i, t in enumerate(dict.fromkeys(frame["worker_types"]))}
    ncols = min(4, len(policies))
    nrows = math.ceil(len(policies) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.8 * nrows), squeeze=False)
    for ax in axes.flat[len(policies):]:
        ax.set_visible(False)
    for ax, policy in zip(axes.flat, policies):
        part = solved[solved["policy"] == policy]
        for (backend, types), group in part.groupby(["backend", "worker_types"], sort=False):
            spread = group.groupby("jobs")["total_wall_s"].agg(["median", "min", "max"])
            ax.plot(spread.index, spread["median"], marker="o", color=colours[backend], linestyle=styles[types],
                    label=backend if len(styles) == 1 else f"{backend} {types}")
            ax.fill_between(spread.index, spread["min"], spread["max"], color=colours[backend], alpha=0.2,
                            linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("jobs")
        ax.set_ylabel("end to end (s, wall; median, min-max)")
        ax.set_title(policy, fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        if len(part):
            ax.legend(fontsize=6)
    fig.tight_layout()
    _save_small_png(fig, path)
    plt.close(fig)


def _save_small_png(fig, path: Path) -> None:
    """``fig`` as a PNG of 64 colours (a quarter of the bytes of matplotlib's RGBA), atomically."""
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=80, format="png")
    small = io.BytesIO()
    Image.open(buffer).convert("RGB").quantize(64).save(small, format="png", optimize=True)
    write_atomically(path, small.getvalue())
