"""What the command line prints: result summaries, allocation tables and progress bars."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from simulator.reports import allocation_frame

#: no emoji codes: a name or window such as ``jobs 100:300`` is printed as it is (and rich's
#: emoji table is never loaded)
console = Console(emoji=False)
err = Console(stderr=True, emoji=False)


def print_allocation(allocation, show: int) -> None:
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


class count_bar:
    """A rich progress bar over ``total`` items named ``label``, or nothing when not ``enabled``:
    ``step(item)`` moves it to ``done(item)`` (default: one item further) and shows ``describe(item)``."""

    def __init__(self, enabled: bool, total: int, label: str, describe, done=None):
        self.enabled, self.total, self.label, self.describe, self.done = enabled, total, label, describe, done

    def __enter__(self):
        if not self.enabled:
            return lambda item: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             TextColumn("{task.description}"), console=err, transient=True)
        self._bar.__enter__()
        task = self._bar.add_task("", total=self.total)

        def step(item) -> None:
            moved = {"advance": 1} if self.done is None else {"completed": self.done(item)}
            self._bar.update(task, description=self.describe(item), **moved)

        return step

    def __exit__(self, *exc):
        if self.enabled:
            self._bar.__exit__(*exc)
        return False


def show_result(result, out: Path | None) -> None:
    """Print a run's summary (round or slot clock) and write its files."""
    if result.summary["clock"] == "slots":
        print_deadline_summary(result.summary)
    else:
        print_summary(result.summary)
    if out is not None:
        for path in result.write(out):
            console.print(f"wrote {path}")


def print_fidelity(fidelity) -> None:
    from runtime_bridge.fidelity import METRICS

    table = Table(title="real run against the simulator (real / simulated - 1)", box=box.SIMPLE)
    for col in ("", "real", "simulated", "difference"):
        table.add_column(col, justify="left" if not col else "right")
    for label, key in METRICS:
        real, simulated, diff = fidelity.summary[key]
        fmt = "{:.1%}" if key == "utilization" else "{:,.1f}"
        table.add_row(label, fmt.format(real), fmt.format(simulated), f"{diff:+.1%}")
    table.add_row("per-job JCT |difference| (mean / max)", "", "",
                  f"{fidelity.mean_abs_jct_difference:.1%} / {fidelity.max_abs_jct_difference:.1%}")
    console.print(table)


class progress_bar:
    """A rich progress line (``label``, jobs done, simulated time, solves or re-plans and the last
    one's time), redrawn at most 10 times a second."""

    def __init__(self, enabled: bool, solves: str = "solves", label: str = "simulating"):
        self.enabled = enabled and err.is_terminal
        self.solves = solves
        self.label = label

    def __enter__(self):
        if not self.enabled:
            return None
        import time

        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(),
                             TextColumn("jobs  t={task.fields[t]}  " + self.solves + "={task.fields[solves]} "
                                        "(last {task.fields[last]})"),
                             TimeElapsedColumn(), console=err, transient=True)
        self._bar.start()
        self._task = self._bar.add_task("sim", total=None, t="0 h", solves=0, last="-")
        self._last = 0.0
        self._clock = time.monotonic

        def report(now: float, done: int, total: int, solves: int, last: float) -> None:
            tick = self._clock()
            if tick - self._last >= 0.1:
                self._last = tick
                self._bar.update(self._task, completed=done, total=total, t=f"{now / 3600:.1f} h", solves=solves,
                                 last=f"{last * 1e3:.0f} ms")

        return report

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._bar.stop()


