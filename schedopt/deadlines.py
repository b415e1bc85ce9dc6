"""``schedopt simulate`` for deadline traces (ElasticFlow / ITP CSV on a node cluster)."""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.table import Table

from allocators import POLICIES, UnknownPolicyError
from allocators.deadline import DEADLINE_POLICIES
from simulator.deadline_simulate import simulate_deadlines
from simulator.overheads import OverheadModel


def simulate_deadlines_command(*, trace: Path | None, cluster_spec: Path | None, throughput_dir: Path | None,
                               policy: str, solver: str, slot: float, gpu_type: str | None,
                               overhead: float | None, deadlines: str | None, report, round_config):
    """Any policy on a deadline trace: a slot policy on the slotted engine, a round policy (with
    ``round_config``) on the round engine; returns the run's result."""
    missing = [name for name, value in (("--trace", trace), ("--cluster-spec", cluster_spec),
                                        ("--throughput-dir", throughput_dir)) if value is None]
    if missing:
        raise ValueError(f"a deadline trace run needs {', '.join(missing)} too")
    if deadlines is not None:
        raise ValueError(f"--deadlines: {trace} is a deadline trace and brings its own deadlines")
    if policy not in DEADLINE_POLICIES and policy not in POLICIES:
        raise UnknownPolicyError(f"unknown policy {policy!r}; known: "
                                 f"{', '.join(sorted({*POLICIES, *DEADLINE_POLICIES}))}")
    if policy in DEADLINE_POLICIES and overhead not in (None, 0):
        raise ValueError(f"--overhead for {policy}: 0 (none) or leave it out (the published model)")
    return simulate_deadlines(trace, cluster_spec, throughput_dir, policy=policy,
                              solver="highs" if solver == "auto" else solver, slot=slot, gpu_type=gpu_type,
                              overhead=OverheadModel.none() if overhead == 0 else None, progress=report,
                              round_config=round_config)


def print_deadline_summary(s: dict, console) -> None:
    console.print(f"[bold]{s['policy']}[/] on {s['cluster']} ({s['gpus']} GPUs), {s['slot_seconds']:g} s slots: "
                  f"{s['jobs']} jobs, {s['decisions']} decisions")
    table = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("deadline satisfactory ratio", f"{s['deadline_satisfactory_ratio']:.3f}"),
        ("deadline jobs: on time / late / declined",
         f"{s['finished_on_time']} / {s['finished_late']} / {s['declined']} of {s['deadline_jobs']}"),
        ("accepted", str(s["accepted"])),
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
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    for note in s["notes"]:
        console.print(f"note: {note}")
