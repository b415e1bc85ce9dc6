"""The ``schedopt`` command line: a thin face over the packages below it."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from allocators import ALL_POLICIES, ProgramClass, UnknownPolicyError, is_slot_policy, make_policy
from allocators.registry import policy_class
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
from simulator.engine import SimulationConfig, SimulationError
from simulator.example_table import EXAMPLE_CLUSTER, EXAMPLE_JOBS, EXAMPLE_SEED
from simulator.files import check_out_dir, write_atomically
from simulator.problem_files import read_problem_json
from simulator.readers.traces import read_trace
from simulator.reports import check_output_path, write_allocation
from simulator.request import SimulateRequest, run_request, table_for_trace
from simulator.simulate import EXAMPLE, default_solver

from .check_command import register as register_check
from .experiment_commands import register as register_experiments
from .interrupts import Commands, interrupt_said
from .output import (
    console,
    count_bar,
    err,
    print_allocation,
    print_fidelity,
    progress_bar,
    show_result,
)

app = typer.Typer(
    cls=Commands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Scheduling policies for heterogeneous GPU clusters as mathematical programs.",
)

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
    SimulationError,
)


def user_errors(command):
    """Report user errors as one line on stderr and exit 2, and an interrupt (Ctrl-C) as one line
    saying what ``--out`` holds and exit 130, without a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            with interrupt_said(kwargs.get("out")):
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
    """Every policy: who published it, what it plans (time shares of each type per round, or GPUs per job
    for a whole round or a slot), what it solves and the installed backends that run it (`schedopt solvers` for each).
    Every policy runs on every workload (`schedopt simulate --policy P`) but those whose column "runs on"
    names the workloads whose jobs have what they read. Installed plugins (entry-point group
    schedopt.policies) are listed with their package and version."""
    from allocators.plugins import plugins
    from allocators.registry import BUILT_IN, load

    from . import __version__

    table = Table(title="policies")
    table.add_column("policy", min_width=26, overflow="fold")
    for col in ("system", "plans", "program", "backends", "runs on", "package"):
        table.add_column(col)
    installed = plugins()
    ours = f"schedopt {__version__}"
    rows = [(cls.system, name, cls, ours) for name, cls in ALL_POLICIES.items() if name in BUILT_IN]
    broken = []
    for name, plugin in installed.items():
        package = f"{plugin.package} {plugin.version}"
        try:
            if name in BUILT_IN:
                raise UnknownPolicyError(f"plugin {name!r} clashes with the built-in policy of that name; "
                                         f"rename its entry point")
            rows.append((load(name).system, name, load(name), package))
        except UnknownPolicyError as exc:
            broken.append(f"plugin {name!r} ({package}): cannot load: {exc}")
    for system, name, cls, package in sorted(rows, key=lambda r: (r[0], r[1])):
        table.add_row(name, system, str(cls.plans), str(cls.program), _backends(cls),
                      "Pollux workloads (goodput models)" if getattr(cls, "needs_goodput", False) else "every workload",
                      package)
    (console if console.is_terminal else Console(width=160, emoji=False)).print(table)
    for line in broken:
        err.print(line, markup=False, highlight=False, soft_wrap=True)


def _backends(cls) -> str:
    """The backend families that run ``cls``'s program (a convex one's route: conic or LP)."""
    needs = cls.program.needs
    if not needs:
        return "none needed"
    conic = set(backends_with(frozenset({Capability.SOC})))
    families: dict[str, list[str]] = {}
    for b in backends_with(needs):
        route = "" if cls.program is not ProgramClass.CONVEX else " conic" if b in conic else " LP"
        families.setdefault(b.partition(":")[0], []).append(route)
    return ", ".join(f"{f}{routes[0]}" if len(routes) == 1 else f"{f} ({len(routes)} solvers)"
                     for f, routes in families.items())


