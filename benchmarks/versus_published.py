"""schedopt against the published Gavel code, side by side in one run on this machine.

    python -m benchmarks.versus_published --gavel DIR [--data ../shared/data] [--jobs 64 256 ...]
        [--kinds table distinct-over distinct-under] [--policies max_min_fairness_perf ...]
        [--solvers auto block] [--published-max-jobs 100000] [--replays --gavel-python PYTHON] [--pairs 3]

DIR is a checkout of stanford-futuredata/gavel that the user supplies (it is never copied into
this project). Two parts:

- **Policies.** Random instances of m jobs of Gavel's multi-GPU mix (1.8-2.1 GPUs a job on
  average) on the 3 worker types of ``gavel/simulation_throughputs.json``, of three kinds
  (``--kinds``, :func:`instance`; every job also has steps left and seconds since arrival):

  - ``table``: each job runs at its table row, weight 1, m / 2 GPUs of each type. Thousands of
    jobs are a few dozen classes of equal jobs, which ``highs`` solves once each.
  - ``distinct-over``: as users' clusters are: per-job measured rates (the table row times an
    independent U(0.9, 1.1) factor per job and type, so no two jobs are equal), weights drawn
    from {1, 2, 4}, round(m / 4) GPUs of each type: 0.75 GPUs per job (running every job's gang
    at once would take 2.4-2.7 times the GPUs there are).
  - ``distinct-under``: the same rates and weights on m / 2 GPUs of each type: 1.5 GPUs per job
    (every gang at once: 1.2-1.4 times the GPUs, as ``table``).

  Each goes through Gavel's own policy classes (``scheduler/policies``: cvxpy + ECOS,
  ``get_allocation``; the weights as its ``priority_weights``: its max-min policy divides job i's
  normalized throughput by w_i, its FTF takes them unused, its throughput and makespan policies
  take none, all as ours) and through ours (``make_policy(name, solver).allocate``), each timed
  end to end (the median of ``--repeat`` calls; a solver that takes the program over every job
  itself only up to ``--unmerged-max-jobs``; ours after one untimed call, which in a new process
  imports numba and loads the compiled kernels, 0.3 s). Both allocations are scored with the program's own
  objective: the max-min level ``min_i k_i thr_i(x)``, the total throughput ``Σ T x``, the
  makespan ``max_i R_i / thr_i(x)`` (Gavel's makespan policy bisects to within 5 %, so there ours
  may be lower), or the worst finish-time ratio ``max_i rho_i(x)`` (a first call: no cumulative
  isolated time). Gavel is run up to ``--published-max-jobs`` jobs (finish-time fairness: 16,384).
- **Replays** (``--replays``): the two continuous-arrival traces (``multi_lam1800`` jobs 100-299,
  ``single_lam900`` jobs 100-399, 36:36:36, ``max_min_fairness_perf``, seed 0) as whole processes:
  ``schedopt simulate --gavel-compat`` against the published
  ``scripts/drivers/simulate_scheduler_with_trace.py`` run by ``--gavel-python`` (an interpreter
  with its dependencies: cvxpy, ecos, grpcio, matrix_completion, scikit-learn, psutil, and
  ``make rpc_stubs`` done in DIR/scheduler). ``--pairs`` runs alternate; CPU seconds are the
  children's user + system time. Both code bases are byte-compiled first, and the runs write
  bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says: a user's runs do not compile their sources.

``--shapes`` also runs Gavel and ours side by side on distinct jobs of 3, 6 and 10 worker types at
0.2, 0.5, 0.75 and 2 GPUs per job (:func:`shape_rows`, ``..._shapes.csv``).

``--large JOBS TYPES`` (repeatable) also times ours alone on JOBS jobs of TYPES worker types (rates
from the table's three, scaled per type; no published run): jobs of a few equal types with HiGHS
(which solves them merged) and the default solver, and distinct jobs with the default solver.

Writes ``benchmarks/results/versus_published.csv`` (policies, one row per kind, policy and size;
rows not run this time are kept), ``..._large.csv`` and
``benchmarks/results/versus_published_replays.csv``, and prints the machine.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import itertools
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from allocators import make_policy
from formulations import AllocationProblem, finish_time_fairness
from formulations.max_min_fairness import normalized_coefficients
from optim import tally
from schedopt.bench import machine
from simulator import build_problem, parse_cluster, read_gavel_json, sample_jobs
from simulator.simulate import default_solver

from .rows import write_rows

#: ours → (Gavel's module, class, the objective both are scored with)
POLICIES = {
    "max_min_fairness_perf": ("max_min_fairness", "MaxMinFairnessPolicyWithPerf", "max-min level"),
    "max_sum_throughput_perf": ("max_sum_throughput", "ThroughputSumWithPerf", "total throughput"),
    "min_total_duration_perf": ("min_total_duration", "MinTotalDurationPolicyWithPerf", "makespan (s)"),
    "finish_time_fairness_perf": ("finish_time_fairness", "FinishTimeFairnessPolicyWithPerf", "worst FTF rho"),
}
JOBS = (64, 256, 1024, 4096, 16384, 100_000)
#: instance kinds (module docstring)
KINDS = ("table", "distinct-over", "distinct-under")
#: the most jobs Gavel's class is timed at, where less than --published-max-jobs: its finish-time
#: fairness builds one cvxpy expression per job (17 s a call at 4,096 jobs, 2.9 s at 1,024)
PUBLISHED_LIMIT = {"finish_time_fairness_perf": 16384}
REPLAYS = (("multi_lam1800.trace", 100, 300, True), ("single_lam900.trace", 100, 400, False))
RESULTS = Path(__file__).parent / "results"
#: this project's packages, byte-compiled before the replays are timed
PACKAGES = ("schedopt", "benchmarks", "runtime_bridge", "simulator", "allocators", "formulations", "optim")


def instance(table, jobs: int, seed: int, kind: str = "table") -> AllocationProblem:
    """m jobs of Gavel's multi-GPU mix on the table's types, of ``kind`` (module docstring); the
    kinds of one seed share the jobs' models, scale factors, steps left and arrival times."""
    each = max(8, round(0.25 * jobs) if kind == "distinct-over" else jobs // 2)
    cluster = parse_cluster(",".join(f"{t}={each}" for t in table.worker_types))
    problem = build_problem(cluster, sample_jobs(table, jobs, seed=seed, multi_gpu=True), table)
    rng = np.random.default_rng(seed)
    steps, elapsed = rng.uniform(1e4, 1e6, jobs), rng.uniform(0.0, 1e5, jobs)
    fields = {**problem.__dict__, "remaining_steps": steps, "time_since_arrival": elapsed}
    if kind != "table":
        measured = np.random.default_rng([seed, 1])
        fields["throughputs"] = problem.throughputs * measured.uniform(0.9, 1.1, problem.throughputs.shape)
        fields["weights"] = measured.choice([1.0, 2.0, 4.0], jobs)
    return AllocationProblem(**fields)


def score(policy: str, problem: AllocationProblem, x: np.ndarray) -> float:
    """The program's objective at allocation ``x`` (m, n)."""
    T = problem.throughputs
    if policy == "max_min_fairness_perf":
        return float((normalized_coefficients(problem, "perf") * x).sum(axis=1).min())
    if policy == "max_sum_throughput_perf":
        return float((T * x).sum())
    if policy == "finish_time_fairness_perf":  # a first call: no cumulative isolated time yet
        return float(finish_time_fairness.levels(problem, "perf", np.zeros(problem.num_jobs)).rho((T * x).sum(axis=1))
                     .max())
    with np.errstate(divide="ignore"):
        return float((problem.remaining_steps / (T * x).sum(axis=1)).max())


def gavel_classes(gavel: Path) -> dict:
    """Gavel's policy classes, imported from the user's checkout."""
    for path in (gavel / "scheduler", gavel / "scheduler" / "policies"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    return {name: getattr(importlib.import_module(module), cls) for name, (module, cls, _) in POLICIES.items()}


def gavel_call(policy: str, cls, problem: AllocationProblem):
    """One timed ``get_allocation`` of Gavel's class on ``problem``; returns (seconds, x)."""
    ids = [int(i) for i in problem.job_ids]
    types = list(problem.worker_types)
    thr = {i: {t: float(problem.throughputs[k, j]) for j, t in enumerate(types)} for k, i in enumerate(ids)}
    scale = {i: int(problem.scale_factors[k]) for k, i in enumerate(ids)}
    cluster = {t: int(problem.capacities[j]) for j, t in enumerate(types)}
    obj = cls("ECOS")
    tic = time.perf_counter()
    if policy == "max_min_fairness_perf":
        out = obj.get_allocation(thr, scale, {i: float(problem.weights[k]) for k, i in enumerate(ids)}, cluster)
    elif policy == "max_sum_throughput_perf":
        out = obj.get_allocation(thr, scale, cluster)
    elif policy == "finish_time_fairness_perf":
        out = obj.get_allocation(thr, scale, {i: float(problem.weights[k]) for k, i in enumerate(ids)},
                                 {i: float(problem.time_since_arrival[k]) for k, i in enumerate(ids)},
                                 {i: float(problem.remaining_steps[k]) for k, i in enumerate(ids)}, cluster)
    else:
        out = obj.get_allocation(thr, scale, {i: float(problem.remaining_steps[k]) for k, i in enumerate(ids)},
                                 cluster)
    seconds = time.perf_counter() - tic
    return seconds, np.array([[out[i][t] for t in types] for i in ids])


def ours_call(policy: str, solver: str, problem: AllocationProblem):
    pol = make_policy(policy, default_solver(policy) if solver == "auto" else solver)
    tic = time.perf_counter()
    alloc = pol.allocate(problem)
    return time.perf_counter() - tic, alloc.x


def policy_rows(args, table) -> list[dict]:
    classes = gavel_classes(args.gavel)
    rows = []
    for policy in args.policies:
        for jobs, kind in itertools.product(args.jobs, args.kinds):
            problem = instance(table, jobs, seed=jobs, kind=kind)
            row = {"kind": kind, "policy": policy, "jobs": jobs, "types": len(problem.worker_types),
                   "gpus_per_type": int(problem.capacities[0]), "objective": POLICIES[policy][2]}
            if jobs <= min(args.published_max_jobs, PUBLISHED_LIMIT.get(policy, jobs)):
                times, x = zip(*(gavel_call(policy, classes[policy], problem) for _ in range(args.repeat)),
                               strict=True)
                row.update(published_s=round(statistics.median(times), 6), published_value=score(policy, problem,
                                                                                                 x[-1]))
            for solver in args.solvers:
                if jobs > args.unmerged_max_jobs and _solves_every_job(policy, solver, kind):
                    continue
                ours_call(policy, solver, problem)  # untimed: a process's first call loads the compiled kernels
                times, x = zip(*(ours_call(policy, solver, problem) for _ in range(args.repeat)), strict=True)
                value = score(policy, problem, x[-1])
                row[f"{solver}_s"] = round(statistics.median(times), 6)
                row[f"{solver}_value"] = value
                if "published_s" in row:
                    row[f"{solver}_speedup"] = round(row["published_s"] / row[f"{solver}_s"], 2)
                    row[f"{solver}_rel_diff"] = f"{value / row['published_value'] - 1:+.2e}"
            print({k: v for k, v in row.items() if not k.endswith("_value")}, flush=True)
            rows.append(row)
            write_rows(_with_kept_rows(rows, RESULTS / "versus_published.csv"), RESULTS / "versus_published.csv")
    return rows


def _solves_every_job(policy: str, solver: str, kind: str) -> bool:
    """The solver takes the program over every job itself: not ``auto`` (Clarabel), not ``block``
    (it merges equal blocks or hands the model to Clarabel), not a vertex backend on a policy that
    solves over classes of a ``table`` instance (the distinct kinds have no two jobs equal)."""
    return solver not in ("auto", "block") and (kind != "table" or not make_policy(policy, solver).merges)


def _with_kept_rows(rows: list[dict], path: Path) -> list[dict]:
    """``rows`` (written after each one: a long run keeps what it did) and the rows of ``path`` for
    kinds, policies and sizes this run did not time (a row without kind is ``table``), in the order
    of ``POLICIES``, job count and :data:`KINDS`."""
    done = {(row["kind"], row["policy"], row["jobs"]) for row in rows}
    kept = []
    if path.exists():
        with path.open(newline="") as f:
            kept = [{**row, "kind": row.get("kind") or "table"} for row in csv.DictReader(f)]
        kept = [row for row in kept if (row["kind"], row["policy"], int(row["jobs"])) not in done]
    merged = sorted([*rows, *kept], key=lambda row: (list(POLICIES).index(row["policy"]), int(row["jobs"]),
                                                     KINDS.index(row["kind"])))
    columns = list(dict.fromkeys(["kind", *(key for row in [*kept, *rows] for key in row)]))
    return [{key: row.get(key, "") for key in columns} for row in merged]


def wide_instance(table, jobs: int, types: int, seed: int = 0, kind: str = "table") -> AllocationProblem:
    """``jobs`` jobs of Gavel's mix on ``types`` worker types, ``jobs / 4`` GPUs each: type j runs a
    job type at the table's rate on type ``j mod 3`` times a factor in [0.5, 1.5] drawn per job type
    and worker type (so jobs of one type stay equal); ``kind="distinct"`` multiplies every cell by
    its own U(0.9, 1.1) factor and draws weights from {1, 2, 4}, so that no two jobs are equal."""
    base = instance(table, jobs, seed)
    rng = np.random.default_rng(seed)
    kinds, job_kind = np.unique(np.array(base.job_types), return_inverse=True)
    factor = rng.uniform(0.5, 1.5, (kinds.size, types))
    T = base.throughputs[:, np.arange(types) % base.num_types] * factor[job_kind]
    fields = {**base.__dict__, "worker_types": tuple(f"t{j}" for j in range(types)), "throughputs": T,
              "capacities": np.full(types, max(8.0, jobs / 4))}
    if kind == "distinct":
        measured = np.random.default_rng([seed, 1])
        fields["throughputs"] = T * measured.uniform(0.9, 1.1, T.shape)
        fields["weights"] = measured.choice([1.0, 2.0, 4.0], jobs)
    return AllocationProblem(**fields)


def large_rows(table, sizes: list[tuple[int, int]], repeat: int) -> list[dict]:
    """Ours alone on large instances (:func:`wide_instance`) of each size: max-min, throughput,
    makespan and finish-time fairness, on jobs of equal types with HiGHS (which solves them merged
    or over demand classes) and the default solver,
    and on distinct jobs with the default solver; the median call's build, translate (the backend's
    reading of the model) and solve seconds beside it."""
    rows = []
    for (jobs, types), kind in itertools.product(sizes, ("table", "distinct")):
        problem = wide_instance(table, jobs, types, kind=kind)
        for policy, solver in itertools.product(("max_min_fairness_perf", "max_sum_throughput_perf",
                                                 "min_total_duration_perf", "finish_time_fairness_perf"),
                                                ("highs", "auto")):
            if kind == "distinct" and solver == "highs":
                continue
            times, splits = [], []
            ours_call(policy, solver, problem)  # untimed, as in policy_rows
            for _ in range(repeat):  # only the last allocation is kept: 1,000,000 x 10 shares are 80 MB
                with tally() as counted:
                    seconds, x = ours_call(policy, solver, problem)
                times.append(seconds)
                splits.append(counted)
            split = splits[int(np.argsort(times)[len(times) // 2])]
            row = {"kind": kind, "policy": policy, "jobs": jobs, "types": types,
                   "solver": default_solver(policy) if solver == "auto" else solver,
                   "seconds": round(statistics.median(times), 3), "build_s": round(split.build, 3),
                   "translate_s": round(split.translate, 3), "solve_s": round(split.solve, 3),
                   "value": score(policy, problem, x)}
            print(row, flush=True)
            rows.append(row)
    return rows


#: ``--shapes``: worker types and GPUs per job (the capacity of each type: round(share m / K), at least 8)
SHAPE_TYPES = (3, 6, 10)
SHAPE_SHARES = (0.2, 0.5, 0.75, 2.0)


def shape_rows(args, table) -> list[dict]:
    """Gavel and ours (``auto``) side by side on distinct jobs (:func:`wide_instance`, seed m + K)
    of every size in ``--jobs`` on 3, 6 and 10 types at 0.2 (heavily oversubscribed), 0.5, 0.75 and 2
    GPUs per job: the instances the policy rows do not draw. Medians of ``--repeat`` calls each
    (ours after an untimed one)."""
    classes = gavel_classes(args.gavel)
    rows = []
    for policy, jobs, types, share in itertools.product(args.policies, args.jobs, SHAPE_TYPES, SHAPE_SHARES):
        base = wide_instance(table, jobs, types, seed=jobs + types, kind="distinct")
        problem = AllocationProblem(**{**base.__dict__, "capacities": np.full(types, max(8.0, round(share * jobs
                                                                                                     / types)))})
        ours_call(policy, "auto", problem)
        ours = [ours_call(policy, "auto", problem) for _ in range(args.repeat)]
        published = [gavel_call(policy, classes[policy], problem) for _ in range(args.repeat)]
        ours_s, published_s = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in published)
        value, reference = score(policy, problem, ours[-1][1]), score(policy, problem, published[-1][1])
        row = {"policy": policy, "jobs": jobs, "types": types, "gpus_per_job": share,
               "published_s": round(published_s, 6), "auto_s": round(ours_s, 6),
               "speedup": round(published_s / ours_s, 2), "rel_diff": f"{value / reference - 1:+.2e}"}
        print(row, flush=True)
        rows.append(row)
    return rows


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _child_env() -> dict[str, str]:
    """The replays' environment: hash seed fixed, bytecode written (as a user's runs have it)."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONHASHSEED": "0"}


def _compile(python: str, folders: list[Path]) -> None:
    """Byte-compile ``folders`` with ``python`` before timing, so that no run compiles its sources."""
    subprocess.run([python, "-m", "compileall", "-q", *map(str, folders)], env=_child_env(), check=False,
                   capture_output=True)


def _timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    cpu, wall = _children_cpu(), time.perf_counter()
    env = _child_env()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return _children_cpu() - cpu, time.perf_counter() - wall, done.stdout


def replay_rows(args) -> list[dict]:
    data = args.data.resolve()
    throughputs = data / "gavel" / "simulation_throughputs.json"
    driver = args.gavel.resolve() / "scheduler" / "scripts" / "drivers" / "simulate_scheduler_with_trace.py"
    root = Path(__file__).resolve().parents[1]
    _compile(sys.executable, [root / name for name in PACKAGES])
    _compile(args.gavel_python, [args.gavel.resolve() / "scheduler"])
    rows = []
    for trace, first, end, multi in REPLAYS:
        path = data / "gavel_generated" / trace
        for pair in range(args.pairs):
            with tempfile.TemporaryDirectory() as out:
                ours_cpu, ours_wall, _ = _timed([sys.executable, "-m", "schedopt", "simulate", "--trace", str(path),
                                                 "--throughputs", str(throughputs), "--cluster",
                                                 "v100=36,p100=36,k80=36", "--policy", "max_min_fairness_perf",
                                                 "--window", f"{first}:{end}", "--gavel-compat", "--no-progress",
                                                 "--out", out])
                ours_jct = json.loads((Path(out) / "summary.json").read_text())["average_jct_window"]
            pub_cpu, pub_wall, text = _timed([args.gavel_python, str(driver), "-t", str(path), "-p",
                                              "max_min_fairness_perf", "--throughputs_file", str(throughputs),
                                              "-c", "36:36:36", "--seed", "0", "--solver", "ECOS", "-s", str(first),
                                              "-e", str(end)], cwd=args.gavel / "scheduler")
            pub_jct = float(re.search(r"Average job completion time: ([0-9.]+) seconds", text).group(1))
            row = {"trace": trace, "window": f"{first}:{end}", "multi_gpu": multi, "pair": pair,
                   "schedopt_cpu_s": round(ours_cpu, 3), "schedopt_wall_s": round(ours_wall, 3),
                   "published_cpu_s": round(pub_cpu, 3), "published_wall_s": round(pub_wall, 3),
                   "cpu_ratio": round(pub_cpu / ours_cpu, 2), "schedopt_jct": round(ours_jct, 3),
                   "published_jct": pub_jct, "jct_diff": f"{round(ours_jct, 3) / pub_jct - 1:+.6%}"}
            print(row, flush=True)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gavel", type=Path, required=True, help="a checkout of stanford-futuredata/gavel")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--jobs", type=int, nargs="+", default=list(JOBS))
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS),
                        help="instance kinds (table: the table's rows, weight 1, m / 2 GPUs per type; distinct-over "
                             "/ -under: per-job rates and weights on m / 4 or m / 2 GPUs per type)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--solvers", nargs="+", default=["auto", "highs", "block"])
    parser.add_argument("--published-max-jobs", type=int, default=100_000)
    parser.add_argument("--unmerged-max-jobs", type=int, default=16384,
                        help="a solver that takes the program over every job itself (not auto or block; a vertex "
                             "backend on the distinct kinds, or on a policy that does not solve over classes) takes "
                             "minutes from 100,000 jobs")
    parser.add_argument("--large", type=int, nargs=2, metavar=("JOBS", "TYPES"), action="append",
                        help="also time ours alone on JOBS jobs of TYPES worker types (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--replays", action="store_true")
    parser.add_argument("--gavel-python", default=sys.executable)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--skip-policies", action="store_true", help="no policy rows (--large and --replays only)")
    parser.add_argument("--shapes", action="store_true",
                        help="also distinct jobs on 3, 6 and 10 types at 0.2, 0.5, 0.75 and 2 GPUs per job, for "
                             "--policies and --jobs (versus_published_shapes.csv)")
    args = parser.parse_args()
    if not (args.gavel / "scheduler" / "policies").is_dir():
        parser.error(f"--gavel {args.gavel}: not a Gavel checkout (no scheduler/policies)")
    print(f"machine: {json.dumps(machine())}", flush=True)
    table = read_gavel_json(args.data / "gavel" / "simulation_throughputs.json")
    if not args.skip_policies:
        policy_rows(args, table)
    if args.shapes:
        write_rows(shape_rows(args, table), RESULTS / "versus_published_shapes.csv")
    if args.large:
        write_rows(large_rows(table, args.large, args.repeat), RESULTS / "versus_published_large.csv")
    if args.replays:
        write_rows(replay_rows(args), RESULTS / "versus_published_replays.csv")


if __name__ == "__main__":
    main()
