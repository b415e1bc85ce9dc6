"""Pollux (``pollux``): each interval, GPUs per job per node maximizing the p-mean of speedups, solved
exactly (:mod:`formulations.pollux`) instead of by the published genetic algorithm.

As the published policy defines the terms:

- a job's speedup on (nodes, GPUs) is its goodput there over its goodput on one node with the fair
  share ⌈G / J⌉ GPUs (G GPUs, J active jobs), from its agent's fitted model with the batch size it
  would choose (:meth:`simulator.coadaptive.CoAdaptiveJobs.speedups`; linear before it has run);
  goodput only depends on whether the GPUs span one node or more, so an option is a GPU count on
  one node or spread;
- speedups are scaled by the job's dominant share of the cluster times its nodes (1/G · K), and a
  job whose GPUs change in any way (its first start included) is worth its speedup times
  ``max(age − 30·restarts, 0) / (age + 30)``;
- fairness is the p-mean with p = −1 and ε = 10⁻³ over all active jobs, those without GPUs at 0;
- a job may grow to twice the GPUs it has run on (its agent's cap, at most 64); at most one job
  spread over nodes per node (interference avoidance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from allocators.base import ProgramClass
from allocators.pollux.placement import RESTART_SECONDS, PolluxSystemPolicy
from allocators.slot_plans import JobsView
from formulations.pollux import EPSILON, P, PolluxPlan, PolluxProblem, solve_allocation
from optim import SolveOptions


@dataclass(frozen=True)
class Decision:
    """One decision's terms, per active job (in Pollux's order: least attained service first, then
    earliest submitted): ``speedup[j, spread, r]`` its scaled speedup on r GPUs on one node
    (spread 0) or across nodes (spread 1), r up to ``most[j]`` (0 beyond, not computed); ``penalty[j]`` the factor
    of a job whose GPUs change; ``current[j]`` its GPUs per node; ``scale`` the speedups' scaling."""

    jobs: np.ndarray
    speedup: np.ndarray
    penalty: np.ndarray
    most: np.ndarray
    current: np.ndarray
    capacity: np.ndarray
    scale: float
    p: float

    def problem(self) -> PolluxProblem:
        """The MILP of this decision (:mod:`formulations.pollux`)."""
        per_node = int(self.capacity.max()) if self.capacity.size else 0
        rows = []
        for local in range(self.jobs.size):
            most = int(self.most[local])
            one = np.arange(1, min(most, per_node) + 1)
            many = np.arange(2, most + 1)
            replicas = np.concatenate([one, many])
            spread = np.concatenate([np.zeros(one.size, dtype=bool), np.ones(many.size, dtype=bool)])
            speedup = self.speedup[local, spread.astype(int), replicas] * self.penalty[local]
            keep = np.zeros(replicas.size, dtype=bool)
            current = self.current[local]
            if current.any():
                held, wide = int(current.sum()), int((current > 0).sum() > 1)
                replicas = np.append(replicas, held)
                spread = np.append(spread, bool(wide))
                speedup = np.append(speedup, self.speedup[local, wide, held])
                keep = np.append(keep, True)
            rows.append((np.full(replicas.size, local), replicas, spread, speedup, keep))
        if not rows:
            empty = np.zeros(0, dtype=np.int64)
            return PolluxProblem(self.capacity, empty, empty, empty.astype(bool), np.zeros(0), empty.astype(bool),
                                 self.current, self.p, EPSILON)
        job, replicas, spread, speedup, keep = (np.concatenate(c) for c in zip(*rows, strict=True))
        return PolluxProblem(self.capacity, job, replicas, spread, speedup, keep, self.current, self.p, EPSILON)