@app.command()
@user_errors
def solve(
    policy: str | None = typer.Option(None, help=(
        "Policy name or reference (see `schedopt policies`) \\[default: a counterexample's own, else "
        "max_min_fairness_perf].")),
    solver: str | None = typer.Option(None, help=(
        "highs | gurobi | cvxpy[:SOLVER] | pyomo[:highs|gurobi] \\[default: a counterexample's own, else highs]")),
    cluster: str | None = typer.Option(None, help=f"GPUs per worker type \\[default: {DEFAULT_CLUSTER}]"),
    jobs: int | None = typer.Option(None, help="Sample this many jobs from the throughput table."),
    seed: int = typer.Option(0, help="Seed of the job sampler."),
    multi_gpu: bool = typer.Option(False, help="Sample Gavel's 1/2/4/8-GPU scale-factor mix."),
    problem: Path | None = typer.Option(None, help=(
        "Jobs CSV (job_type[,job_id,scale_factor,priority_weight]), or a snapshot in JSON such as a counterexample "
        "of `schedopt check` (replayed, its check run again).")),
    throughputs: Path | None = typer.Option(None, help="Throughput table in Gavel's JSON format."),
    prices: str | None = typer.Option(None, help="Price per GPU-hour of each type, e.g. v100=2.48,p100=1.46,k80=0.9"),
    time_limit: float | None = typer.Option(None, help="Solver time limit in seconds."),
    threads: int | None = typer.Option(None, help="Solver threads."),
    output: Path | None = typer.Option(None, help="Write the allocation to FILE.csv or FILE.json."),
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
    recorded: dict = {}
    if problem is not None and problem.suffix.lower() == ".json":
        if cluster is not None or throughputs is not None or prices is not None:
            raise ValueError(f"--problem {problem}: a JSON snapshot brings its cluster, throughputs and prices")
        snapshot, recorded = read_problem_json(problem)
    policy = policy or recorded.get("policy") or "max_min_fairness_perf"
    pol = make_policy(policy, solver or recorded.get("solver") or "highs", options)
    if not recorded and not (problem is not None and problem.suffix.lower() == ".json"):
        table = read_gavel_json(throughputs) if throughputs else example_table()
        spec = parse_cluster(cluster or DEFAULT_CLUSTER)
        jobset = read_jobs_csv(problem, table) if problem else sample_jobs(table, jobs, seed, multi_gpu=multi_gpu)
        snapshot = build_problem(spec, jobset, table, pairs=pol.uses_pairs,
                                 prices=parse_prices(prices, spec) if prices else None)
    allocation = pol.allocate(snapshot)
    print_allocation(allocation, show)
    violations = allocation_violations(allocation)
    for line in violations:
        err.print(f"schedopt: invalid allocation: {line}", markup=False)
    if output is not None:
        write_allocation(allocation, output)
        console.print(f"wrote {output}")
    verdict = None
    if recorded.get("check"):
        from schedopt.testing import replay

        verdict = replay(recorded, allocation, lambda spec=None: make_policy(policy, spec or pol.solver, options))
        console.print(f"check {recorded['check']}: " + ("holds" if verdict is None else f"fails: {verdict.message}"),
                      highlight=False, soft_wrap=True)
    if violations or verdict is not None:
        raise typer.Exit(1)


@app.command()
@user_errors
def bench(
    policy: list[str] = typer.Option(["max_min_fairness_perf"], help=(
        "Policy to time, or POLICY:VARIANT (repeat the option for more; `all`: every one a sweep can time).")),
    jobs: list[int] = typer.Option([64, 256, 1024, 4096], help="Job counts (repeat the option)."),
    gpus_per_type: list[int] = typer.Option([], help="GPUs of each worker type \\[default: jobs / 4]."),
    worker_types: list[str] = typer.Option([], help=(
        "Comma-separated set of worker types (repeat for more sets) \\[default: all in the table].")),
    backend: list[str] = typer.Option([], help="Backends (repeat) \\[default: every installed one but Gurobi]."),
    repeat: int = typer.Option(5, help="Timed repetitions of each case (shown: their median and min-max)."),
    seed: list[int] = typer.Option([0], help="Seeds of the job sampler (repeat)."),
    time_limit: float | None = typer.Option(None, help="Per-solve time limit, seconds."),
    throughputs: Path | None = typer.Option(None, help="Gavel JSON throughput table \\[default: built-in]."),
    out: Path = typer.Option(Path("bench"), help="Directory for bench.csv / .parquet / .png and machine.json."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results DIR already holds."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Solve time against size: every policy x job count x worker types x backend, timed build / translate /
    solve (summed over the programs of iterated policies), each (policy, backend) warmed up untimed first."""
    import pandas as pd

    from optim import available_backends, parse_spec
    from schedopt.bench import (
        WARM_UP_JOBS,
        Sweep,
        bench_policies,
        machine,
        publishable,
        run,
        run_info,
        summary,
        write_outputs,
    )

    table = read_gavel_json(throughputs) if throughputs else example_table()
    type_sets = tuple(tuple(t.strip() for t in s.split(",")) for s in worker_types) or (tuple(table.worker_types),)
    unknown = sorted({t for types in type_sets for t in types} - set(table.worker_types))
    if unknown:
        raise ValueError(f"bench: worker type(s) {', '.join(unknown)} not in the throughput table "
                         f"({', '.join(table.worker_types)})")
    backends = tuple(parse_spec(b).spec for b in backend) or tuple(
        b.spec for b in available_backends() if "gurobi" not in b.spec.lower())
    policies = tuple(bench_policies()) if policy == ["all"] else tuple(policy)
    sweep = Sweep(policies=policies, jobs=tuple(jobs), backends=backends, worker_types=type_sets,
                  gpus_per_type=tuple(gpus_per_type) or (None,), seeds=tuple(seed), repeat=repeat,
                  time_limit=time_limit)
    check_out_dir(out, overwrite)
    info = machine()
    warmed: list[dict] = []
    with count_bar(progress, sweep.num_solves, "bench", describe=lambda row: (
            f"{row['policy']} {row['jobs']:,} jobs {row['backend']}: {row['status']}")) as step:
        frame = pd.DataFrame(list(run(sweep, table, on_row=step, warmed=warmed)))
    paths = write_outputs(frame, info | run_info(sweep, warmed), out)
    shown = summary(frame)
    result = Table(title=f"milliseconds, median of {repeat * len(seed)} (total: min-max), each policy and backend "
                         f"warmed up untimed on {WARM_UP_JOBS} jobs; {info['cpu']}, {info['cores']} cores",
                   box=box.SIMPLE)
    for col in ("policy", "jobs", "GPUs/type", "types", "backend", "status", "programs", "build", "translate",
                "solve", "total", "min-max"):
        result.add_column(col, justify="left" if col in ("policy", "types", "backend", "status") else "right",
                          no_wrap=True)
    for r in shown.itertuples(index=False):
        result.add_row(r.policy, f"{r.jobs:,}", f"{r.gpus_per_type:,}", r.worker_types, r.backend, r.status,
                       f"{r.programs:g}",
                       *(f"{1e3 * getattr(r, c):,.1f}" if pd.notna(getattr(r, c, None)) else "-"
                         for c in ("build_s", "translate_s", "solve_s", "total_wall_s")),
                       f"{1e3 * r.total_wall_min_s:,.1f}-{1e3 * r.total_wall_max_s:,.1f}"
                       if pd.notna(getattr(r, "total_wall_min_s", None)) else "-")
    (console if console.is_terminal else Console(width=200, emoji=False)).print(result)
    left_out = len(frame) - len(publishable(frame))
    console.print(f"wrote {', '.join(str(p) for p in paths)}"
                  + (f" ({left_out} Gurobi row(s) shown above, never written: pip license terms)" if left_out else ""))


@app.command("simulate")
@user_errors
def simulate_command(
    trace: Path | None = typer.Option(None, help=(
        "Job trace (Gavel's 10-column, legacy 7-column or Shockwave's 12-column format).")),
    generate: int | None = typer.Option(None, help="Generate this many jobs from Gavel's distributions."),
    example: bool = typer.Option(False, "--example", help=(
        f"Built-in example: {EXAMPLE['num_jobs']} generated jobs (one every {EXAMPLE['lam']:g} s on average) "
        f"on {EXAMPLE['cluster']} with the built-in throughput table.")),
    policy: str | None = typer.Option(None, help=(
        "Any policy of `schedopt policies`, on any trace \\[default: max_min_fairness_perf; elasticflow on a "
        "deadline trace]")),
    solver: str = typer.Option("auto", help=(
        "auto (clarabel for LP/convex, highs for MILP) | highs | clarabel | block | gurobi | cvxpy[:SOLVER] | "
        "pyomo[:highs|gurobi]")),
    cluster: str | None = typer.Option(None, help=f"GPUs per worker type \\[default: {DEFAULT_CLUSTER}]"),
    throughputs: Path | None = typer.Option(None, help=(
        "Throughput table in Gavel's JSON format \\[default: built-in].")),
    round_length: float | None = typer.Option(None, "--round", help=(
        "Round length in seconds \\[default: 360; 120 for Shockwave traces and --policy shockwave]")),
    reset_interval: float | None = typer.Option(None, help=(
        "Minimum seconds between allocation recomputations \\[default: 1920; 1000 for Shockwave]")),
    window: str | None = typer.Option(None, help="Measure (and stop after) jobs FIRST:END, e.g. 100:400."),
    seed: int = typer.Option(0, help=(
        "Seed of the generator, the type shuffle, randomized policies and the solver (HiGHS, Gurobi).")),
    lam: float = typer.Option(0.0, help="With --generate: mean seconds between arrivals (0 = all at once)."),
    multi_gpu: bool = typer.Option(False, help="With --generate: Gavel's 1/2/4/8-GPU scale-factor mix."),
    priority_fraction: float = typer.Option(0.0, help="With --generate: fraction of jobs with weight 5."),
    overhead: float | None = typer.Option(None, help=(
        "Checkpoint/restore seconds charged to a job resuming after a pause \\[default: 0; 20 for Shockwave]")),
    max_runtime_factor: float | None = typer.Option(None, help=(
        "Complete a job once it ran this many times its isolated run time (published Shockwave: 1.5) "
        "\\[default: off; 1.5 for Shockwave; 0 = off]")),
    config_file: Path | None = typer.Option(None, "--config", help=(
        "Shockwave parameters (k, lambda, window, MIP gap, time limit) in the published JSON format.")),
    gpus_per_server: int = typer.Option(1, help="GPUs per server (placement and lease extension)."),
    unconsolidated: bool = typer.Option(False, help="Multi-GPU jobs spread over servers run at the "
                                                    "table's _unconsolidated rates."),
    gavel_compat: bool = typer.Option(False, help=(
        "Reproduce the published Gavel / Shockwave simulators' defects and rules (README).")),
    prices: str | None = typer.Option(None, help="Price per GPU-hour of each type, e.g. v100=2.48,p100=1.46,k80=0.9"),
    write_trace_to: Path | None = typer.Option(None, "--write-trace", help="Write the generated workload as a trace."),
    out: Path | None = typer.Option(None, help=(
        "Write jobs.csv, timeline.csv, solves.csv and summary.json into DIR.")),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results DIR already holds."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    cluster_spec: Path | None = typer.Option(None, help=(
        "Deadline runs: cluster spec CSV (num_switch,num_node_p_switch,num_gpu_p_node,...); with "
        "--throughput-dir and a deadline --trace (ElasticFlow / ITP CSV).")),
    throughput_dir: Path | None = typer.Option(None, help=(
        "Deadline runs: directory of per-model iteration tables (MODEL.csv: global_batch_size,1,2,4,...).")),
    slot: float | None = typer.Option(None, help=(
        "Slot policies (elasticflow, edf, ...): scheduling slot in seconds \\[default: the preset's; 60]")),
    preset: str | None = typer.Option(None, help=(
        "gavel | shockwave | elasticflow | pollux | helios: that system's published settings for rounds "
        "(length, reset interval, checkpoint overhead, runtime cap) and slots (length); explicit options "
        "override it \\[default: shockwave for --policy shockwave and adaptive traces, else gavel; slots: "
        "the policy's system's]")),
    deadlines: str | None = typer.Option(None, help=(
        "Draw deadlines for a trace without them: arrival + uniform:LO:HI x the isolated duration "
        "(ElasticFlow's rule: uniform:0.5:1.5; seeded by --seed); every policy is judged by them.")),
    gpu_type: str | None = typer.Option(None, help=(
        "Deadline runs: A100 | T4, for ElasticFlow's published GPU caps \\[default: from --throughput-dir's name].")),
    applications: Path | None = typer.Option(None, help=(
        "Pollux workloads: the applications' measurements (<app>/placements.csv, validation-*.csv) "
        "\\[default: traces/ beside the workload's folder].")),
    vc_config: Path | None = typer.Option(None, help=(
        "Job logs (Helios' or the Philly CSV as --trace): the VC config (vc,node num; 8 GPUs a node); each "
        "job runs on its VC's nodes only \\[policy default: fifo-helios].")),
    submitted: str | None = typer.Option(None, help=(
        "Job logs: keep the jobs submitted in FIRST,LAST (date-times, e.g. '2017-10-01 00:00:00,2017-10-07 "
        "23:59:00'); arrivals count from FIRST.")),
    lucid_data: Path | None = typer.Option(None, help=(
        "Job logs: a folder with Lucid's single_data.csv and colocate_info.csv: each job's profiled workload is "
        "drawn (seeded by --seed) and jobs may share GPUs at the measured pair speeds (policy lucid needs it).")),
    vc_scale: float = typer.Option(1.0, help=(
        "Job logs: every VC at this multiple of its --vc-config nodes (rounded, at least 1): the same jobs at "
        "a lighter or heavier load.")),
    profiling_nodes: int = typer.Option(0, help=(
        "Job logs: that many nodes of the largest VC form an open profiling VC any job may use (Lucid's "
        "profiler; its Philly runs: 2).")),
) -> None:
    """Replay a trace (Gavel, Shockwave, a Pollux workload, or with --cluster-spec and --throughput-dir an
    ElasticFlow / ITP deadline trace), or a generated workload, under any policy (see `schedopt policies`)
    and report JCT, makespan, utilization, fairness, deadlines and solver time."""
    check_out_dir(out, overwrite)
    req = SimulateRequest(**{k: str(v) if isinstance(v, Path) else v for k, v in locals().items()
                             if k in SimulateRequest.options()})
    with progress_bar(progress, req.progress_unit()) as report:
        result = run_request(req, progress=report, say=functools.partial(err.print, soft_wrap=True))
    show_result(result, out)


@app.command("run")
@user_errors
def run_command(
    trace: Path = typer.Option(..., help=(
        "Job trace: Gavel's 10/7-column or Shockwave's 12-column format, or with --cluster-spec and "
        "--throughput-dir an ElasticFlow / ITP deadline trace.")),
    policy: str = typer.Option("max_min_fairness_perf", help="Any policy of `schedopt policies`."),
    solver: str = typer.Option("auto", help=(
        "auto (clarabel for LP/convex, highs for MILP) | highs | clarabel | block | gurobi | cvxpy[:SOLVER] | "
        "pyomo[:highs|gurobi]")),
    cluster: str | None = typer.Option(None, help=(
        "GPUs per worker type \\[default: the table's first worker type with --slots GPUs]")),
    throughputs: Path | None = typer.Option(None, help=(
        "Throughput table in Gavel's JSON format, e.g. from `schedopt profile` \\[default: built-in].")),
    address: str | None = typer.Option(None, help=(
        "Address of a running Ray cluster \\[default: start Ray here]; nodes advertising the worker types "
        "as resources (--resources '{\"v100\": 4}') run the leases of their type.")),
    checkpoint_dir: Path | None = typer.Option(None, help=(
        "The jobs' checkpoints, a folder every Ray node reads \\[default: DIR/checkpoints, else a temporary one].")),
    time_scale: float = typer.Option(0.01, help=(
        "Wall-clock seconds a lease trains per simulated second; its steps are credited / time scale, "
        "at most the planned steps.")),
    slots: int | None = typer.Option(None, help=(
        "GPU slots of the local Ray (emulated on CPUs where there is no GPU) \\[default: the cluster's GPUs].")),
    model_size: str = typer.Option("tiny", help="tiny | small | base: the reference models standing in for the jobs."),
    round_length: float | None = typer.Option(None, "--round", help=(
        "Round policies: round length in simulated seconds \\[default: the preset's; 360]")),
    slot: float | None = typer.Option(None, help=(
        "Slot policies (elasticflow, edf, ...): slot length in simulated seconds \\[default: the preset's; 60]")),
    preset: str | None = typer.Option(None, help="gavel | shockwave | elasticflow (see `schedopt simulate --help`)."),
    deadlines: str | None = typer.Option(None, help=(
        "Slot policies on a trace without deadlines: arrival + uniform:LO:HI x the isolated duration.")),
    gpus_per_server: int = typer.Option(1, help="GPUs per server (placement)."),
    cluster_spec: Path | None = typer.Option(None, help="Deadline traces: cluster spec CSV (ElasticFlow's format)."),
    throughput_dir: Path | None = typer.Option(None, help="Deadline traces: directory of per-model iteration tables."),
    out: Path | None = typer.Option(None, help=(
        "Write jobs.csv, timeline.csv, solves.csv, summary.json and the jobs' checkpoints/ into DIR.")),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results DIR already holds."),
    compare_simulation: bool = typer.Option(False, "--compare-simulation", help=(
        "Also simulate the trace with the same table and print the per-job and summary differences "
        "(written to fidelity.csv).")),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on a terminal."),
    resume: bool = typer.Option(False, "--resume", help=(
        "Continue the run DIR holds (its driver stopped) from its journal and checkpoints; same inputs.")),
) -> None:
    """Run a trace for real under any policy: the simulator's rounds or slots, each leased job training a
    reference PyTorch model in a Ray task that holds its GPUs; reports what `simulate` does plus measured
    against planned steps/s per job."""
    if resume and out is None:
        raise ValueError("--resume continues the run in --out DIR: give it")
    if not resume:
        check_out_dir(out, overwrite)
    try:
        from runtime_bridge.real_run import DeadlineInputs, run_for_real
        from runtime_bridge.workloads import MODEL_SIZES
    except ModuleNotFoundError as exc:
        if exc.name not in ("torch", "ray"):
            raise
        raise ValueError('run needs PyTorch and Ray: pip install -e ".[runtime]"') from None
    import tempfile

    if model_size not in MODEL_SIZES:
        raise ValueError(f"--model-size {model_size!r}: expected one of {', '.join(MODEL_SIZES)}")
    if address is not None and slots is not None:
        raise ValueError("--slots is for a local Ray; the cluster at --address brings its own GPUs or slots")
    say = functools.partial(err.print, soft_wrap=True)
    slotted = is_slot_policy(policy)
    if not slotted and policy_class(policy).uses_pairs:
        raise ValueError(f"policy {policy!r} co-locates jobs on shared GPUs, which run does not support yet")
    solver_spec = ("highs" if slotted else default_solver(policy)) if solver == "auto" else solver
    config = SimulationConfig.from_preset(preset or "gavel", gpus_per_server=gpus_per_server,
                                          **({} if round_length is None else {"round_length": round_length}))
    if cluster_spec is not None or throughput_dir is not None:
        if cluster_spec is None or throughput_dir is None:
            raise ValueError("a deadline trace run needs both --cluster-spec and --throughput-dir")
        if deadlines is not None:
            raise ValueError(f"--deadlines: {trace} is a deadline trace and brings its own deadlines")
        jobs = DeadlineInputs(trace, cluster_spec, throughput_dir)
        args = {"solver": solver_spec, "slot": slot, "preset": preset, "round_config": config}
    else:
        jobs = read_trace(trace)
        if jobs.adaptive:
            raise ValueError(f"{trace}: jobs that adapt their batch size (accordion / gns) cannot run for real yet")
        table = read_gavel_json(throughputs) if throughputs else table_for_trace(jobs, trace, example_table(), say)
        spec = parse_cluster(cluster or f"{table.worker_types[0]}={slots or 1}")
        args = {"solver": solver_spec, "cluster": spec, "throughputs": table, "config": config,
                "deadlines": deadlines, "slot": slot, "preset": preset}
    with tempfile.TemporaryDirectory(prefix="schedopt-run-") as scratch:
        folder = checkpoint_dir or (out / "checkpoints" if out is not None else Path(scratch))
        with progress_bar(progress, "decisions" if slotted else "solves", "running") as report:
            run = run_for_real(jobs, policy=policy, checkpoints=folder, time_scale=time_scale,
                               model_size=model_size, address=address, slots=slots,
                               compare_simulation=compare_simulation, progress=report, planned=lambda wall: say(
                                   f"expected wall time: {wall:,.1f} s (simulated makespan x time scale)"),
                               journal=None if out is None else out / "journal.jsonl", resume=resume, **args)
    result = run.result
    show_result(result, None)
    console.print(f"leases failed: {result.summary['failed_leases']} ({result.summary['redone_gpu_seconds']:,.0f} "
                  f"GPU-seconds to redo); jobs failed: {result.summary['jobs_failed']}; steps credited / planned: "
                  f"{result.summary['lease_credited_over_planned']:.3f}")
    if run.fidelity is not None:
        print_fidelity(run.fidelity)
    if out is not None:
        from simulator.metrics import csv_text

        tables = {"leases.csv": run.leases} | ({} if run.fidelity is None else {"fidelity.csv": run.fidelity.jobs})
        for path in result.write(out):
            console.print(f"wrote {path}")
        for name, table in tables.items():
            write_atomically(out / name, csv_text(table))
            console.print(f"wrote {out / name}")


@app.command()
@user_errors
def profile(
    workloads: str = typer.Option("resnet,transformer,recommendation", help=(
        "Comma-separated reference workloads: resnet, transformer, recommendation.")),
    batch_sizes: str = typer.Option("32", help="Comma-separated batch sizes (per GPU), e.g. 16,32,64."),
    gpus: str = typer.Option("1", help="Comma-separated scale factors (GPUs per job), e.g. 1,2,4."),
    model_size: str = typer.Option("small", help="tiny | small | base (tiny runs in milliseconds on a CPU)."),
    device: str = typer.Option("auto", help="auto (GPUs where present, else the CPU) | cpu | cuda"),
    worker_type: str | None = typer.Option(None, help=(
        "Worker type the table names \\[default: cpu, or the GPU model such as h100].")),
    steps: int | None = typer.Option(None, help="Timed steps per measurement, at most \\[default: no cap]."),
    seconds: float = typer.Option(5.0, help="Timed seconds per measurement, about, at most."),
    warmup: int = typer.Option(3, help="Untimed steps before each measurement."),
    seed: int = typer.Option(0, help="Seed of the models and their synthetic data."),
    out: Path = typer.Option(..., help="Write the throughput table to FILE (Gavel's JSON format)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace FILE where it exists."),
) -> None:
    """Measure steps/s of the reference PyTorch workloads per (job type, scale) on this machine and
    write a throughput table that `simulate --throughputs` and `solve --throughputs` read."""
    try:
        from runtime_bridge.profiler import profile as run_profile
        from runtime_bridge.profiler import resolve_device
        from runtime_bridge.workloads import MODEL_SIZES, WORKLOADS, WorkloadSpec
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        raise ValueError('profile needs PyTorch: pip install -e ".[runtime]"') from None
    from simulator.throughputs import write_gavel_json

    names = [name.strip() for name in workloads.split(",") if name.strip()]
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown or not names:
        raise ValueError(f"--workloads {workloads!r}: unknown workload {', '.join(unknown) or '(none given)'} "
                         f"(known: {', '.join(WORKLOADS)})")
    if model_size not in MODEL_SIZES:
        raise ValueError(f"--model-size {model_size!r}: expected one of {', '.join(MODEL_SIZES)}")
    if (steps is not None and steps < 1) or warmup < 0 or not seconds > 0:
        raise ValueError("--steps must be >= 1, --warmup >= 0 and --seconds > 0")
    if out.is_dir():
        raise ValueError(f"--out {str(out)!r}: is a directory; give a file name")
    if out.exists() and not overwrite:
        raise ValueError(f"--out {str(out)!r}: exists; give --overwrite to replace it, or another file name")
    folder = next(p for p in out.absolute().parents if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise ValueError(f"--out {str(out)!r}: cannot write into {str(folder)!r}")
    specs = [WorkloadSpec(name, size, model_size, seed) for name in dict.fromkeys(names)
             for size in dict.fromkeys(_positive_ints(batch_sizes, "--batch-sizes"))]
    target = resolve_device(device)

    def show(m) -> None:
        note = f" ({m.note})" if m.note else ""
        console.print(f"{m.spec.job_type} x{m.scale}: {m.steps_per_second:,.2f} steps/s{note}", highlight=False)

    table = run_profile(specs, _positive_ints(gpus, "--gpus"), target, steps=steps, seconds=seconds, warmup=warmup,
                        name=worker_type, on_measurement=show)
    write_gavel_json(table, out)
    console.print(f"wrote {out} (worker type {table.worker_types[0]!r}, {len(table.keys)} job types)")


def _positive_ints(text: str, option: str) -> list[int]:
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ValueError(f"{option} {text!r}: expected comma-separated positive integers, e.g. 1,2,4")
    return [int(p) for p in parts]


register_experiments(app, user_errors)
register_check(app, user_errors)


def main() -> None:
    app(prog_name="schedopt")


if __name__ == "__main__":
    sys.exit(main())
