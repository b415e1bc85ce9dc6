"""The metrics every run reports, whichever engine ran it; each name says which definition.

Per job (``JOB_COLUMNS``): arrival, deadline (inf: none), requested GPUs, state, first start,
finish, JCT, queueing delay (first start − arrival), isolated run time (alone on its requested
GPUs of its reference type), Gavel's ρ, Shockwave's FTF, whether it met its deadline (1 / 0; −1
without one), its preemptions (times it lost its GPUs while unfinished) and its failed leases
(on a real executor).

Per run (``SUMMARY_KEYS``):

- ``average_jct``, ``median_jct``, ``p99_jct`` over finished jobs; ``queueing_delay_mean`` and
  ``queueing_delay_p999`` over started jobs; ``makespan`` (last finish − first arrival);
  ``utilization`` = busy GPU-seconds / (GPUs × makespan);
- Gavel's finish-time fairness ``rho_*`` (JCT / JCT under the isolated 1/m share, m the jobs
  present: :func:`simulator.metrics.isolated_finish`); Shockwave's ``ftf_*`` = JCT /
  (isolated run time × max(1, N / G)); ``*_unfair_fraction``: share of jobs above 1.05;
- deadlines: ``deadline_satisfactory_ratio`` = deadline jobs finished by their deadline / deadline
  jobs (declined ones count as missed), with ``deadline_jobs``, ``accepted``, ``declined``,
  ``finished_on_time``, ``finished_late``, ``unfinished`` (neither finished, declined nor failed);
  ``best_effort_average_jct`` over jobs without a deadline;
- ``cluster_efficiency_mean`` = time average of Σ_running rate(n) / rate(1) over the GPUs
  (ElasticFlow's CE; 1 = every GPU as useful as a job's first);
- ``jobs_failed`` (their leases failed too often on a real executor) and ``failed_leases``;
- ``preemptions``; ``solver_seconds_p50`` / ``_p99`` / ``_total`` of the policy's decisions;
- Lucid's Table 5 split (:data:`LARGE_JOB_GPUS`): ``large_jobs`` / ``small_jobs`` (jobs requesting
  more than 8 GPUs / at most 8), ``average_jct_large`` / ``_small`` over finished jobs and
  ``queueing_delay_mean_large`` / ``_small`` over started ones;
- ``per_vc``, only on a cluster split into virtual clusters: VC name (in the cluster's VC order) →
  ``jobs``, ``jobs_completed``, ``average_jct``, ``queueing_delay_mean``, ``queueing_delay_p999``
  (:data:`PER_VC_KEYS`, defined as the run-wide ones over the VC's jobs).
"""

from __future__ import annotations

import math

import numpy as np

from simulator.quantiles import grouped_percentile, median, percentile

UNFAIR = 1.05

JOB_COLUMNS = ("job_id", "arrival", "deadline", "requested_gpus", "state", "start", "finish", "jct",
               "queueing_delay", "isolated_runtime", "rho", "ftf", "met_deadline", "preemptions", "failed_leases")

SUMMARY_KEYS = ("jobs", "jobs_completed", "average_jct", "median_jct", "p99_jct", "queueing_delay_mean",
                "queueing_delay_p999", "makespan", "utilization", "rho_mean", "rho_worst", "unfair_fraction",
                "ftf_mean", "ftf_worst", "ftf_unfair_fraction", "deadline_jobs", "deadline_satisfactory_ratio",
                "accepted", "declined", "finished_on_time", "finished_late", "unfinished",
                "best_effort_average_jct", "cluster_efficiency_mean", "jobs_failed", "failed_leases", "preemptions",
                "solver_seconds_p50",
                "solver_seconds_p99", "solver_seconds_total", "large_jobs", "small_jobs", "average_jct_large",
                "average_jct_small", "queueing_delay_mean_large", "queueing_delay_mean_small")
