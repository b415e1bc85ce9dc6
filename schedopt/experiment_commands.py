"""``schedopt sweep`` and ``schedopt report``: a grid of runs from an experiment file, and its
figures and page."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer

from .interrupts import say_interrupted
from .output import console, count_bar, err


def register(app: typer.Typer, user_errors) -> None:
    """Add the experiment commands to ``app``."""
    app.command("sweep")(user_errors(sweep))
    app.command("report")(user_errors(report))


def sweep(
    experiment: Path = typer.Argument(..., help=(
        "Experiment file (TOML: \\[experiment], \\[fixed], \\[axes]; see the docs).")),
    out: Path = typer.Option(..., help="Folder for results.csv / .parquet and each cell's run (cells/KEY/)."),
    workers: int | None = typer.Option(None, help="Local processes \\[default: one per CPU]."),
    address: str | None = typer.Option(None, help=(
        "Run the cells as Ray tasks on the cluster at ADDR (`auto`: the running one; `local`: start Ray here).")),
    data: Path | None = typer.Option(None, help="The folder `{data}` stands for in the experiment's strings."),
    force: bool = typer.Option(False, "--force", help="Run finished cells again."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace another experiment's results in --out."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
) -> None:
    """Run every cell of an experiment's grid (workloads x clusters x policies x solvers x seeds x any
    simulate option), skipping the cells a previous run of it finished."""
    from schedopt.experiments.runner import cpu_count, prepare, run_sweep
    from schedopt.experiments.spec import read_experiment

    last = []
    try:
        exp = read_experiment(experiment, data)
        if workers is not None and workers < 1:
            raise ValueError(f"--workers {workers}: give 1 or more")
        prepare(exp, out, overwrite)
        cells = len(exp.cells())
        err.print(f"{exp.name}: {cells} cells ({' x '.join(f'{len(v)} {k}' for k, v in exp.axes.items()) or 'one'})",
                  soft_wrap=True)
        bar = count_bar(progress and err.is_terminal, cells, "sweep", describe=_sweep_state, done=lambda s: s.done)
        with bar as step:
            rows = run_sweep(exp, out, workers=workers or cpu_count(), address=address, force=force,
                             on_progress=lambda state: (last.append(state), step(state)))
    except KeyboardInterrupt:
        kept = f"{last[-1].done} of {last[-1].total} cells finished and kept in {out}; " if last else ""
        say_interrupted(f"{kept}run the same command again to resume")
        raise typer.Exit(130) from None
    failed = [r for r in rows if r["status"] != "ok"]
    before = last[-1].skipped if last else 0
    console.print(f"{len(rows) - len(failed)} of {cells} cells finished ({len(rows) - before} run now, {before} "
                  f"finished before), {len(failed)} failed; wrote {out / 'results.csv'}, {out / 'results.parquet'}",
                  soft_wrap=True)
    reasons = Counter(row["error"] for row in failed)
    for reason, count in reasons.most_common(5):
        err.print(f"failed ({count} cell{'s' if count > 1 else ''}): {reason}", soft_wrap=True, markup=False)
    if failed:
        raise typer.Exit(1)


def report(
    runs: list[Path] = typer.Argument(..., help="Run folders (simulate --out) or sweep folders (sweep --out)."),
    out: Path = typer.Option(..., help="Folder for the figures (PNG) and report.html."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a report already in --out."),
) -> None:
    """Figures (PNG) and one self-contained HTML page of runs or sweeps: summary table, JCT and
    queueing-delay CDFs, queueing delay per virtual cluster (runs on VCs), utilization and running jobs
    over time, fairness, deadlines, solver time, and for a sweep each metric against its swept parameter."""
    from schedopt.experiments.page import write_report

    for path in write_report(runs, out, overwrite):
        console.print(f"wrote {path}")


def _sweep_state(state) -> str:
    """The sweep bar's text: cells failed, finished before, and the time left."""
    left = state.seconds_left()
    return (f"cells, {state.failed} failed, {state.skipped} done before"
            + (f", {left / 60:.1f} min left" if left is not None else ""))
