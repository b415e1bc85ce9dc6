"""The ``schedopt`` command line: a thin face over the packages below it."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from allocators import POLICIES, ProgramClass, UnknownPolicyError, make_policy
from formulations import ProblemError, allocation_violations
from optim import Capability, OptimError, SolveOptions, all_backends, backends_with
from simulator import (
    DEFAULT_CLUSTER,
    ClusterSpecError,
    JobsFileError,
    ThroughputTableError,
    build_problem,
    example_table,
    parse_cluster,
    parse_prices,
    read_gavel_json,
    read_jobs_csv,
    sample_jobs,
)
from simulator.example_table import EXAMPLE_CLUSTER, EXAMPLE_JOBS, EXAMPLE_SEED
from simulator.reports import allocation_frame, check_output_path, write_allocation

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Scheduling policies for heterogeneous GPU clusters as mathematical programs.",
)
console = Console()
err = Console(stderr=True)

#: errors caused by the user's input or environment: one line, exit code 2
USER_ERRORS = (
    OptimError,
    ProblemError,
    ClusterSpecError,
    JobsFileError,
    ThroughputTableError,
    UnknownPolicyError,
    ValueError,
    OSError,
)


def user_errors(command):
    """Report user errors as one line on stderr and exit 2, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except USER_ERRORS as exc:
            err.print(f"schedopt: error: {exc}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper


@app.command()
@user_errors
def solvers() -> None:
    """List solver backends: inner solvers, versions, availability, license limits."""
    table = Table(title="solver backends")
    for col in ("backend", "capabilities", "version", "available", "license limits"):
        table.add_column(col)
    for backend in all_backends():
        available = backend.is_available()
        table.add_row(
            backend.spec,
            ", ".join(sorted(str(c) for c in backend.capabilities())) if available else "",
            backend.version() if available else "",
            "yes" if available else "no",
            backend.license_limits,
        )
    console.print(table)


@app.command()
@user_errors
def policies() -> None:
    """List the policies, their program class and the installed backends that run them."""
    table = Table(title="policies")
    for col in ("policy", "program", "backends"):
        table.add_column(col)
    conic = set(backends_with(frozenset({Capability.SOC})))
    for name, cls in sorted(POLICIES.items()):
        needs = cls.program.needs
        backends = backends_with(needs)
        if cls.program is ProgramClass.CONVEX:
            backends = [f"{b} (conic)" if b in conic else f"{b} (LP bisection)" for b in backends]
        table.add_row(name, str(cls.program), ", ".join(backends) if needs else "no solver needed")
    console.print(table)


@app.command()
@user_errors
def solve(
    policy: str = typer.Option("max_min_fairness_perf", help="Policy name (see `schedopt policies`)."),
    solver: str = typer.Option("highs", help="highs | gurobi | cvxpy[:SOLVER] | pyomo[:highs|gurobi]"),
    cluster: Optional[str] = typer.Option(None, help=f"GPUs per worker type [default: {DEFAULT_CLUSTER}]"),
    jobs: Optional[int] = typer.Option(None, help="Sample this many jobs from the throughput table."),
    seed: int = typer.Option(0, help="Seed of the job sampler."),
    multi_gpu: bool = typer.Option(False, help="Sample Gavel's 1/2/4/8-GPU scale-factor mix."),
    problem: Optional[Path] = typer.Option(None, help="Jobs CSV (job_type[,job_id,scale_factor,priority_weight])."),
    throughputs: Optional[Path] = typer.Option(None, help="Throughput table in Gavel's JSON format."),
    prices: Optional[str] = typer.Option(None, help="Price per GPU-hour of each type, e.g. v100=2.48,p100=1.46,k80=0.9"),
    time_limit: Optional[float] = typer.Option(None, help="Solver time limit in seconds."),
    threads: Optional[int] = typer.Option(None, help="Solver threads."),
    output: Optional[Path] = typer.Option(None, help="Write the allocation to FILE.csv or FILE.json."),
    show: int = typer.Option(20, help="Jobs to print in the per-job summary."),
    example: bool = typer.Option(False, "--example", help=(
        f"Built-in example: {EXAMPLE_JOBS} sampled jobs on {EXAMPLE_CLUSTER} with the built-in table.")),
) -> None:
    """Solve one allocation snapshot and print status, objective, timings and per-job shares."""
    if output is not None:
        check_output_path(output)
    if example:
        if problem is not None or jobs is not None:
            raise ValueError("--example cannot be combined with --problem or --jobs")
        cluster = cluster or EXAMPLE_CLUSTER
        jobs, seed, multi_gpu = EXAMPLE_JOBS, EXAMPLE_SEED, True
    if (problem is None) == (jobs is None):
        raise ValueError("give exactly one of --jobs N or --problem FILE (or use --example)")
    options = SolveOptions(time_limit=time_limit, threads=threads)
    pol = make_policy(policy, solver, options)
    table = read_gavel_json(throughputs) if throughputs else example_table()
    spec = parse_cluster(cluster or DEFAULT_CLUSTER)
    jobset = read_jobs_csv(problem, table) if problem else sample_jobs(table, jobs, seed, multi_gpu=multi_gpu)
    snapshot = build_problem(spec, jobset, table, pairs=pol.uses_pairs,
                             prices=parse_prices(prices, spec) if prices else None)
    allocation = pol.allocate(snapshot)
    _print_allocation(allocation, show)
    violations = allocation_violations(allocation)
    for line in violations:
        err.print(f"schedopt: invalid allocation: {line}", markup=False)
    if output is not None:
        write_allocation(allocation, output)
        console.print(f"wrote {output}")
    if violations:
        raise typer.Exit(1)


def _print_allocation(allocation, show: int) -> None:
    result = allocation.result
    p = allocation.problem
    cluster = ", ".join(f"{w}={int(c)}" for w, c in zip(p.worker_types, p.capacities))
    pairs = f" ({len(p.pairs)} candidate pairs)" if p.pairs is not None else ""
    if result is None:
        console.print(f"[bold]{allocation.policy}[/] on {p.num_jobs} jobs{pairs}, {cluster} (heuristic, no solver)")
    else:
        t = result.timings
        console.print(f"[bold]{allocation.policy}[/] on {p.num_jobs} jobs{pairs}, {cluster} "
                      f"with [bold]{result.backend}[/] ({result.solver_version})")
        objective = "" if allocation.objective is None else f"   objective: {allocation.objective:.6g}"
        console.print(f"status: {result.status}{objective}" + (f"   gap: {result.gap:.2e}" if result.gap else ""))
        console.print(f"timings: build {t.build * 1e3:.1f} ms, translate {t.translate * 1e3:.1f} ms, "
                      f"solve {t.solve * 1e3:.1f} ms")
    for note in allocation.notes:
        console.print(f"note: {note}")
    used = allocation.gpus_used()
    console.print("GPUs in use: " + ", ".join(
        f"{w} {u:.2f}/{int(c)}" for w, u, c in zip(p.worker_types, used, p.capacities)))
    frame = allocation_frame(allocation).rename(
        columns={"job_id": "job", "scale_factor": "s", "priority_weight": "w", "time_fraction": "time",
                 "throughput": "steps/s"})
    table = Table(title=f"per-job allocation (first {min(show, len(frame))} of {len(frame)})",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in frame.columns:
        if col == "job_type":
            table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=26)
        else:
            table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for row in frame.head(show).itertuples(index=False):
        table.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)


def main() -> None:
    app(prog_name="schedopt")


if __name__ == "__main__":
    sys.exit(main())
