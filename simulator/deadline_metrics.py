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
from .metrics import _json_default, csv_text, isolated_finish
from .outcomes import job_states, outcome_metrics


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
              unschedulable: np.ndarray, preemptions: np.ndarray, failed_leases: np.ndarray,
              redone_gpu_seconds: float, failures: dict[int, str]) -> DeadlineResult:
        w = workload
        done = state == JobState.DONE
        declined = state == JobState.DECLINED
        failed = state == JobState.FAILED
        times = np.asarray(timeline.time, dtype=float)
        spans = np.diff(times, append=times[-1]) if times.size else times
        G = float(w.total_gpus)
        col = np.searchsorted(w.gpu_counts, w.requested)
        own = w.rates[np.arange(len(w)), np.minimum(col, len(w.gpu_counts) - 1)]
        rate = np.where(np.isfinite(own) & (own > 0), own, w.iterations / w.duration)
        isolated = w.iterations / rate
        share = G / np.maximum(w.requested, 1)
        present = np.asarray(timeline.running) + np.asarray(timeline.pending)
        iso_finish = isolated_finish(times, times + spans, present, w.submit, w.iterations.astype(float),
                                     rate * share, share, float(times[-1]) if times.size else 0.0)
        rho = np.where(done, (finish - w.submit) / (iso_finish - w.submit), np.nan)
        notes = [*policy.notes()]
        if unschedulable.any():
            notes.append(f"{int(unschedulable.sum())} job(s) could never run (no allowed GPU count on this "
                         f"cluster) and count as declined")
        notes += [f"job {w.job_ids[j]} failed after {int(failed_leases[j])} failed leases; last: {reason}"
                  for j, reason in failures.items()]
        solves = policy.solve_log()
        makespan = float(np.nanmax(finish) - w.submit.min()) if done.any() else 0.0
        common_jobs, common = outcome_metrics(
            arrival=w.submit, deadline=w.deadline, start=first_start, finish=finish, done=done, declined=declined,
            failed=failed, failed_leases=failed_leases, isolated_runtime=isolated, rho=rho, gpus=G, makespan=makespan,
            busy_gpu_seconds=float((np.asarray(timeline.busy) * spans).sum()),
            efficiency_seconds=float((np.asarray(timeline.efficiency) * spans).sum() * G),
            preemptions=preemptions, solve_seconds=decision_seconds)
        summary = {
            "policy": policy.name,
            "trace": w.trace.source,
            "cluster": f"{w.cluster.num_nodes} nodes x {w.gpus_per_node} GPUs",
            "gpus": w.total_gpus,
            "slot_seconds": slot,
            "overhead_model": vars(overhead),
            "best_effort_jobs": int(w.best_effort.sum()),
            **common,
            "overhead_seconds_total": float(overhead_seconds.sum()),
            "redone_gpu_seconds": redone_gpu_seconds,
            "decisions": decisions,
            "programs_solved": len(solves),
            "wall_seconds": wall_seconds,
            "notes": notes,
        }
        jobs = {"job_id": w.job_ids, "model": w.trace.model, "batch_size": w.trace.batch_size,
                "requested_gpus": w.requested, "best_effort": w.best_effort.astype(int),
                "state": job_states(done, declined, failed), **common_jobs,
                "overhead_seconds": overhead_seconds}
        keys = sorted({k for row in solves for k in row})
        solve_cols = {k: np.array([row.get(k, np.nan) for row in solves]) for k in keys}
        timeline_cols = {"start": times, "end": times + spans, "busy_gpus": np.asarray(timeline.busy),
                         "running_jobs": np.asarray(timeline.running), "queued_jobs": np.asarray(timeline.pending),
                         "cluster_efficiency": np.asarray(timeline.efficiency)}
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
