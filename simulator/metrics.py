"""What a simulation records and the metrics it reports.

Finish-time fairness compares each job's JCT with its JCT under the isolated share: the
job alone on ``1/m`` of every type it can run on (``x_ij = (W_j / m) / s_i``, the row
scaled to sum <= 1), where m is the number of jobs present, integrated over the run, so
its isolated rate is ``a_i / max(b_i, m)`` with ``a_i = sum_j T_ij W_j / s_i`` and
``b_i = sum_j W_j / s_i`` over the types it can run on. ``rho = JCT / isolated JCT``;
a job is treated unfairly when ``rho > 1.05``.

A slotted run (:func:`slot_result`) reports the same metrics and, ElasticFlow's, the deadline
satisfactory ratio (deadline jobs finished by their deadline / all deadline jobs, declined ones
missed; best-effort jobs are not deadline jobs) and cluster efficiency
CE(t) = (1/G) Σ_running T_j(n_j) / T_j(1) per decision.

Shockwave's finish-time fairness uses a static contention factor instead:
``ftf_i = JCT_i / (T_iso_i · max(1, N / G))`` with ``T_iso_i`` the job's isolated
(batch-size-adapted) run time, N the jobs of the trace and G the cluster's GPUs.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from allocators.slot_plans import JobState, SlotPolicy
from optim import Timings
from simulator.executor import FailedLeases
from simulator.files import write_atomically
from simulator.outcomes import Allocations, Timeline, conform, job_states, outcome_metrics
from simulator.quantiles import percentile
from simulator.round_view import RoundView

UNFAIR_RHO = 1.05


#: the parts of a solve's time that policies may report
SOLVE_SPLIT = ("build", "translate", "solve")


@dataclass
class RunRecord:
    """Per-job and per-round accumulators filled in by the engine."""

    steps: np.ndarray
    gpu_seconds: np.ndarray
    busy_gpu_seconds: np.ndarray
    finish: np.ndarray
    done: np.ndarray
    first_start: np.ndarray
    preemptions: np.ndarray
    lease_extensions: np.ndarray
    iso_a: np.ndarray
    iso_b: np.ndarray
    isolated_runtime: np.ndarray
    runtime: np.ndarray
    forced: np.ndarray
    failed: np.ndarray
    failures: FailedLeases
    extensions: int = 0
    extensions_possible: int = 0
    solve_log: list[tuple] = field(default_factory=list)
    notes: dict[str, None] = field(default_factory=dict)
    timeline: Timeline = field(init=False)

    def __post_init__(self) -> None:
        self.timeline = Timeline(self.busy_gpu_seconds.size)

    @classmethod
    def create(cls, workload: RoundView, isolated_runtime: np.ndarray) -> RunRecord:
        J, n = workload.num_jobs, len(workload.cluster.worker_types)
        s = workload.trace.scale_factors[:, None].astype(float)
        fits = (workload.rates > 0) & (workload.trace.scale_factors[:, None] <= workload.cluster.gpus[None, :])
        W = workload.cluster.gpus[None, :]
        return cls(
            steps=np.zeros(J, dtype=np.int64), gpu_seconds=np.zeros((J, n)), busy_gpu_seconds=np.zeros(n),
            finish=np.full(J, np.nan), done=np.zeros(J, dtype=bool), first_start=np.full(J, np.nan),
            preemptions=np.zeros(J, dtype=np.int64), lease_extensions=np.zeros(J, dtype=np.int64),
            iso_a=np.where(fits, workload.rates * W / s, 0.0).sum(axis=1),
            iso_b=np.where(fits, W / s, 0.0).sum(axis=1), isolated_runtime=isolated_runtime,
            runtime=np.zeros(J), forced=np.zeros(J, dtype=bool),
            failed=np.zeros(J, dtype=bool), failures=FailedLeases.of(J),
        )

    def log_solve(self, now: float, jobs: int, seconds: float, spent: Timings) -> None:
        """Record one allocation solve or re-plan at ``now`` over ``jobs`` active jobs, taking
        ``seconds``, of which ``spent`` (:func:`optim.tally`) built models, translated them
        for the solver and solved them; the rest is the policy's own Python."""
        self.solve_log.append((now, jobs, seconds, *(getattr(spent, k) for k in SOLVE_SPLIT)))

    def log_interval(self, start: float, end: float, busy: np.ndarray, running: int, present: int,
                     efficiency: float = 0.0) -> None:
        """Record one round (or idle gap) with ``present`` jobs in the system and its cluster
        ``efficiency``."""
        self.timeline.log(start, end, efficiency, busy.tolist(), running, present - running)


