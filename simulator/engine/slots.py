"""The slot clock, for deadline-aware and elastic scheduling (ElasticFlow's simulation model).

Decisions: the first at the first arrival; after a decision at t the next is at
max(t + Δ, earliest event), events being arrivals, predicted completions and a policy's own
requests (a planned scale change). Every arrival since the last decision is decided at that
decision, together with the others (the published simulator folds events the same way).

At a decision (the steps of :mod:`simulator.engine.loop`): progress of the elapsed interval is
credited (a job on n GPUs runs the interval, cut at the end its policy plans for its run if any
(:meth:`SlotPolicy.runs_until`), minus its overhead, at the rate of the table, or of its trace
duration for duration-based policies); jobs whose remaining work hit zero finish at the exact time
inside the interval (their GPUs stay idle until this decision); the policy admits or declines the
arrivals, then picks GPU counts; jobs are placed on nodes (:mod:`simulator.buddy`), and the overhead of the coming
interval is charged as the policy's published rule says (:mod:`simulator.overheads`).

On a cluster split into virtual clusters, every plan is checked against them
(:mod:`simulator.engine.node_plans`: a job runs only on its VC's nodes, no VC over its GPUs) and GPU
counts are placed inside each job's VC; a job's cap is at most its VC's GPUs.

A late job keeps running and counts as missed when it finishes; a declined job never runs.

Crediting goes through the run's :class:`~simulator.executor.Executor`, the same contract
as the round clock's: each interval's holders are one :class:`~simulator.executor.Leases`
(planned: the whole steps its progress crosses), credited with what the executor reports
(a failed lease credits nothing; :data:`~simulator.executor.MAX_FAILED_LEASES` of them end the job
as failed). The default :class:`~simulator.executor.SimulatedExecutor` credits exact fractional
progress without building leases.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np

from allocators.slot_plans import Charge, JobState, JobsView, NodePlan, SlotPolicy
from simulator.buddy import RankSetCache, place, place_in_vcs
from simulator.coadaptive import CoAdaptiveJobs
from simulator.engine.clock import SimulationError, check_horizon
from simulator.engine.node_plans import changed_jobs, check_vc_counts, checked_node_plan, empty_plan, in_sorted
from simulator.executor import Executor, FailedLeases, Leases, SimulatedExecutor
from simulator.metrics import SimulationResult, slot_result
from simulator.outcomes import Allocations, Timeline
from simulator.overheads import OverheadModel
from simulator.sharing import shared_speeds
from simulator.views import SlotView

_EPS = 1e-9


@dataclass(frozen=True)
class SlotConfig:
    """Slot length Δ (s), the overhead model (None: the policy's published one), a stall guard:
    stop with an error after this many decisions in a row where active jobs exist but none can
    run and nothing is due to arrive; and whether decisions keep to the slot grid."""

    slot: float = 60.0
    overhead: OverheadModel | None = None
    #: the preset the slot length came from (:mod:`simulator.engine.presets`), for the summary
    preset: str = "elasticflow"
    stall_decisions: int = 1000
    #: decide only at multiples of the slot, on no event (Pollux's fixed scheduling interval)
    grid: bool = False

    def __post_init__(self) -> None:
        if not self.slot > 0:
            raise ValueError(f"slot must be > 0 s, got {self.slot}")


class Slots:
    """The slot clock: after a decision at t the next is at max(t + Δ, earliest event); a
    policy's integer plan of GPUs per job, placed on nodes, is the interval's leases. A run past
    :data:`~simulator.engine.clock.HORIZON` is refused when the clock is built (any job, at its
    fastest allowed count)."""

    def __init__(self, workload: SlotView, policy: SlotPolicy, config: SlotConfig | None = None,
                 executor: Executor | None = None):
        if not isinstance(policy, SlotPolicy):
            raise ValueError(f"policy {policy.name!r} plans time shares or rounds, not GPUs per slot")
        self.workload = workload
        self.executor = executor or SimulatedExecutor()
        self._simulated = type(self.executor) is SimulatedExecutor
        self.policy = policy
        self.config = config or SlotConfig()
        w = workload
        self.overhead = self.config.overhead or (
            OverheadModel.published(w.total_gpus, self.config.slot) if policy.restart_seconds is None
            else OverheadModel(base=policy.restart_seconds, step=0.0, restart=0.0, wide=policy.restart_wide))
        self.coadaptive = None
        if policy.needs_goodput and w.applications is None:
            raise ValueError(f"policy {policy.name!r} reads the jobs' goodput models, which only Pollux's measured "
                             f"applications have; {w.trace.source} has none (run it on a Pollux workload)")
        if w.applications is not None:
            if not self._simulated:
                raise ValueError("co-adaptive jobs (Pollux's model) run in simulation only, not on an executor")
            self.coadaptive = CoAdaptiveJobs.for_policy(list(w.applications), w.trace.batch_size,
                                                        policy.adaptive_batch)
        self.nodes = np.zeros((len(w), w.cluster.num_nodes), dtype=np.int64)
        rates = w.duration_rates() if policy.duration_based else w.rates
        cap = w.caps(policy.caps) if policy.elastic else w.requested
        vc_bounds = None if w.vcs is None else w.vcs.bounds
        if vc_bounds is not None:
            cap = np.minimum(cap, (np.diff(vc_bounds) * w.gpus_per_node)[w.job_vc])
        #: VC names for errors and each node's VC (None: no VCs)
        self.vc_names = None if w.vcs is None else w.vcs.names
        self.node_vc = np.zeros(w.cluster.num_nodes, dtype=np.int64)
        if vc_bounds is not None:
            self.node_vc = np.repeat(np.arange(len(vc_bounds) - 1), np.diff(vc_bounds))
        J = len(w)
        self.arrivals = w.submit
        self.view = JobsView(
            now=0.0, slot=self.config.slot, total_gpus=w.total_gpus, gpus_per_node=w.gpus_per_node,
            gpu_counts=w.gpu_counts, state=np.zeros(J, dtype=np.int8), submit=w.submit, deadline=w.deadline,
            best_effort=w.best_effort, iterations=w.iterations, remaining=w.iterations.astype(float).copy(),
            requested=w.requested, duration=w.duration, cap=cap, rates=rates, gpus=np.zeros(J, dtype=np.int64),
            executed=np.zeros(J), attained=np.zeros(J), release=np.full(J, np.nan),
            overhead_floor=self.overhead.base if policy.charge is Charge.EVERY_DECISION else 0.0,
            batch_size=w.trace.batch_size, nodes=self.nodes, coadaptive=self.coadaptive, vc=w.job_vc,
            vc_bounds=vc_bounds, sharing=w.sharing, speed=np.ones(J), vc_open=None if w.vcs is None else w.vcs.open,
            user=w.job_user,
        )
        #: GPUs held as guests on other jobs' GPUs since the last decision (not busy GPUs of their own)
        self._guest_gpus = 0
        #: the entries of the last node plan (``self.nodes`` is nonzero there only)
        self._entries = empty_plan()
        #: the jobs holding GPUs (``view.gpus > 0``, sorted), the jobs charged an overhead at the last
        #: decision and the jobs of GPU-sharing pairs (speed factors other than 1): the engine touches
        #: these, never every job, at a decision
        self._on = np.zeros(0, dtype=np.int64)
        self._due = self._on
        self._paired = self._on
        #: the iterations/s of each job in ``_on`` (its table rate on its GPUs times its speed factor),
        #: and each job's rate on one GPU (the cluster efficiency's reference)
        self._rate = np.zeros(0)
        self._one = np.nan_to_num(self.view.rates[:, 0], nan=0.0)
        self.finish = np.full(J, np.nan)
        self.first_start = np.full(J, np.nan)
        self.overhead_due = np.zeros(J)
        self.overhead_total = np.zeros(J)
        self.unschedulable = np.zeros(J, dtype=bool)
        self.preemptions = np.zeros(J, dtype=np.int64)
        self.failures = FailedLeases.of(J)
        self.held_gpu_seconds = np.zeros(J)
        #: when each running job's credited run time ends in the coming interval (NaN: at its end)
        self._uncut = np.full(J, np.nan)
        self.runs_until = self._uncut
        self.cache = RankSetCache()
        self.shift = int(np.ceil(np.log2(w.total_gpus + 1))) + 1
        self.timeline = Timeline(1)
        self.allocations = Allocations()
        #: the last decision's efficiency, busy GPUs, running and queued jobs, logged with its end
        self._decided: tuple = ()
        self.decision_seconds: list[float] = []
        self._admit_seconds = 0.0
        self.stalled = 0
        self.started = _time.perf_counter()
        fastest = np.max(np.where(self.view.allowed(np.arange(J)), rates, 0.0), axis=1, initial=0.0)
        alone = np.divide(self.view.remaining, fastest, out=np.zeros(J), where=fastest > 0)
        check_horizon(w.trace.source, w.job_ids, w.submit, w.iterations, fastest, alone)

    def start(self, first_arrival: float) -> float:
        """The first decision: at the first arrival, on the grid at the first slot boundary after it."""
        if self.config.grid:
            return math.ceil(first_arrival / self.config.slot - _EPS) * self.config.slot
        return first_arrival

    def credit(self, start: float, end: float) -> None:
        if self.coadaptive is not None:
            self._credit_coadaptive(start, end)
        else:
            self._credit(start, end)

    def admit(self, jobs: np.ndarray, now: float) -> None:
        tick = _time.perf_counter()
        self.view.now = now
        self._admit(jobs)
        self._admit_seconds = _time.perf_counter() - tick

    def over(self, arriving: bool) -> bool:
        """Nothing is left to arrive and no job is active."""
        return not arriving and not self._on.size and not (self.view.state == JobState.PENDING).any()

    def decide(self, now: float, arriving: bool) -> None:
        """Admitted arrivals and the GPUs per job (timed together), placed and recorded."""
        v = self.view
        v.now = now
        tick = _time.perf_counter()
        if self.policy.places:
            self._plan, gpus = self._node_plan(), None
        else:
            gpus = self._allocate()
        self.decision_seconds.append(self._admit_seconds + _time.perf_counter() - tick)
        self._admit_seconds = 0.0
        self._start(gpus, self.cache, self.shift, arriving=arriving)
        v.decisions += 1
        self._decided = self._state()

    def next_time(self, now: float, arrival: float) -> float:
        """max(now + Δ, the earliest of the policy's own request, the next arrival and the first
        predicted completion or planned release); an error after ``stall_decisions`` decisions in
        a row where jobs wait, none runs and nothing is to arrive."""
        v, policy = self.view, self.policy
        events = [policy.next_decision(v), arrival]
        running = self._on
        if self.config.grid:
            self._stall_guard(running.size > 0, arrival)
            end = (math.floor(now / self.config.slot + _EPS) + 1) * self.config.slot
            self.timeline.log(now, end, *self._decided)
            return end
        if running.size:
            released = policy.releases(v)
            until = policy.runs_until(v)
            self.runs_until = self._uncut if until is None else until
            if released is None:
                due = self.overhead_due[running] + v.remaining[running] / self._rate
                events.append(float(now + np.min(np.ceil(due - _EPS) if policy.whole_seconds else due)))
            else:
                v.release = released + self.overhead_due
                events.append(float(np.nanmin(v.release[running], initial=np.inf)))
        self._stall_guard(running.size > 0, arrival)
        upcoming = min(events)
        end = max(now + self.config.slot, upcoming if np.isfinite(upcoming) else now + self.config.slot)
        self.timeline.log(now, end, *self._decided)
        return end

    def _stall_guard(self, running: bool, arrival: float) -> None:
        if running:
            self.stalled = 0
        elif not math.isfinite(arrival):
            self.stalled += 1
            if self.stalled >= self.config.stall_decisions:
                v, w = self.view, self.workload
                active = v.active()
                raise SimulationError(
                    f"{self.policy.name}: {active.size} job(s) wait but none can run for {self.stalled} decisions "
                    f"(first: job {w.job_ids[active[0]]}, needs {int(v.requested[active[0]])} GPUs of "
                    f"{w.total_gpus})")

    def status(self) -> tuple[int, int, float]:
        v = self.view
        return (int(np.count_nonzero(v.state >= JobState.DONE)), v.decisions,
                self.decision_seconds[-1] if self.decision_seconds else 0.0)

    def result(self, now: float) -> SimulationResult:
        """The run's last decision, at ``now`` with nothing left to run, is taken and counted
        like the others (so the timeline ends on the idle cluster), then the run is reported."""
        self.decide(now, False)
        self.timeline.log(now, now, *self._decided)
        v, w = self.view, self.workload
        return slot_result(
            workload=w, policy=self.policy, slot=self.config.slot, preset=self.config.preset,
            overhead=self.overhead, finish=self.finish,
            first_start=self.first_start, state=v.state.copy(), overhead_seconds=self.overhead_total,
            timeline=self.timeline, allocations=self.allocations,
            decision_seconds=np.asarray(self.decision_seconds), decisions=v.decisions,
            wall_seconds=_time.perf_counter() - self.started, unschedulable=self.unschedulable,
            preemptions=self.preemptions, failures=self.failures,
            work_done=w.iterations - v.remaining, runtime=v.executed, held_gpu_seconds=self.held_gpu_seconds,
        )

    def _credit(self, start: float, end: float) -> None:
        """Progress of the jobs holding GPUs over [start, end]: ``rate × (span − overhead)``
        iterations (span: to ``end``, or to the policy's :meth:`SlotPolicy.runs_until` before
        it), or what the executor reports for the interval's leases. For a policy that
        :attr:`SlotPolicy.finish_at_release`, a job whose release is ``end`` finishes there."""
        v = self.view
        jobs = self._on
        if not jobs.size or end <= start:
            return
        n = v.gpus[jobs]
        rate = self._rate
        span = np.clip(np.fmin(self.runs_until[jobs], end) - start, 0.0, None)
        lost = np.minimum(self.overhead_due[jobs], span)
        run = span - lost
        need = v.remaining[jobs] / rate
        at_release = np.zeros(jobs.size, dtype=bool)
        if self.policy.finish_at_release:
            at_release = np.abs(v.release[jobs] - end) < _EPS
        worked = need  # seconds of work per job: as planned, or as the executor reports
        if self._simulated:
            finishing = (need <= run + _EPS) | at_release
            v.remaining[jobs] = np.where(finishing, 0.0, v.remaining[jobs] - run * rate)
        else:
            credited, failed, seconds = self._execute(start, jobs, n, rate, lost, np.minimum(need, run), run)
            if seconds is not None:
                worked = seconds
            finishing = ~failed & ((credited >= v.remaining[jobs] - _EPS * rate) | at_release)
            v.remaining[jobs] = np.where(finishing, 0.0, v.remaining[jobs] - credited)
        ran = np.where(finishing, np.minimum(need, run), run)
        v.executed[jobs] += ran
        v.attained[jobs] += ran * n
        self.held_gpu_seconds[jobs] += (ran + lost) * n
        self.overhead_total[jobs] += lost
        self.overhead_due[jobs] -= lost
        done = jobs[finishing]
        took = lost[finishing] + worked[finishing]
        if self.policy.finish_at_plan:
            self.finish[done] = self.runs_until[done]
        else:
            self.finish[done] = np.where(at_release[finishing], end,
                                         start + (np.ceil(took - _EPS) if self.policy.whole_seconds else took))
        v.state[done] = JobState.DONE
        v.gpus[done] = 0
        keep = v.gpus[jobs] > 0
        self._on, self._rate = jobs[keep], rate[keep]

    def _credit_coadaptive(self, start: float, end: float) -> None:
        """Co-adaptive jobs (:mod:`simulator.coadaptive`) run [start, end] after their overhead,
        epoch by epoch; a job completes at the end of its last epoch."""
        v, ca = self.view, self.coadaptive
        jobs = self._on
        if not jobs.size or end <= start:
            return
        span = end - start
        lost = np.minimum(self.overhead_due[jobs], span)
        took = np.array([ca.advance(j, span - x) for j, x in zip(jobs.tolist(), lost.tolist(), strict=True)])
        finishing = ~np.isnan(took)
        ran = np.where(finishing, took, span - lost)
        n = v.gpus[jobs]
        v.remaining[jobs] = v.iterations[jobs] - ca.epochs_done(jobs)
        v.executed[jobs] += ran
        v.attained[jobs] += (ran + lost) * n
        self.held_gpu_seconds[jobs] += (ran + lost) * n
        self.overhead_total[jobs] += lost
        self.overhead_due[jobs] -= lost
        done = jobs[finishing]
        v.remaining[done] = 0.0
        self.finish[done] = start + lost[finishing] + took[finishing]
        v.state[done] = JobState.DONE
        v.gpus[done] = 0
        self._on, self._rate = jobs[~finishing], self._rate[~finishing]

    def _execute(self, start: float, jobs: np.ndarray, n: np.ndarray, rate: np.ndarray, lost: np.ndarray,
                 seconds: np.ndarray, budget: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The interval's leases run by the executor, each within ``budget`` seconds: (iterations
        credited, failed, the seconds each lease took or None) per job. A lease plans the whole
        steps its progress ``rate × seconds`` crosses (all that remain for a job finishing in it),
        so a job that did every planned step has trained ⌊progress⌋ steps; one that does them is
        credited the interval's exact progress, one that does fewer its steps. A job with
        :data:`MAX_FAILED_LEASES` failed leases ends as failed."""
        v = self.view
        work = seconds * rate
        done = v.iterations[jobs] - v.remaining[jobs]
        trained = np.floor(done + _EPS)
        ending = work >= v.remaining[jobs] - _EPS * rate  # need <= seconds + _EPS, as the simulated credit
        planned = (np.where(ending, v.iterations[jobs], np.floor(done + work + _EPS)) - trained).astype(np.int64)
        leases = Leases(start, jobs, np.zeros(jobs.size, dtype=np.int64), n, planned, seconds, budget)
        outcome = self.executor.execute(leases)
        outcome.check(leases)
        failed = outcome.failed
        dead = jobs[self.failures.record(leases, outcome)]
        if dead.size:
            self.failures.end(dead, self.workload.job_ids[dead], outcome)
            v.state[dead] = JobState.FAILED
            v.gpus[dead] = 0
        credited = np.where(outcome.steps >= planned, work, outcome.steps)
        return np.where(failed, 0.0, credited), failed, outcome.seconds

    def _admit(self, arrivals: np.ndarray) -> None:
        v = self.view
        runnable = (v.cap[arrivals] > 0) & (v.allowed(arrivals).any(axis=1))
        self.unschedulable[arrivals[~runnable]] = True
        v.state[arrivals[~runnable]] = JobState.DECLINED
        arrivals = arrivals[runnable]
        if not arrivals.size:
            return
        v.state[arrivals] = JobState.PENDING
        ok = np.asarray(self.policy.admit(v, arrivals), dtype=bool) | v.best_effort[arrivals]
        v.state[arrivals[~ok]] = JobState.DECLINED

    def _allocate(self) -> np.ndarray:
        """The policy's GPUs per job (a policy that plans GPU counts), checked."""
        v = self.view
        gpus = np.asarray(self.policy.allocate(v), dtype=np.int64)
        active = np.zeros(len(gpus), dtype=bool)
        active[v.active()] = True
        given = np.flatnonzero(gpus > 0)
        bad = given[~active[given]]
        if bad.size:
            raise SimulationError(f"{self.policy.name} gave GPUs to job {self.workload.job_ids[bad[0]]}, "
                                  f"which is not active ({JobState(v.state[bad[0]]).name})")
        if given.size:
            col, legal = v.columns(gpus[given])
            legal &= v.allowed(given)[np.arange(given.size), col]
            if not legal.all():
                j = given[~legal][0]
                raise SimulationError(f"{self.policy.name} gave job {self.workload.job_ids[j]} {gpus[j]} GPUs, "
                                      f"not an allowed count (cap {int(v.cap[j])})")
        if gpus.sum() > v.total_gpus:
            raise SimulationError(f"{self.policy.name} allocated {int(gpus.sum())} GPUs of {v.total_gpus}")
        check_vc_counts(gpus, v, self.policy.name, self.vc_names)
        return gpus

    def _node_plan(self) -> NodePlan:
        """The policy's GPUs per job per node, checked (:func:`checked_node_plan`)."""
        return checked_node_plan(self.policy.allocate(self.view), self.view, self.node_vc, self.policy.name,
                                 self.workload.job_ids, self.vc_names)

    def _start(self, gpus: np.ndarray | None, cache: RankSetCache, shift: int, arriving: bool) -> None:
        """Place the new allocation (``gpus`` per job, or None: the checked node plan of a policy that
        places), charge overheads, update states. Only the jobs that held GPUs or hold them now are
        touched (a trace's finished and waiting jobs are not walked at each decision)."""
        v = self.view
        plan: NodePlan | None = self._plan if gpus is None else None
        if plan is None:
            ranked = self.policy.placement_order(v, gpus)
            if v.vc is None:
                first, placed = place(gpus, ranked, v.gpus_per_node, v.total_gpus)
            else:
                first, placed = place_in_vcs(gpus, ranked, v.gpus_per_node, v.vc, v.vc_bounds)
            gpus = np.where(placed, gpus, 0)
            if self.coadaptive is not None or self.policy.charge is Charge.ON_PLACEMENT:
                plan = _node_entries(first, gpus, v.gpus_per_node)
            on = np.flatnonzero(gpus > 0)
            n, first = gpus[on], first[on]
            spans = np.full(on.size, -1) if plan is None else plan.by_job()[2]
        else:
            on, n, spans = plan.by_job()
            first = np.full(on.size, -1)
        charge = self.policy.charge
        moved = on[:0]  # read by co-adaptive jobs and the on-placement charge only
        if plan is not None and (self.coadaptive is not None or charge is Charge.ON_PLACEMENT):
            moved = changed_jobs(self._entries, plan, self.nodes.shape[1], v.gpus_per_node)
            state = v.state[moved]
            moved = moved[(state == JobState.PENDING) | (state == JobState.RUNNING)]
        restart = self.overhead.is_restart(v.decisions)
        old = v.gpus[on]
        if charge is Charge.EVERY_DECISION or charge is Charge.ON_CHANGE:  # the charges that read the cache
            cached = cache.lookup_and_add(first, n, shift)
        else:
            cached = np.zeros(on.size, dtype=bool)
        if restart:
            cache.clear()
        if charge is Charge.EVERY_DECISION:
            due = np.ones(on.size, dtype=bool)
        elif charge is Charge.ON_START:
            due = old == 0
        elif charge is Charge.FULL_WHILE_ARRIVING:
            due = np.full(on.size, arriving)
        elif charge is Charge.ON_CHANGE:
            due = old != n
        elif charge is Charge.ON_PLACEMENT:
            due = in_sorted(on, moved)
        elif charge is Charge.ON_RESUME:
            due = (old == 0) & ~np.isnan(self.first_start[on])
        else:
            due = np.zeros(on.size, dtype=bool)
        self.overhead_due[self._due] = 0.0
        self._due = on[due]
        self.overhead_due[self._due] = self.overhead.seconds(n[due], cached[due], restart)
        held = self._on
        v.gpus[held] = 0
        v.gpus[on] = n
        preempted = held[v.gpus[held] == 0]
        self.preemptions[preempted] += 1
        v.state[preempted] = JobState.PENDING
        v.state[on] = JobState.RUNNING
        self._on = on
        fresh = on[np.isnan(self.first_start[on])]
        self.first_start[fresh] = v.now
        if plan is not None:
            self._place(plan)
        self._rate = v.rate(on, n) * v.speed[on]
        if self.coadaptive is not None:
            for j in moved.tolist():
                self.coadaptive.reallocate(j, self.nodes[j].copy())
        ca = self.coadaptive
        batch = v.batch_size[on] if ca is None else np.array([ca.batch(j) for j in on.tolist()], dtype=np.int64)
        self.allocations.log(v.decisions, on, n, spans, batch)

    def _place(self, plan: NodePlan) -> None:
        """The node plan's entries on the nodes, and the speed factors of its GPU-sharing pairs."""
        v, old = self.view, self._entries
        self.nodes[old.jobs, old.nodes] = 0
        self.nodes[plan.jobs, plan.nodes] = plan.gpus
        self._entries = plan
        v.speed[self._paired] = 1.0
        self._paired, speed = shared_speeds(plan.host, plan.jobs, v.sharing)
        v.speed[self._paired] = speed
        self._guest_gpus = int(plan.gpus[plan.host >= 0].sum()) if plan.host is not None else 0

    def _state(self) -> tuple[float, list, int, int]:
        """What a decision leaves the cluster doing: its efficiency, GPUs busy, jobs running and queued."""
        v = self.view
        on = self._on
        one = self._one[on]
        speedup = np.where(one > 0, self._rate / np.where(one > 0, one, 1.0), 0.0)
        return (float(speedup.sum() / v.total_gpus), [int(v.gpus[on].sum()) - self._guest_gpus], int(on.size),
                int(np.count_nonzero(v.state == JobState.PENDING)))


def _node_entries(first: np.ndarray, gpus: np.ndarray, per_node: int) -> NodePlan:
    """The node plan of jobs placed on consecutive ranks from ``first`` (-1: none)."""
    on = np.flatnonzero(gpus > 0)
    n = gpus[on]
    local = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    node = (np.repeat(first[on], n) + local) // per_node
    width = int(node.max(initial=0)) + 1
    keys, count = np.unique(np.repeat(on, n) * width + node, return_counts=True)
    return NodePlan(keys // width, keys % width, count)

