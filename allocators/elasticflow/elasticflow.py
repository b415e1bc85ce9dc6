"""ElasticFlow: admission control over elastic deadline jobs, then leftover GPUs by marginal return.

At a decision with arrivals, each arriving deadline job (in deadline order) is admitted iff the
admitted jobs and it can all meet their deadlines (:mod:`formulations.elasticflow`); declined
jobs never run, best-effort jobs are always admitted. Every decision re-plans all admitted
deadline jobs from now and runs the plan's first slot; GPUs the plan leaves free go to running,
pending and best-effort jobs by marginal throughput per added GPU
(:func:`formulations.elasticflow.distribute_leftover`).

Policies:

- ``elasticflow``: the exact program. The published greedy answers first (its plan is proof of
  feasibility). Where it rejects, the last feasible plan (greedy or MILP) is tried with the arrival
  inserted on what it leaves free (:func:`formulations.elasticflow.insert_job`; also a proof), and
  then the LP relaxation (a certificate of infeasibility) and the MILP decide. A MILP over the size
  limit or stopped without an answer falls back to the greedy and says so in the run's notes.

(``elasticflow-greedy`` and ``ef``, the published planner with and without its admission control,
are replayed on the published event-time profile: :mod:`allocators.elasticflow.published`.) Unlike
them, ``elasticflow`` tests each arrival alone (deadline order) and plans only the jobs that can
still make their deadline; the others run on leftover GPUs and block no admission.

Each slot's usable seconds are reduced by the overhead every decision costs a running job
(the engine's ``overhead_floor``), so plans keep the margin the published planner lacks.

Planning slots: the grid now + kΔ up to the furthest deadline; beyond ``fine_slots`` slots the
grid keeps only the slot boundaries at jobs' deadlines (coarser segments, in which a job keeps one
size: a restriction, so a plan found is still a valid plan).
"""

from __future__ import annotations

import math
import time

import numpy as np

from allocators.base import ProgramClass
from allocators.slot_plans import Charge, JobsView, SlotPolicy
from formulations.elasticflow import (
    TOL,
    AdmissionProblem,
    Plan,
    delivered,
    greedy_plan,
    insert_job,
    plan_violations,
    solve_admission,
)
from formulations.leftover import distribute_leftover
from optim import SolveOptions