def isolated_finish(starts: np.ndarray, ends: np.ndarray, present: np.ndarray, arrival: np.ndarray,
                    steps: np.ndarray, a: np.ndarray, b: np.ndarray, now: float) -> np.ndarray:
    """When each job would finish under its isolated share, from the recorded intervals.

    A job accrues from the first interval starting at or after its arrival, at rate
    ``a_i / max(b_i, m)`` with m the jobs present in the interval, and after the last
    interval (``now``) alone at ``a_i / max(b_i, 1)``. Jobs with equal b_i share one
    cumulative integral ``G(k) = sum_{l<k} dur_l / max(b, m_l)``; a job finishes where
    ``a_i (G - G(first_i))`` reaches its steps (a search, not a pass per round)."""
    finish = np.full(arrival.shape, np.nan)
    first = np.searchsorted(starts, arrival, side="left")
    size = starts.size
    for level in sorted(set(b.tolist())):  # not np.unique: it imports numpy.ma (5 ms a run)
        jobs = np.flatnonzero(b == level)
        per = np.maximum(level, np.maximum(present, 1))
        G = np.concatenate([[0.0], np.cumsum((ends - starts) / per)])
        target = G[first[jobs]] + steps[jobs] / a[jobs]
        k = np.searchsorted(G, target, side="left")
        inside = k <= size
        kk = k[inside] - 1
        finish[jobs[inside]] = starts[kk] + (target[inside] - G[kk]) * per[kk]
        finish[jobs[~inside]] = now + (target[~inside] - G[size]) * max(level, 1.0)
    return finish


@dataclass
class SimulationResult:
    """``jobs``, ``timeline`` and ``solves`` (one row per allocation solve or re-plan) as
    column dicts (``jobs_frame()`` / ``timeline_frame()`` / ``solves_frame()`` give pandas
    DataFrames), ``summary`` as a flat dict of metrics."""

    jobs: dict[str, np.ndarray]
    timeline: dict[str, np.ndarray]
    summary: dict
    solves: dict[str, np.ndarray] = field(default_factory=dict)
    allocations: dict[str, np.ndarray] = field(default_factory=dict)

    def jobs_frame(self):
        import pandas as pd

        return pd.DataFrame(self.jobs)

    def timeline_frame(self):
        import pandas as pd

        return pd.DataFrame(self.timeline)

    def solves_frame(self):
        import pandas as pd

        return pd.DataFrame(self.solves)

    def files(self) -> dict[str, str]:
        """The run's files as text: ``jobs.csv``, ``timeline.csv``, ``solves.csv``, ``summary.json``
        and, on the slot clock, ``allocations.csv``."""
        files = {"jobs.csv": csv_text(self.jobs), "timeline.csv": csv_text(self.timeline),
                 "solves.csv": csv_text(self.solves) if self.solves else "",
                 "summary.json": json.dumps(self.summary, indent=2, default=_json_default) + "\n"}
        if self.allocations:
            files["allocations.csv"] = csv_text(self.allocations)
        return files

    def write(self, out: str | os.PathLike) -> list[Path]:
        """Write :meth:`files` into ``out``; each file appears whole or not at all."""
        paths = []
        for name, text in self.files().items():
            paths.append(Path(out) / name)
            write_atomically(paths[-1], text)
        return paths


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def csv_text(columns: dict[str, np.ndarray]) -> str:
    """Columns as CSV text: floats to 6 decimals (trailing zeros cut), NaN as empty."""
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    cells = [_cells(v) for v in columns.values()]
    writer.writerows(zip(*cells))
    return buf.getvalue()