#: a large job requests more GPUs than this: the split of Lucid's Table 5 ("Result Summary of Different
#: Scales of Workloads": ``gpu_num > 8`` vs ``<= 8`` in S-Lab-System-Group/Lucid,
#: simulation/plot/result_plot.ipynb)
LARGE_JOB_GPUS = 8
#: each VC's entry in summary.json's ``per_vc`` (runs on clusters split into VCs only)
PER_VC_KEYS = ("jobs", "jobs_completed", "average_jct", "queueing_delay_mean", "queueing_delay_p999")
#: summary keys only some runs have, after SUMMARY_KEYS
OPTIONAL_KEYS = ("per_vc",)


def _stat(values: np.ndarray, fn) -> float:
    return float(fn(values)) if values.size else math.nan


def outcome_metrics(*, arrival: np.ndarray, deadline: np.ndarray, start: np.ndarray, finish: np.ndarray,
                    done: np.ndarray, declined: np.ndarray, failed: np.ndarray, failed_leases: np.ndarray,
                    isolated_runtime: np.ndarray, rho: np.ndarray,
                    gpus: float, makespan: float, busy_gpu_seconds: float, efficiency_seconds: float,
                    preemptions: np.ndarray, solve_seconds: np.ndarray, requested: np.ndarray,
                    counted: np.ndarray | None = None, on_time: np.ndarray | None = None,
                    vc: np.ndarray | None = None, vc_names: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """(per-job columns without job_id / requested GPUs / state, summary) of one run.
    ``requested``: GPUs per job; ``counted``: the jobs the fairness figures cover (default: all;
    Gavel's measurement window); ``efficiency_seconds``: ∫ Σ_running rate(n) / rate(1) dt;
    ``on_time``: a deadline test other than finish <= deadline (the published rules' own); ``vc``:
    each job's index into ``vc_names`` (None: no VCs, no ``per_vc``)."""
    counted = np.ones(arrival.shape, dtype=bool) if counted is None else counted
    jct = np.where(done, finish - arrival, np.nan)
    queued = start - arrival
    ftf = jct / (isolated_runtime * max(1.0, arrival.size / max(gpus, 1.0)))
    has_deadline = np.isfinite(deadline)
    met = done & (finish <= deadline + 1e-6) if on_time is None else done & on_time
    fair = done & counted
    j, r, f = jct[done], rho[fair], ftf[fair]
    q = queued[np.isfinite(queued)]
    n_deadline = int(has_deadline.sum())
    be = done & ~has_deadline
    summary = {
        "jobs": int(arrival.size), "jobs_completed": int(done.sum()),
        "average_jct": _stat(j, np.mean), "median_jct": _stat(j, median),
        "p99_jct": _stat(j, lambda v: percentile(v, 99)),
        "queueing_delay_mean": _stat(q, np.mean), "queueing_delay_p999": _stat(q, lambda v: percentile(v, 99.9)),
        "makespan": makespan,
        "utilization": busy_gpu_seconds / (gpus * makespan) if gpus * makespan > 0 else 0.0,
        "rho_mean": _stat(r, np.mean), "rho_worst": _stat(r, np.max),
        "unfair_fraction": _stat(r, lambda v: (v > UNFAIR).mean()),
        "ftf_mean": _stat(f, np.mean), "ftf_worst": _stat(f, np.max),
        "ftf_unfair_fraction": _stat(f, lambda v: (v > UNFAIR).mean()),
        "deadline_jobs": n_deadline,
        "deadline_satisfactory_ratio": float((met & has_deadline).sum() / n_deadline) if n_deadline else math.nan,
        "accepted": int((has_deadline & ~declined).sum()), "declined": int((has_deadline & declined).sum()),
        "finished_on_time": int((has_deadline & met).sum()), "finished_late": int((has_deadline & done & ~met).sum()),
        "unfinished": int((~done & ~declined & ~failed).sum()),
        "best_effort_average_jct": _stat(jct[be], np.mean),
        "cluster_efficiency_mean": efficiency_seconds / (gpus * makespan) if gpus * makespan > 0 else 0.0,
        "jobs_failed": int(failed.sum()), "failed_leases": int(failed_leases.sum()),
        "preemptions": int(preemptions.sum()),
        "solver_seconds_p50": _stat(solve_seconds, median) if solve_seconds.size else 0.0,
        "solver_seconds_p99": percentile(solve_seconds, 99) if solve_seconds.size else 0.0,
        "solver_seconds_total": float(solve_seconds.sum()),
        **size_split(requested, jct, queued, done),
    }
    if vc is not None:
        summary["per_vc"] = per_vc(vc, vc_names, jct, queued, done)
    columns = {"arrival": arrival, "deadline": deadline, "start": start, "finish": finish, "jct": jct,
               "queueing_delay": queued, "isolated_runtime": isolated_runtime, "rho": rho, "ftf": ftf,
               "met_deadline": np.where(has_deadline, met.astype(int), -1), "preemptions": preemptions,
               "failed_leases": failed_leases}
    return columns, summary


def size_split(requested: np.ndarray, jct: np.ndarray, queued: np.ndarray, done: np.ndarray) -> dict:
    """Lucid's large / small jobs (:data:`LARGE_JOB_GPUS`): counts, average JCT of the finished ones
    and average queueing delay of the started ones."""
    large = requested > LARGE_JOB_GPUS
    started = np.isfinite(queued)
    out = {"large_jobs": int(large.sum()), "small_jobs": int((~large).sum())}
    for name, members in (("large", large), ("small", ~large)):
        out[f"average_jct_{name}"] = _stat(jct[done & members], np.mean)
        out[f"queueing_delay_mean_{name}"] = _stat(queued[started & members], np.mean)
    return out


def per_vc(vc: np.ndarray, names: tuple[str, ...], jct: np.ndarray, queued: np.ndarray,
           done: np.ndarray) -> dict[str, dict]:
    """VC name → :data:`PER_VC_KEYS`: jobs, finished jobs, their average JCT, and the average and
    99.9th percentile queueing delay of the VC's started jobs (NaN where none)."""
    k = len(names)
    started = np.isfinite(queued)
    finished = np.bincount(vc[done], minlength=k)
    began = np.bincount(vc[started], minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        columns = (np.bincount(vc, minlength=k), finished,
                   np.bincount(vc[done], weights=jct[done], minlength=k) / finished,
                   np.bincount(vc[started], weights=queued[started], minlength=k) / began,
                   grouped_percentile(queued[started], vc[started], k, 99.9))
    return {name: {key: (int(col[i]) if col.dtype.kind == "i" else float(col[i]))
                   for key, col in zip(PER_VC_KEYS, columns, strict=True)} for i, name in enumerate(names)}


#: jobs.csv after JOB_COLUMNS, for every run (empty where a clock has no such figure), then
#: ``gpu_seconds_<type>`` per worker type
JOB_EXTRAS = ("model", "batch_size", "priority_weight", "best_effort", "isolated_jct", "runtime", "work_done", "work",
              "overhead_seconds", "forced", "lease_extensions", "in_window")
#: timeline.csv for every run, then ``busy_<type>`` per worker type
TIMELINE_COLUMNS = ("start", "end", "busy_gpus", "running_jobs", "queued_jobs", "cluster_efficiency")
#: summary.json: what ran, then SUMMARY_KEYS, then each clock's settings and counters (None where
#: the clock has none), then the notes
RUN_KEYS = ("policy", "solver", "trace", "cluster", "gpus", "clock", "preset")
SETTING_KEYS = ("round_length", "reset_interval", "overhead", "seed", "gavel_compat", "window", "max_runtime_factor",
                "slot_seconds", "overhead_model", "window_jobs_completed", "average_jct_window",
                "forced_completions", "lease_extension_rate", "best_effort_jobs", "overhead_seconds_total",
                "redone_gpu_seconds", "rounds", "decisions", "solves", "programs_solved",
                "solver_build_seconds_total", "solver_translate_seconds_total", "solver_solve_seconds_total",
                "wall_seconds")


class Timeline:
    """The intervals of a run, recorded the same way by both clocks: per interval its start and
    end (s), the cluster efficiency (1/G) Σ_running rate(n) / rate(1), the GPUs busy per worker
    type, and the jobs running and queued."""

    def __init__(self, types: int):
        self.types = types
        self._rows: list[tuple] = []

    def log(self, start: float, end: float, efficiency: float, busy: list, running: int, queued: int) -> None:
        self._rows.append((start, end, efficiency, *busy, running, queued))

    def __len__(self) -> int:
        return len(self._rows)

    def array(self) -> np.ndarray:
        """One row per interval: start, end, efficiency, busy per type, running, queued."""
        return np.array(self._rows, dtype=float).reshape(-1, 5 + self.types)

    def columns(self, worker_types) -> dict[str, np.ndarray]:
        """timeline.csv's columns."""
        tl, n = self.array(), self.types
        busy = tl[:, 3:3 + n].astype(np.int64)
        return {"start": tl[:, 0], "end": tl[:, 1], "busy_gpus": busy.sum(axis=1),
                **{f"busy_{t}": busy[:, j] for j, t in enumerate(worker_types)},
                "running_jobs": tl[:, -2].astype(np.int64), "queued_jobs": tl[:, -1].astype(np.int64),
                "cluster_efficiency": tl[:, 2]}


#: allocations.csv (slot clock): one row per job holding GPUs per interval
ALLOCATION_COLUMNS = ("start", "end", "job_id", "gpus", "nodes", "batch_size")


class Allocations:
    """What each job held, interval by interval, on the slot clock: per decision, the jobs holding
    GPUs, their GPUs, the nodes they span (-1 where the clock places no nodes) and their batch size
    (the co-adaptive batch chosen for the placement, else the trace's)."""

    def __init__(self):
        self._parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def log(self, decision: int, jobs: np.ndarray, gpus: np.ndarray, nodes: np.ndarray, batch: np.ndarray) -> None:
        self._parts.append((decision, jobs, gpus, nodes, batch))

    def columns(self, timeline: dict[str, np.ndarray], job_ids: np.ndarray) -> dict[str, np.ndarray]:
        """allocations.csv's columns; decision k spans timeline row k."""
        count = [part[1].size for part in self._parts]
        row = np.repeat([part[0] for part in self._parts], count).astype(np.int64)
        jobs, gpus, nodes, batch = (np.concatenate([part[i] for part in self._parts]) if self._parts
                                    else np.zeros(0, dtype=np.int64) for i in range(1, 5))
        return dict(zip(ALLOCATION_COLUMNS, (timeline["start"][row], timeline["end"][row], job_ids[jobs],
                                             gpus.astype(np.int64), nodes.astype(np.int64), batch.astype(np.int64)),
                        strict=True))


def conform(jobs: dict, timeline: dict, summary: dict, worker_types) -> tuple[dict, dict, dict]:
    """The run's columns and summary in the order every run has (a figure the clock lacks: NaN /
    None); a column outside these lists is an error, so no run has columns another lacks."""
    n = len(jobs["job_id"])
    per_job = (*JOB_COLUMNS, *JOB_EXTRAS, *(f"gpu_seconds_{t}" for t in worker_types))
    per_interval = (*TIMELINE_COLUMNS, *(f"busy_{t}" for t in worker_types))
    optional = tuple(k for k in OPTIONAL_KEYS if k in summary)
    keys = (*RUN_KEYS, *SUMMARY_KEYS, *optional, *SETTING_KEYS, "notes")
    for given, known, what in ((jobs, per_job, "job column"), (timeline, per_interval, "timeline column"),
                               (summary, keys, "summary key")):
        extra = set(given) - set(known)
        if extra:
            raise ValueError(f"{what}(s) {sorted(extra)} not in the common set (simulator.outcomes)")
    rows = len(timeline["start"])
    return ({k: jobs[k] if k in jobs else np.full(n, np.nan) for k in per_job},
            {k: timeline[k] if k in timeline else np.full(rows, np.nan) for k in per_interval},
            {k: summary.get(k) for k in keys})


def job_states(done: np.ndarray, declined: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """finished / declined / failed / unfinished per job."""
    return np.select([done, declined, failed], ["finished", "declined", "failed"], "unfinished").astype(object)