class ElasticFlow(SlotPolicy):
    """ElasticFlow with exact admission: the greedy, then the LP certificate and the MILP where it rejects."""

    name = "elasticflow"
    program = ProgramClass.MILP
    caps = "elasticflow"
    charge = Charge.EVERY_DECISION
    exact = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, *, fine_slots: int = 64,
                 max_binaries: int = 20_000, time_limit: float = 5.0):
        super().__init__(solver, options)
        self.fine_slots = fine_slots
        self.max_binaries = max_binaries
        self.time_limit = options.time_limit if options and options.time_limit else time_limit
        self._log: list[dict] = []
        self._fallbacks: dict[str, int] = {}
        self.greedy_rejected_exact_admitted = 0
        self.kept_used = 0
        self._next_change = np.inf
        self._kept: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._grid: tuple[float, np.ndarray] = (-np.inf, np.zeros(0))
        self._run = None

    # ---------------------------------------------------------------- admission and planning

    def admit(self, view: JobsView, arrivals: np.ndarray) -> np.ndarray:
        ok = np.ones(len(arrivals), dtype=bool)
        admitted = self._deadline_jobs(view, exclude=arrivals)
        asking = ~view.best_effort[arrivals]
        self._bounds(view, np.union1d(admitted, arrivals[asking]))
        order = np.argsort(view.deadline[arrivals], kind="stable")
        for k in order:
            j = arrivals[k]
            if view.best_effort[j]:
                continue
            trial = np.sort(np.append(admitted, j))
            plan = self._plan(view, trial, purpose="admission", arrival=j)
            ok[k] = plan.feasible
            if plan.feasible:
                admitted = trial
        return ok

    def allocate(self, view: JobsView) -> np.ndarray:
        gpus = np.zeros(len(view.state), dtype=np.int64)
        jobs = self._deadline_jobs(view)
        self._next_change = np.inf
        if jobs.size:
            problem = self.problem(view, jobs)
            plan = self._plan(view, jobs, purpose="allocation", problem=problem)
            gpus[jobs] = plan.gpus[:, 0]
            changes = np.flatnonzero((plan.gpus[:, 1:] != plan.gpus[:, :1]).any(axis=0))
            if changes.size:
                self._next_change = float(view.now + np.cumsum(problem.slot_seconds)[changes[0]])
        active = view.active()
        free = view.total_gpus - int(gpus.sum())
        if free > 0 and active.size:
            throughput = np.where(view.allowed(active), view.rates[active], np.nan)
            gpus[active] = distribute_leftover(gpus[active], free, view.gpu_counts, throughput)
        return gpus

    def _deadline_jobs(self, view: JobsView, exclude: np.ndarray | None = None) -> np.ndarray:
        """Active deadline jobs that can still make their deadline alone on the whole cluster (a
        job past that point is planned no more: it runs on leftover GPUs, like a best-effort job,
        and does not block admissions)."""
        jobs = view.active()
        jobs = jobs[~view.best_effort[jobs]]
        fastest = np.nanmax(np.where(view.allowed(jobs), view.rates[jobs], np.nan), axis=1, initial=0.0)
        alive = view.now + view.remaining[jobs] / np.maximum(fastest, 1e-300) <= view.deadline[jobs]
        jobs = jobs[alive]
        return jobs if exclude is None else jobs[~np.isin(jobs, exclude)]

    def next_decision(self, view: JobsView) -> float:
        """When the current plan changes a job's GPU count (the published planner's scale event)."""
        return self._next_change

    def _plan(self, view: JobsView, jobs: np.ndarray, purpose: str, problem: AdmissionProblem | None = None,
              arrival: int | None = None) -> Plan:
        """The greedy's plan; for the exact policy, where it fails: the last feasible plan with
        ``arrival`` inserted, else the exact program (LP certificate, MILP)."""
        problem = problem or self.problem(view, jobs)
        plan = greedy_plan(problem, keys=jobs, resume=self._run)
        self._run = plan.run
        if not self.exact:
            return plan
        if plan.feasible:
            self._keep(view, jobs, problem, plan.gpus)
            return plan
        kept = self._kept_plan(view, jobs, problem, arrival)
        if kept is not None:
            self.kept_used += 1
            self.greedy_rejected_exact_admitted += purpose == "admission"
            self._keep(view, jobs, problem, kept.gpus)
            return kept
        tick = time.perf_counter()
        exact = solve_admission(problem, self.solver, time_limit=self.time_limit, max_binaries=self.max_binaries,
                                greedy=plan)
        if exact.fell_back:
            reason = f"the MILP stopped ({exact.status}) without a plan or a proof"
            if exact.num_binaries > self.max_binaries:
                reason = f"the MILP would exceed {self.max_binaries} binaries"
            self._fallbacks[reason] = self._fallbacks.get(reason, 0) + 1
        elif exact.feasible:
            self._keep(view, jobs, problem, exact.gpus)
            self.greedy_rejected_exact_admitted += purpose == "admission"
        self._log.append({"time": view.now, "purpose": purpose, "jobs": len(jobs), "slots": problem.num_slots,
                          "method": exact.method, "status": str(exact.status), "feasible": exact.feasible,
                          "binaries": exact.num_binaries, "rows": exact.num_rows,
                          "build_seconds": exact.build_seconds, "solve_seconds": exact.solve_seconds,
                          "seconds": time.perf_counter() - tick})
        return exact if exact.feasible else plan

    def _keep(self, view: JobsView, jobs: np.ndarray, problem: AdmissionProblem, gpus: np.ndarray) -> None:
        """Remember a feasible plan (``jobs`` sorted) with its slot start times."""
        self._kept = (jobs.copy(), _slot_starts(view, problem), np.asarray(gpus).copy())

    def _kept_plan(self, view: JobsView, jobs: np.ndarray, problem: AdmissionProblem,
                   arrival: int | None) -> Plan | None:
        """The last feasible plan read on this decision's slots, repaired and extended by
        :func:`insert_job`: a job it no longer carries to its deadline (progress lost to overhead
        since it was made) and the ``arrival`` it never had are each re-planned on what the others
        leave free. None if the plan misses any other job or a repair does not fit."""
        if self._kept is None:
            return None
        kept_jobs, kept_starts, kept_gpus = self._kept
        pos = np.minimum(np.searchsorted(kept_jobs, jobs), len(kept_jobs) - 1)
        known = kept_jobs[pos] == jobs
        if not (known | (jobs == arrival)).all():
            return None
        col = np.searchsorted(kept_starts, _slot_starts(view, problem) + 1e-9, side="right") - 1
        if col[0] < 0:
            return None
        gpus = np.zeros((len(jobs), problem.num_slots), dtype=np.int64)
        gpus[known] = kept_gpus[pos[known]][:, col]
        gpus = np.where(problem.usable > 0, gpus, 0)
        if plan_violations(problem, gpus, deadlines=False):
            return None
        need = problem.remaining
        for j in np.flatnonzero(delivered(problem, gpus) < need - TOL * np.maximum(need, 1.0)).tolist():
            gpus = insert_job(problem, gpus, j)
            if gpus is None:
                return None
        return Plan(feasible=True, gpus=gpus, method="kept plan")

    def problem(self, view: JobsView, jobs: np.ndarray) -> AdmissionProblem:
        """The admission program's data for ``jobs`` (sorted) from now on this decision's slots."""
        bounds = self._bounds(view, jobs)
        starts, ends = bounds[:-1], bounds[1:]
        capacity = np.full(len(starts), view.total_gpus, dtype=np.int64)
        deadline = view.deadline[jobs]
        usable = np.clip(np.minimum(ends[None, :], deadline[:, None]) - starts[None, :], 0.0, None)
        decisions_per_slot = np.maximum(np.round((ends - starts) / view.slot), 1.0)
        usable = np.clip(usable - view.overhead_floor * decisions_per_slot[None, :], 0.0, None)
        throughput = np.where(view.allowed(jobs), view.rates[jobs], np.nan)
        return AdmissionProblem(capacity=capacity, usable=usable,
                                gpu_counts=view.gpu_counts, throughput=throughput,
                                remaining=view.remaining[jobs].astype(float), slot_seconds=ends - starts)

    def _bounds(self, view: JobsView, jobs: np.ndarray) -> np.ndarray:
        """This decision's slot boundaries (module doc: planning slots), fixed by the first call at
        a decision (admission passes every candidate), so that the greedy runs of one decision
        share their slots and each resumes the previous one."""
        if self._grid[0] == view.now:
            return self._grid[1]
        now, slot = view.now, view.slot
        deadline = view.deadline[jobs]
        horizon = max(float(np.max(deadline, initial=now)) - now, slot)
        count = math.ceil(horizon / slot - 1e-9)
        bounds = now + slot * np.arange(min(count, self.fine_slots) + 1)
        if count > self.fine_slots:
            aligned = now + slot * np.ceil((deadline[deadline > bounds[-1]] - now) / slot - 1e-9)
            bounds = np.union1d(bounds, aligned)
        self._grid, self._run = (now, bounds), None
        return bounds

    # ---------------------------------------------------------------- reporting

    def notes(self) -> list[str]:
        notes = [f"{count} program(s) fell back to the published greedy: {reason}"
                 for reason, count in self._fallbacks.items()]
        if self.exact:
            notes.append(f"admission decisions where the greedy rejected and the exact program admitted: "
                         f"{self.greedy_rejected_exact_admitted}")
            notes.append(f"plans answered by the last feasible plan, repaired or extended: {self.kept_used}")
        return notes

    def solve_log(self) -> list[dict]:
        return self._log


def _slot_starts(view: JobsView, problem: AdmissionProblem) -> np.ndarray:
    return view.now + np.concatenate(([0.0], np.cumsum(problem.slot_seconds)[:-1]))