def _cells(values: np.ndarray) -> list:
    if values.dtype.kind == "f":
        return ["" if math.isnan(v) else str(v) if math.isinf(v) else f"{v:.6f}".rstrip("0").rstrip(".")
                for v in values.tolist()]
    return values.tolist()


def _percentile(values: np.ndarray, q: float) -> float:
    return percentile(values, q) if values.size else 0.0


def summarize(workload: RoundView, policy, config, rec: RunRecord, now: float) -> SimulationResult:
    """Per-job columns, the timeline and the summary metrics of a finished run."""
    tr, types = workload.trace, workload.cluster.worker_types
    ids = np.arange(workload.num_jobs)
    in_window = np.ones(ids.size, dtype=bool) if config.window is None else (
        (ids >= config.window[0]) & (ids < config.window[1]))
    tl = rec.timeline.array()
    adapts = np.asarray(tr.modes) != "static"
    work = np.where(adapts, rec.isolated_runtime * workload.rates[ids, workload.reference_column], tr.total_steps)
    iso_finish = isolated_finish(tl[:, 0], tl[:, 1], tl[:, -2] + tl[:, -1], tr.arrival_times,
                                 work.astype(float), rec.iso_a, rec.iso_b, now)
    jct = rec.finish - tr.arrival_times
    iso_jct = np.where(rec.done, iso_finish - tr.arrival_times, np.nan)
    rho = jct / iso_jct
    gpus = float(workload.cluster.gpus.sum())
    ftf = jct / (rec.isolated_runtime * max(1.0, workload.num_jobs / gpus))
    jobs = {
        "job_id": ids, "model": np.asarray(tr.job_types, dtype=object),
        "priority_weight": tr.weights, "arrival": tr.arrival_times, "start": rec.first_start,
        "finish": rec.finish, "jct": jct, "isolated_jct": iso_jct, "rho": rho,
        "isolated_runtime": rec.isolated_runtime, "ftf": ftf, "runtime": rec.runtime, "forced": rec.forced,
        **{f"gpu_seconds_{t}": rec.gpu_seconds[:, j] for j, t in enumerate(types)},
        "preemptions": rec.preemptions, "lease_extensions": rec.lease_extensions,
        "work_done": rec.steps, "work": tr.total_steps, "in_window": in_window,
    }
    timeline = rec.timeline.columns(types)
    log = np.array(rec.solve_log, dtype=float).reshape(-1, 3 + len(SOLVE_SPLIT))
    solves = {"time": log[:, 0], "jobs": log[:, 1].astype(np.int64), "seconds": log[:, 2],
              **{f"{k}_seconds": log[:, 3 + i] for i, k in enumerate(SOLVE_SPLIT)}}
    done = rec.done
    win = done & in_window
    makespan = now - float(tr.arrival_times.min())
    capacity = float(workload.cluster.gpus.sum()) * makespan
    rho_w = rho[win]
    ftf_w = ftf[win]
    deadline = workload.slo_deadlines()
    common_jobs, common = outcome_metrics(
        arrival=tr.arrival_times, deadline=deadline, start=rec.first_start, finish=rec.finish, done=done,
        declined=np.zeros(ids.size, dtype=bool), failed=rec.failed, failed_leases=rec.failures.count,
        isolated_runtime=rec.isolated_runtime, rho=rho, gpus=gpus,
        makespan=makespan, busy_gpu_seconds=float(rec.busy_gpu_seconds.sum()),
        efficiency_seconds=_efficiency_seconds(workload, rec.gpu_seconds), preemptions=rec.preemptions,
        solve_seconds=solves["seconds"], requested=tr.scale_factors, counted=in_window)
    jobs.update(common_jobs, requested_gpus=tr.scale_factors, state=job_states(done, np.zeros_like(done), rec.failed),
                best_effort=~np.isfinite(deadline))
    summary = {
        "policy": policy.name, "solver": policy.solver, "trace": tr.source, "cluster": str(workload.cluster),
        "gpus": int(gpus), "clock": "rounds", "preset": config.preset, "round_length": config.round_length,
        "reset_interval": config.reset_interval,
        "overhead": config.overhead, "seed": config.seed, "gavel_compat": config.gavel_compat,
        "window": list(config.window) if config.window else None,
        "jobs": int(workload.num_jobs), "jobs_completed": int(done.sum()), "window_jobs_completed": int(win.sum()),
        "redone_gpu_seconds": rec.failures.redone_gpu_seconds,
        "average_jct": float(jct[done].mean()) if done.any() else math.nan,
        "average_jct_window": float(jct[win].mean()) if win.any() else math.nan,
        "makespan": makespan,
        "utilization": float(rec.busy_gpu_seconds.sum() / capacity) if capacity > 0 else 0.0,
        "rho_mean": float(rho_w.mean()) if rho_w.size else math.nan,
        "rho_worst": float(rho_w.max()) if rho_w.size else math.nan,
        "unfair_fraction": float((rho_w > UNFAIR_RHO).mean()) if rho_w.size else math.nan,
        "ftf_mean": float(ftf_w.mean()) if ftf_w.size else math.nan,
        "ftf_worst": float(ftf_w.max()) if ftf_w.size else math.nan,
        "ftf_unfair_fraction": float((ftf_w > UNFAIR_RHO).mean()) if ftf_w.size else math.nan,
        "forced_completions": int(rec.forced.sum()),
        "max_runtime_factor": config.max_runtime_factor,
        "preemptions": int(rec.preemptions.sum()),
        "lease_extension_rate": rec.extensions / rec.extensions_possible if rec.extensions_possible else 0.0,
        "rounds": len(rec.timeline),
        "solves": len(rec.solve_log),
        "solver_seconds_p50": _percentile(solves["seconds"], 50),
        "solver_seconds_p99": _percentile(solves["seconds"], 99),
        "solver_seconds_total": float(solves["seconds"].sum()),
        **{f"solver_{k}_seconds_total": float(solves[f"{k}_seconds"].sum())
           for k in SOLVE_SPLIT},
        "notes": list(rec.notes),
    }
    summary.update({k: v for k, v in common.items() if k not in summary})
    return SimulationResult(*conform(jobs, timeline, summary, types), solves)


