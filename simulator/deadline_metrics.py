"""What a deadline simulation reports.

- deadline satisfactory ratio = deadline jobs finished by their deadline / all deadline jobs
  (declined jobs count as missed; best-effort jobs are not deadline jobs);
- accepted (admitted deadline jobs), declined, finished late, unfinished;
- cluster efficiency CE(t) = (1/G) Σ_running T_j(n_j) / T_j(1), per decision, and its time average;
- JCT of best-effort jobs; decisions and the policy's decision time.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from allocators.deadline import DeadlinePolicy, JobState

from .files import write_atomically
from .metrics import _json_default, _percentile, csv_text


@dataclass
class DeadlineResult:
    summary: dict
    jobs: dict[str, np.ndarray]
    timeline: dict[str, np.ndarray]
    solves: dict[str, np.ndarray]

    @classmethod
    def build(cls, *, workload, policy: DeadlinePolicy, slot: float, overhead, finish: np.ndarray,
              first_start: np.ndarray, state: np.ndarray, overhead_seconds: np.ndarray, timeline,
              decision_seconds: np.ndarray, decisions: int, wall_seconds: float,
              unschedulable: np.ndarray) -> DeadlineResult:
        w = workload
        deadline_jobs = ~w.best_effort
        done = state == JobState.DONE
        declined = state == JobState.DECLINED
        on_time = done & (finish <= w.deadline + 1e-6)
        late = done & ~on_time
        n_deadline = int(deadline_jobs.sum())
        jct = finish - w.submit
        be_done = w.best_effort & done
        times = np.asarray(timeline.time)
        ce = np.asarray(timeline.efficiency)
        spans = np.diff(times, append=times[-1]) if times.size else times
        notes = [*policy.notes()]
        if unschedulable.any():
            notes.append(f"{int(unschedulable.sum())} job(s) could never run (no allowed GPU count on this "
                         f"cluster) and count as declined")
        solves = policy.solve_log()
        summary = {
            "policy": policy.name,
            "trace": w.trace.source,
            "cluster": f"{w.cluster.num_nodes} nodes x {w.gpus_per_node} GPUs",
            "gpus": w.total_gpus,
            "slot_seconds": slot,
            "overhead_model": vars(overhead),
            "jobs": len(w),
            "deadline_jobs": n_deadline,
            "best_effort_jobs": int(w.best_effort.sum()),
            "deadline_satisfactory_ratio": float(on_time[deadline_jobs].sum() / n_deadline) if n_deadline else 1.0,
            "accepted": int((deadline_jobs & ~declined).sum()),
            "declined": int((deadline_jobs & declined).sum()),
            "finished_on_time": int((deadline_jobs & on_time).sum()),
            "finished_late": int((deadline_jobs & late).sum()),
            "unfinished": int((~done & ~declined).sum()),
            "best_effort_average_jct": float(jct[be_done].mean()) if be_done.any() else None,
            "average_jct": float(jct[done].mean()) if done.any() else None,
            "makespan": float(np.nanmax(finish) - w.submit.min()) if done.any() else None,
            "cluster_efficiency_mean": float((ce * spans).sum() / spans.sum()) if spans.sum() > 0 else 0.0,
            "overhead_seconds_total": float(overhead_seconds.sum()),
            "decisions": decisions,
            "decision_seconds_p50": _percentile(decision_seconds, 50),
            "decision_seconds_p99": _percentile(decision_seconds, 99),
            "decision_seconds_total": float(decision_seconds.sum()),
            "programs_solved": len(solves),
            "wall_seconds": wall_seconds,
            "notes": notes,
        }
        jobs = {
            "job_id": w.job_ids, "model": w.trace.model, "batch_size": w.trace.batch_size,
            "requested_gpus": w.requested, "submit": w.submit, "deadline": w.deadline,
            "best_effort": w.best_effort.astype(int),
            "state": np.array([JobState(s).name.lower() for s in state], dtype=object),
            "start": first_start, "finish": finish, "jct": jct,
            "met_deadline": np.where(deadline_jobs, on_time.astype(int), -1),
            "overhead_seconds": overhead_seconds,
        }
        keys = sorted({k for row in solves for k in row})
        solve_cols = {k: np.array([row.get(k, np.nan) for row in solves]) for k in keys}
        timeline_cols = {"time": times, "busy_gpus": np.asarray(timeline.busy), "cluster_efficiency": ce,
                         "running": np.asarray(timeline.running), "pending": np.asarray(timeline.pending)}
        return cls(summary, jobs, timeline_cols, solve_cols)

    def write(self, out: str | os.PathLike) -> list[Path]:
        """``jobs.csv``, ``timeline.csv``, ``solves.csv``, ``summary.json`` in ``out``, each whole or not at all."""
        out = Path(out)
        paths = [out / "jobs.csv", out / "timeline.csv", out / "solves.csv", out / "summary.json"]
        write_atomically(paths[0], csv_text(self.jobs))
        write_atomically(paths[1], csv_text(self.timeline))
        write_atomically(paths[2], csv_text(self.solves) if self.solves else "")
        write_atomically(paths[3], json.dumps(self.summary, indent=2, default=_json_default) + "\n")
        return paths