def print_summary(summary: dict) -> None:
    window = summary["window"]
    rows = [
        ("average JCT", hours(summary["average_jct"])),
        *([(f"average JCT, jobs {window[0]}:{window[1]}", hours(summary["average_jct_window"]))] if window else []),
        ("makespan", hours(summary["makespan"])),
        ("utilization", f"{summary['utilization']:.1%}"),
        ("finish-time fairness rho (mean / worst)", f"{summary['rho_mean']:.3f} / {summary['rho_worst']:.3f}"),
        ("jobs with rho > 1.05", f"{summary['unfair_fraction']:.1%}"),
        ("FTF JCT / (isolated x max(1, N/G)) (mean / worst)",
         f"{summary['ftf_mean']:.3f} / {summary['ftf_worst']:.3f}"),
        ("jobs with FTF > 1.05", f"{summary['ftf_unfair_fraction']:.1%}"),
        *([("completions forced at the runtime cap", str(summary["forced_completions"]))]
          if summary["max_runtime_factor"] else []),
        ("lease-extension rate", f"{summary['lease_extension_rate']:.1%}"),
        *([("deadline satisfactory ratio", f"{summary['deadline_satisfactory_ratio']:.3f}"),
           ("deadline jobs: on time / late of", f"{summary['finished_on_time']} / {summary['finished_late']} of "
                                                f"{summary['deadline_jobs']}")] if summary["deadline_jobs"] else []),
        ("preemptions", str(summary["preemptions"])),
        ("allocation solves", str(summary["solves"])),
        ("solver time p50 / p99 / total", (f"{summary['solver_seconds_p50'] * 1e3:.1f} ms / "
                                           f"{summary['solver_seconds_p99'] * 1e3:.1f} ms / "
                                           f"{summary['solver_seconds_total']:.2f} s")),
        *([("of which build / translate / solve", " / ".join(
            f"{summary[f'solver_{k}_seconds_total']:.2f} s" for k in ("build", "translate", "solve")))]
          if summary["solver_solve_seconds_total"] > 0 else []),
    ]
    _metrics(f"[bold]{summary['policy']}[/] with [bold]{summary['solver']}[/] on {summary['cluster']}: "
             f"{summary['jobs_completed']}/{summary['jobs']} jobs completed, {summary['rounds']} rounds of "
             f"{summary['round_length']:g} s ({summary['preset']} settings)",
             rows, summary["notes"])


def _metrics(title: str, rows: list[tuple[str, str]], notes: list[str]) -> None:
    """A run's title line, its (metric, value) table and its notes."""
    console.print(title)
    table = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for note in notes:
        console.print(f"note: {note}")


def hours(seconds: float) -> str:
    return f"{seconds:,.1f} s ({seconds / 3600:.2f} h)"


def print_deadline_summary(s: dict) -> None:
    deadlines = [
        ("deadline satisfactory ratio", f"{s['deadline_satisfactory_ratio']:.3f}"),
        ("deadline jobs: on time / late / declined",
         f"{s['finished_on_time']} / {s['finished_late']} / {s['declined']} of {s['deadline_jobs']}"),
        ("accepted", str(s["accepted"])),
    ] if s["deadline_jobs"] else [
        ("jobs completed", f"{s['jobs_completed']} of {s['jobs']}"),
        ("JCT mean / median / p99", f"{s['average_jct']:,.1f} s / {s['median_jct']:,.1f} s / {s['p99_jct']:,.1f} s"),
        ("makespan", f"{s['makespan']:,.1f} s"),
    ]
    rows = [
        *deadlines,
        ("best-effort jobs: average JCT",
         f"{s['best_effort_average_jct']:,.1f} s" if s["best_effort_jobs"] else "-"),
        ("cluster efficiency (time average)", f"{s['cluster_efficiency_mean']:.3f}"),
        ("overhead charged", f"{s['overhead_seconds_total']:,.0f} s"),
        ("programs solved", str(s["programs_solved"])),
        ("decision time p50 / p99 / total", f"{s['solver_seconds_p50'] * 1e3:.1f} ms / "
                                            f"{s['solver_seconds_p99'] * 1e3:.1f} ms / "
                                            f"{s['solver_seconds_total']:.2f} s"),
        ("wall time", f"{s['wall_seconds']:.2f} s"),
    ]
    _metrics(f"[bold]{s['policy']}[/] on {s['cluster']} ({s['gpus']} GPUs), {s['slot_seconds']:g} s slots "
             f"({s['preset']} settings): "
             f"{s['jobs']} jobs, {s['decisions']} decisions", rows, s["notes"])