def speedups(workload: RoundView) -> np.ndarray:
    """Per job and type, rate(n) / rate(1) on its scale factor n: the table's rate over its 1-GPU
    entry for the model (n, linear, where the table has none)."""
    table, tr = workload.table, workload.trace
    s = tr.scale_factors.astype(float)
    if table is None:
        return np.broadcast_to(s[:, None], workload.rates.shape)
    cols = table.type_columns(workload.cluster.worker_types)
    index = {k: i for i, k in enumerate(table.keys)}
    one = np.array([index.get((m, 1), -1) for m in tr.job_types])
    single = np.where(one[:, None] >= 0, table.isolated[np.maximum(one, 0)][:, cols], np.nan)
    return np.where(single > 0, workload.rates / np.where(single > 0, single, 1.0), s[:, None])


def _efficiency_seconds(workload: RoundView, gpu_seconds: np.ndarray) -> float:
    """∫ Σ_running rate(n) / rate(1) dt: each job's GPU-seconds per type over its scale factor, times
    its :func:`speedups` on that type."""
    s = workload.trace.scale_factors.astype(float)
    return float((gpu_seconds / s[:, None] * speedups(workload)).sum())


def slot_result(*, workload, policy: SlotPolicy, slot: float, preset: str, overhead, finish: np.ndarray,
                first_start: np.ndarray, state: np.ndarray, overhead_seconds: np.ndarray, timeline: Timeline,
                allocations: Allocations, decision_seconds: np.ndarray, decisions: int, wall_seconds: float,
                unschedulable: np.ndarray,
                preemptions: np.ndarray, failures: FailedLeases, work_done: np.ndarray, runtime: np.ndarray,
                held_gpu_seconds: np.ndarray) -> SimulationResult:
    """The slot clock's run as a :class:`SimulationResult` (the common metrics, plus the slot
    length, the overhead model and its seconds, cluster efficiency per decision)."""
    w = workload
    done = state == JobState.DONE
    declined = state == JobState.DECLINED
    failed = state == JobState.FAILED
    tl = timeline.columns((w.worker_type,))
    times, spans = tl["start"], tl["end"] - tl["start"]
    G = float(w.total_gpus)
    col = np.searchsorted(w.gpu_counts, w.requested)
    own = w.rates[np.arange(len(w)), np.minimum(col, len(w.gpu_counts) - 1)]
    rate = np.where(np.isfinite(own) & (own > 0), own, w.iterations / w.duration)
    isolated = w.iterations / rate
    share = G / np.maximum(w.requested, 1)
    present = tl["running_jobs"] + tl["queued_jobs"]
    iso_finish = isolated_finish(times, times + spans, present, w.submit, w.iterations.astype(float),
                                 rate * share, share, float(times[-1]) if times.size else 0.0)
    rho = np.where(done, (finish - w.submit) / (iso_finish - w.submit), np.nan)
    notes = [*policy.notes()]
    if unschedulable.any():
        notes.append(f"{int(unschedulable.sum())} job(s) could never run (no allowed GPU count on this "
                     f"cluster) and count as declined")
    notes += failures.notes
    solves = policy.solve_log()
    makespan = float(np.nanmax(finish) - w.submit.min()) if done.any() else 0.0
    common_jobs, common = outcome_metrics(
        arrival=w.submit, deadline=w.deadline, start=first_start, finish=finish, done=done, declined=declined,
        failed=failed, failed_leases=failures.count, isolated_runtime=isolated, rho=rho, gpus=G, makespan=makespan,
        busy_gpu_seconds=float((tl["busy_gpus"] * spans).sum()),
        efficiency_seconds=float((tl["cluster_efficiency"] * spans).sum() * G),
        preemptions=preemptions, solve_seconds=decision_seconds, requested=w.requested, vc=w.job_vc,
        vc_names=() if w.vcs is None else w.vcs.names)
    summary = {
        "policy": policy.name,
        "solver": getattr(policy, "solver", None),
        "trace": w.trace.source,
        "cluster": f"{w.cluster.num_nodes} nodes x {w.gpus_per_node} GPUs",
        "gpus": w.total_gpus,
        "clock": "slots",
        "preset": preset,
        "slot_seconds": slot,
        "overhead_model": vars(overhead),
        "best_effort_jobs": int(w.best_effort.sum()),
        **common,
        "overhead_seconds_total": float(overhead_seconds.sum()),
        "redone_gpu_seconds": failures.redone_gpu_seconds,
        "decisions": decisions,
        "programs_solved": len(solves),
        "wall_seconds": wall_seconds,
        "notes": notes,
    }
    jobs = {"job_id": w.job_ids, "model": w.trace.model, "batch_size": w.trace.batch_size,
            "requested_gpus": w.requested, "best_effort": w.best_effort,
            "state": job_states(done, declined, failed), **common_jobs,
            "overhead_seconds": overhead_seconds, "priority_weight": np.ones(len(w)), "runtime": runtime,
            "work_done": work_done, "work": w.iterations, f"gpu_seconds_{w.worker_type}": held_gpu_seconds}
    keys = sorted({k for row in solves for k in row})
    solve_cols = {k: np.array([row.get(k, np.nan) for row in solves]) for k in keys}
    return SimulationResult(*conform(jobs, tl, summary, (w.worker_type,)), solve_cols,
                            allocations.columns(tl, w.job_ids))