def decision(view: JobsView, p: float) -> Decision:
    """The terms of Pollux's program at this decision (module doc)."""
    ca = view.coadaptive
    jobs = view.active()
    jobs = jobs[np.lexsort((view.submit[jobs], view.attained[jobs]))]
    J, K, G = jobs.size, view.nodes.shape[1], view.total_gpus
    scale = K / G
    most = np.array([min(ca.max_replicas(j), G) for j in jobs.tolist()], dtype=np.int64)
    speedup = np.zeros((J, 2, G + 1))
    penalty = np.ones(J)
    fair = math.ceil(G / J) if J else 1
    for local, j in enumerate(jobs.tolist()):
        top = int(most[local])
        r = np.arange(1, top + 1)
        nodes = np.concatenate([np.ones(top, dtype=np.int64), np.full(top, 2)])
        speedup[local, :, 1:top + 1] = ca.speedups(j, nodes, np.concatenate([r, r]), fair).reshape(2, top) * scale
        age = view.now - view.submit[j]
        restarts = max(int(ca.restarts[j]), 0)
        penalty[local] = max(age - RESTART_SECONDS * restarts, 0.0) / (age + RESTART_SECONDS)
    return Decision(jobs, speedup, penalty, most, view.nodes[jobs], np.full(K, view.gpus_per_node), scale, p)


#: branch-and-bound nodes each allocation program may explore: a limit of work, not of seconds, so
#: a run's plans do not depend on the machine's load (the best plan found is kept when it binds)
NODE_LIMIT = 100
#: seconds each allocation program may take, a safety net for large clusters (where it binds, the
#: plan depends on the machine's speed and the run says so)
TIME_LIMIT = 20.0


class SpeedupPolicy(PolluxSystemPolicy):
    """A policy of Pollux's program's terms (:func:`decision`): :meth:`choose` gives the active jobs'
    GPUs per node (in the decision's job order) where any job is active."""

    p: float = P

    def allocate(self, view: JobsView) -> np.ndarray:
        plan = np.zeros_like(view.nodes)
        terms = decision(view, self.p)
        if terms.jobs.size:
            plan[terms.jobs] = self.choose(view, terms)
        return plan

    def choose(self, view: JobsView, terms: Decision) -> np.ndarray:
        raise NotImplementedError


class Pollux(SpeedupPolicy):
    name = "pollux"
    needs_goodput = True
    program = ProgramClass.MILP
    adaptive_batch = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None, p: float = P,
                 node_limit: int | None = NODE_LIMIT, time_limit: float | None = TIME_LIMIT):
        super().__init__(solver, options)
        self.p = p
        self.node_limit = node_limit
        self.time_limit = time_limit
        self._log: list[dict] = []

    def choose(self, view: JobsView, terms: Decision) -> np.ndarray:
        problem = terms.problem()
        solved = solve_allocation(problem, self.solver, self.solve_options(), start=problem.current)
        self._record(view, solved)
        return solved.gpus

    def solve_options(self) -> SolveOptions:
        """The policy's solver options, with its node and time limits where they set none."""
        opts = self.options or SolveOptions()
        limits = {"node_limit": self.node_limit, "time_limit": self.time_limit}
        return SolveOptions(**{**vars(opts), **{k: v for k, v in limits.items() if getattr(opts, k) is None}})

    def notes(self) -> list[str]:
        opts = self.solve_options()
        limits = {"feasible": f"the {opts.node_limit} node limit", "time_limit": f"the {opts.time_limit} s time limit"}
        stopped = {status: sum(row["status"] == status for row in self._log) for status in limits}
        return [f"{count} of {len(self._log)} allocation programs stopped at {limits[status]} before proving their "
                f"plan optimal; each is the best the solver had found (status {status} in solves.csv)"
                for status, count in stopped.items() if count]

    def _record(self, view: JobsView, plan: PolluxPlan) -> None:
        self._log.append({"time": view.now, "jobs": int(plan.gpus.shape[0]), "objective": plan.objective,
                          "status": plan.status.value, "binaries": plan.num_integers,
                          "build_seconds": plan.build_seconds, "solve_seconds": plan.solve_seconds})

    def solve_log(self) -> list[dict]:
        return self._log
