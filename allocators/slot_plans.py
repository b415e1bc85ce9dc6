"""GPU plans per slot: the contract between the slot clock and a :class:`SlotPolicy`.

At each decision time the engine hands the policy a :class:`JobsView` (arrays over every job of
the trace, no copies) and asks two things:

- ``admit(view, arrivals) -> bool mask``: which of the jobs that arrived since the last decision
  are accepted (the rest are declined and never run; best-effort jobs are never declined);
- ``allocate(view) -> (J,) int``: GPUs each job holds until the next decision (0 = not running).
  Only active jobs (admitted, arrived, unfinished) may get GPUs, at most ``cap`` each, at most
  ``total_gpus`` together; elastic policies pick any allowed count, the others the requested one.
  A policy that :attr:`SlotPolicy.places` returns ``(J, nodes) int`` instead: GPUs per job on
  each node (at most ``gpus_per_node`` on a node), which the engine runs as given; or the same plan
  as a :class:`NodePlan` of entries, whose size grows with the jobs placed rather than the trace.

**Virtual clusters.** On a cluster split into VCs (``view.vc`` not None) a job holds GPUs only on
its VC's nodes (``view.vc_bounds``): a GPU-count plan must keep each VC within its GPUs
(:meth:`JobsView.vc_gpus`), and the engine places each job inside its VC; a node plan must give
each job only nodes of its VC. The engine checks both at every decision and stops the run with an
error naming the policy, the job and the VC otherwise; a job larger than its VC has no allowed count
(``cap``) and is declined as unschedulable. Every policy on the slot clock runs under this contract,
VC-aware or not; on a cluster without VCs nothing changes.

``next_decision(view)`` may ask for an extra decision (a planned scale change, a queue demotion).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from enum import Enum, IntEnum

import numpy as np

from allocators.base import Plans, ProgramClass, SchedulingPolicy


class JobState(IntEnum):
    FUTURE = 0
    PENDING = 1
    RUNNING = 2
    DONE = 3
    DECLINED = 4
    #: its leases failed too often on a real executor (never in simulation)
    FAILED = 5


_PENDING, _RUNNING = int(JobState.PENDING), int(JobState.RUNNING)


class Charge(str, Enum):
    """When the engine charges the scaling / restart overhead (published per policy)."""

    EVERY_DECISION = "every_decision"
    ON_CHANGE = "on_change"
    ON_START = "on_start"
    #: every running job pays the uncached overhead at every decision while arrivals remain (Gandiva)
    FULL_WHILE_ARRIVING = "full_while_arriving"
    #: a job whose GPUs change in any way (count or nodes, its first start included) pays (Pollux)
    ON_PLACEMENT = "on_placement"
    #: a job restarted after a preemption pays (its first start is free; Helios' Tiresias)
    ON_RESUME = "on_resume"
    NEVER = "never"


@dataclass
class JobsView:
    """Everything a policy may read; arrays over all jobs of the trace (index = trace row).

    ``rates[j, s]``: iterations/s of job j on ``gpu_counts[s]`` GPUs (NaN = unsupported; 0 beyond
    the job's cap); ``remaining`` iterations left; ``executed`` seconds the job has run;
    ``attained`` GPU·seconds of service; ``gpus`` the GPUs it holds since the last decision."""

    now: float
    slot: float
    total_gpus: int
    gpus_per_node: int
    gpu_counts: np.ndarray
    state: np.ndarray
    submit: np.ndarray
    deadline: np.ndarray
    best_effort: np.ndarray
    iterations: np.ndarray
    remaining: np.ndarray
    requested: np.ndarray
    duration: np.ndarray
    cap: np.ndarray
    rates: np.ndarray
    gpus: np.ndarray
    executed: np.ndarray
    attained: np.ndarray
    #: when each job's GPUs are released as last planned, the decision's overhead included, for
    #: policies that plan it (:meth:`SlotPolicy.releases`; NaN: not planned)
    release: np.ndarray
    decisions: int = 0
    #: seconds of each decision interval a running job loses at least (the overhead model's base
    #: charge for policies charged at every decision; 0 otherwise)
    overhead_floor: float = 0.0
    #: the trace's global batch size per job
    batch_size: np.ndarray | None = None
    #: (J, nodes) GPUs each job holds on each node since the last decision
    nodes: np.ndarray | None = None
    #: co-adaptive jobs (Pollux's model: epochs, batch choice, goodput) when the workload has them
    coadaptive: object | None = None
    #: each job's virtual cluster (index into VCs; None: the cluster has no VCs)
    vc: np.ndarray | None = None
    #: (VCs + 1,) node offsets: VC k owns nodes ``vc_bounds[k]:vc_bounds[k + 1]`` (None without VCs)
    vc_bounds: np.ndarray | None = None
    #: (VCs,) True for a VC any job may use (Lucid's profiling VC; None: none)
    vc_open: np.ndarray | None = None
    #: the jobs' profiled workloads and measured pair speeds, where jobs may share GPUs
    #: (:class:`simulator.sharing.Sharing`; None: no sharing)
    sharing: object | None = None
    #: each job's speed factor since the last decision (1 alone; its pair speed while sharing)
    speed: np.ndarray | None = None
    #: each job's user (an index; None: the job log names no users)
    user: np.ndarray | None = None

    def vc_gpus(self) -> np.ndarray:
        """GPUs per VC (one entry, the whole cluster, without VCs)."""
        if self.vc_bounds is None:
            return np.array([self.total_gpus], dtype=np.int64)
        return np.diff(self.vc_bounds) * self.gpus_per_node

    def active(self) -> np.ndarray:
        """Indices of admitted, arrived, unfinished jobs (pending or running)."""
        return np.flatnonzero((self.state == _PENDING) | (self.state == _RUNNING))

    def columns(self, gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Table column of each GPU count, and whether the count is a column (0 is not)."""
        gpus = np.asarray(gpus)
        col = np.minimum(np.searchsorted(self.gpu_counts, gpus), len(self.gpu_counts) - 1)
        return col, (gpus > 0) & (self.gpu_counts[col] == gpus)

    def rate(self, jobs: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """Iterations/s of ``jobs`` on ``gpus`` GPUs each (0 for 0 GPUs or an unsupported count)."""
        col, ok = self.columns(gpus)
        rate = np.where(ok, self.rates[jobs, col], 0.0)
        rate[np.isnan(rate)] = 0.0
        return rate

    def allowed(self, jobs: np.ndarray) -> np.ndarray:
        """(len(jobs), S) mask of GPU counts each job may run on."""
        r = self.rates[jobs]
        return np.isfinite(r) & (r > 0) & (self.gpu_counts[None, :] <= self.cap[jobs, None])


@dataclass(frozen=True)
class NodePlan:
    """A node plan as entries: job ``jobs[e]`` holds ``gpus[e]`` GPUs on node ``nodes[e]`` (one entry
    per job and node it uses; a job with no entry holds none). The same plan as the dense (J, nodes)
    array (:meth:`of_dense`), whose size does not grow with the trace.

    GPU sharing (on a workload with measured pair speeds, ``view.sharing``): ``host[e] >= 0`` puts
    entry e on the GPUs job ``host[e]`` holds on that node (its entry there has the same GPU
    count); such a guest takes no GPUs of its own, and host and guest both run at their measured
    pair speeds. A host has at most one guest and is no guest itself. None: nobody shares."""

    jobs: np.ndarray
    nodes: np.ndarray
    gpus: np.ndarray
    host: np.ndarray | None = None

    @classmethod
    def of_dense(cls, plan: np.ndarray) -> NodePlan:
        jobs, nodes = np.nonzero(plan)
        return cls(jobs, nodes, plan[jobs, nodes])

    def per_job(self, num_jobs: int) -> np.ndarray:
        """GPUs per job (length ``num_jobs``)."""
        return np.bincount(self.jobs, weights=self.gpus, minlength=num_jobs).astype(np.int64)

    def by_job(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The jobs of the plan (sorted), the GPUs each holds and the nodes each spans."""
        order = np.argsort(self.jobs, kind="stable")
        jobs = self.jobs[order]
        head = np.ones(jobs.size, dtype=bool)
        np.not_equal(jobs[1:], jobs[:-1], out=head[1:])
        starts = np.flatnonzero(head)
        if not starts.size:
            return jobs, jobs, jobs
        return jobs[starts], np.add.reduceat(self.gpus[order], starts), np.diff(starts, append=jobs.size)


class SlotPolicy(SchedulingPolicy):
    """A policy planning GPUs per job per slot, with admission (see the module doc)."""

    system = "ElasticFlow"
    program = ProgramClass.HEURISTIC
    plans = Plans.GPUS
    elastic: bool = True
    #: progress is measured in seconds run against the trace's ``duration`` column (published
    #: Gandiva and Tiresias), not in iterations from the throughput table
    duration_based: bool = False
    charge: Charge = Charge.ON_CHANGE
    #: ``cap`` source: "table" (largest supported count) or "elasticflow" (published hand-set caps)
    caps: str = "table"
    #: a job ends on a whole second after the start of the interval it ends in (the published
    #: simulator's ``ceil``), and completions are predicted the same way
    whole_seconds: bool = False
    #: a job still running at its planned release (:meth:`releases`) finishes there, even with
    #: work left (the published ``ef`` ends a job at its end event)
    finish_at_release: bool = False
    #: a job finishes at (and is judged on) the completion its last plan predicted
    #: (:meth:`runs_until`), however it ends (the published ``ef-accessctrl``)
    finish_at_plan: bool = False
    #: :meth:`allocate` returns GPUs per job per node (the module doc), not GPUs per job
    places: bool = False
    #: seconds lost at each charged (re)start, as the policy's system published it (None: the
    #: published ElasticFlow overhead model)
    restart_seconds: float | None = None
    #: (n, s): a job on more than n GPUs loses s seconds instead of ``restart_seconds``
    restart_wide: tuple[int, float] | None = None
    #: co-adaptive jobs choose their batch size (Pollux) rather than keep the trace's
    adaptive_batch: bool = False
    #: reads the jobs' goodput models (:attr:`JobsView.coadaptive`): Pollux's measured applications
    needs_goodput: bool = False
    #: the simulator settings (:mod:`simulator.engine.presets`) of the policy's system
    preset: str = "elasticflow"

    def admit(self, view: JobsView, arrivals: np.ndarray) -> np.ndarray:
        return np.ones(len(arrivals), dtype=bool)

    @abstractmethod
    def allocate(self, view: JobsView) -> np.ndarray:
        """GPUs per job (length J) until the next decision."""

    def next_decision(self, view: JobsView) -> float:
        return np.inf

    def releases(self, view: JobsView) -> np.ndarray | None:
        """When each job's GPUs are released (its planned end, before this decision's overhead;
        NaN: not planned), or None: when the job completes (predicted from its rate)."""
        return None

    def runs_until(self, view: JobsView) -> np.ndarray | None:
        """When each job's credited run time ends within the coming interval (NaN or None: at
        the interval's end). The published ``ef`` credits no progress after a job's planned
        completion (its *real end*), though the decision's overhead delayed it."""
        return None

    def placement_order(self, view: JobsView, gpus: np.ndarray) -> np.ndarray:
        """The jobs given GPUs (``gpus``, length J), in the order the engine places them on
        consecutive ranks (:mod:`simulator.buddy`): largest first, ties in trace order."""
        on = np.flatnonzero(gpus > 0)
        return on[np.argsort(-gpus[on], kind="stable")]

    def solve_log(self) -> list[dict]:
        """One row per program solved (time, size, build/solve seconds, method); empty for heuristics."""
        return []

