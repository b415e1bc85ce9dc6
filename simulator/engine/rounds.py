"""The round clock: Gavel's mechanism turns a policy's time shares into leases (or a round
planner names the jobs of the round), one decision at every round boundary.

At each boundary at simulated time t (the steps of :mod:`simulator.engine.loop`):

1. the rows dispatched in the previous round finish: their jobs gain the steps they ran,
   each row's time is credited to the mechanism, finished jobs leave (JCT = the end of the
   round's work for that row minus the job's trace arrival);
2. jobs with arrival <= t are admitted (for space-sharing policies, with a pair row for
   every active job of equal scale factor);
3. when jobs arrived or left and a reset is due (see :class:`Mechanism`), deficits are
   folded and the policy recomputes the allocation;
4. the mechanism selects rows, :class:`Placement` puts them on GPUs, and each runs
   ``min(floor(rate × (round − overhead)), remaining)`` steps; a row's work ends when its
   slowest member is done;
5. the clock moves to the latest end among the dispatched rows (a round is shorter when
   everything finishes early), or to the next arrival when nothing could run.

Step 1 credits what the engine's :class:`~simulator.executor.Executor` reports for the
round's leases: by default (:class:`~simulator.executor.SimulatedExecutor`) the planned
steps; a failed lease credits none, and a job with ``MAX_FAILED_LEASES`` failed leases
leaves as failed (not completed; its reason is in the run's notes).

Two behaviours of the published simulator are defects and are reproduced only with
``gavel_compat=True``: GPUs counted for a job that has no allocation yet (it arrived since
the last solve) then sit idle instead of running it; and the first round after an idle gap
is credited from the end of the last busy round instead of from its own start.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from allocators import Policy
from allocators.round_plans import RoundPlanner, RoundState
from formulations import AllocationProblem, JobPairs, ProblemError
from optim import OptimError, tally
from simulator.adaptive import AdaptiveJobs
from simulator.combos import Combos
from simulator.engine.clock import SimulationError, check_horizon
from simulator.engine.presets import get_preset
from simulator.executor import Executor, Leases, SimulatedExecutor
from simulator.mechanism import Mechanism
from simulator.metrics import RunRecord, SimulationResult, speedups, summarize
from simulator.placement import Placement
from simulator.round_view import RoundView

#: Gavel's fixed order of its worker types, fastest first
GAVEL_TYPE_ORDER = ("v100", "p100", "k80")


@dataclass(frozen=True)
class SimulationConfig:
    """``round_length`` and ``reset_interval`` in seconds; ``overhead``: checkpoint/restore
    seconds charged to a job that did not run in the previous round; ``gpus_per_server``:
    one int for every type or one per cluster type; ``unconsolidated``: a multi-GPU job
    spread over several servers runs at the table's ``_unconsolidated`` rate; ``window``:
    job ids [lo, hi) whose completion ends the run (default: every job);
    ``max_runtime_factor``: a job is completed once it has run this many times its isolated
    run time (the published Shockwave simulator's 1.5; None: never)."""

    round_length: float = 360.0
    reset_interval: float = 1920.0
    overhead: float = 0.0
    gpus_per_server: int | tuple[int, ...] = 1
    unconsolidated: bool = False
    seed: int = 0
    window: tuple[int, int] | None = None
    gavel_compat: bool = False
    max_runtime_factor: float | None = None
    #: the preset these settings started from (:mod:`simulator.engine.presets`), for the summary
    preset: str = "gavel"

    @classmethod
    def from_preset(cls, name: str, **fields) -> SimulationConfig:
        """A published system's round settings (:mod:`simulator.engine.presets`), ``fields`` over them."""
        return cls(**{**get_preset(name).round_fields(), "preset": name, **fields})

    @classmethod
    def shockwave(cls, **fields) -> SimulationConfig:
        """Shockwave's settings: 120 s rounds, 20 s checkpoint/restore, allocations reset
        at most every 1000 s, completion forced at 1.5x the isolated run time."""
        return cls.from_preset("shockwave", **fields)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.round_length) and self.round_length > 0):
            raise ValueError(f"round length must be > 0 seconds, got {self.round_length}")
        if not (self.reset_interval >= 0):
            raise ValueError(f"reset interval must be >= 0 seconds, got {self.reset_interval}")
        if not (0 <= self.overhead < self.round_length):
            raise ValueError(f"overhead must be in [0, round length), got {self.overhead}")
        if self.max_runtime_factor is not None and not self.max_runtime_factor > 0:
            raise ValueError(f"max runtime factor must be > 0, got {self.max_runtime_factor}")
        if self.window is not None and not (0 <= self.window[0] < self.window[1]):
            raise ValueError(f"window must be lo:hi with 0 <= lo < hi, got {self.window[0]}:{self.window[1]}")


def type_order(workload: RoundView) -> list[int]:
    """Type indices, fastest first: Gavel's v100, p100, k80 order for its names, other
    types after them by mean speed relative to each job's fastest type."""
    types = workload.cluster.worker_types
    rates = workload.rates
    speed = (rates / np.maximum(rates.max(axis=1, keepdims=True), 1e-300)).mean(axis=0)
    rank = [GAVEL_TYPE_ORDER.index(t) if t in GAVEL_TYPE_ORDER else len(GAVEL_TYPE_ORDER) for t in types]
    return sorted(range(len(types)), key=lambda j: (rank[j], -speed[j], j))


class Rounds:
    """The round clock: a decision at every round boundary (the end of the latest lease of the
    round, or the next arrival when nothing could run). ``executor`` runs each round's leases
    (default: :class:`SimulatedExecutor`, every planned step done). A run past
    :data:`~simulator.engine.clock.HORIZON` is refused when the clock is built (the jobs of the
    window, each at its fastest type's rate, or its forced completion where sooner)."""

    def __init__(self, workload: RoundView, policy: Policy, config: SimulationConfig | None = None,
                 prices: np.ndarray | None = None, executor: Executor | None = None):
        self.w = workload
        self.prices = prices
        self.executor = executor or SimulatedExecutor()
        self._simulated = type(self.executor) is SimulatedExecutor
        self.policy = policy
        self.config = config or SimulationConfig()
        cfg, n = self.config, len(workload.cluster.worker_types)
        per_server = np.broadcast_to(np.asarray(cfg.gpus_per_server, dtype=np.int64), (n,))
        if (per_server < 1).any():
            raise ValueError(f"GPUs per server must be >= 1, got {cfg.gpus_per_server}")
        if cfg.window is not None and cfg.window[1] > workload.num_jobs:
            raise ValueError(f"window {cfg.window[0]}:{cfg.window[1]} ends past the trace's {workload.num_jobs} jobs")
        if not isinstance(policy, Policy):
            raise ValueError(f"policy {policy.name!r} plans GPUs per slot, not time shares or rounds")
        self.combos = Combos(n)
        self.mechanism = Mechanism(self.combos, workload.cluster.gpus, cfg.round_length, cfg.reset_interval,
                                   skip_zero_priority=policy.name.startswith("fifo"))
        self.placement = Placement(workload.cluster.gpus, per_server)
        self.fixed_order = policy.fixed_type_order
        self.order = type_order(workload)
        self.shuffler = random.Random(cfg.seed + 5)
        self.jobs = AdaptiveJobs(workload, workload.table, published=cfg.gavel_compat)
        self.planner = isinstance(policy, RoundPlanner)
        if self.planner and n != 1:
            raise ValueError(f"policy {policy.name!r} plans rounds on one worker type; cluster "
                             f"{workload.cluster} has {n}")
        iso = self.isolated = self.jobs.profile.isolated_runtimes()
        factor = cfg.max_runtime_factor
        self.deadline = np.floor(np.floor(iso) * factor) if factor else np.full(iso.shape, np.inf)
        #: runs are capped (``deadline``); overhead is charged up front (else ``upfront`` is 0)
        self.capped, self.charges_upfront = bool(factor), bool(cfg.overhead) and not cfg.gavel_compat
        J = workload.num_jobs
        self.arrivals = workload.trace.arrival_times
        self.single_row = np.full(J, -1, dtype=np.int64)
        self._slo_deadlines = workload.slo_deadlines()
        self.admitted = np.full(J, np.nan)
        self.rounds = 0
        self.rec = RunRecord.create(workload, self.isolated)
        self.speedups = speedups(workload)
        self.gpus = float(workload.cluster.gpus.sum())
        self.active = np.zeros(J, dtype=bool)
        self.num_active = 0
        must_finish = np.zeros(J, dtype=bool)
        must_finish[slice(*cfg.window) if cfg.window else slice(None)] = True
        self.must_finish = must_finish
        must, steps = np.flatnonzero(must_finish), self.jobs.total_steps
        fastest = self.jobs.rates.max(axis=1)
        alone = np.minimum(np.divide(steps, fastest, out=np.zeros(J), where=fastest > 0), self.deadline)
        check_horizon(workload.trace.source, must, self.arrivals[must], steps[must], fastest[must], alone[must])
        self.left = int(must_finish.sum())
        #: jobs arrived or left since the last solve; the schedule stalled at the last decision
        self.changed, self.stalled = False, False
        self.last_round_end: float | None = None
        self.running = _Round.empty()
        self._scratch = np.zeros(J, dtype=bool)

    def _types_this_round(self) -> list[int]:
        if self.fixed_order:
            return self.order
        order = list(self.order)
        self.shuffler.shuffle(order)
        return order

    def start(self, first_arrival: float) -> float:
        return first_arrival

    def credit(self, start: float, end: float) -> None:
        """The round that ends at ``end`` finishes (``start`` is its start; with ``gavel_compat``,
        the end of the previous round)."""
        running = self.running
        if not running.rows.size:
            return
        start = running.start
        if self.config.gavel_compat:
            start = self.last_round_end if self.last_round_end is not None else 0.0
        self.last_round_end = end
        finished, switched = self._finish_round(running, start, self.rec)
        self.changed |= switched
        if finished.size:
            self.active[finished] = False
            self.num_active -= finished.size
            self.left -= int(self.must_finish[finished].sum())
            self.combos.kill_jobs(finished)
            self.changed = True

    def admit(self, jobs: np.ndarray, now: float) -> None:
        for job in jobs.tolist():
            self._admit(job, self.active, self.single_row, self.policy.uses_pairs)
            self.admitted[job] = now
            self.active[job] = True
        self.num_active += jobs.size
        self.changed = True

    def over(self, arriving: bool) -> bool:
        """Every job of the window (default: the trace) is done."""
        return self.left == 0

    def decide(self, now: float, arriving: bool) -> None:
        rec, mech, running = self.rec, self.mechanism, self.running
        if self.planner:
            dispatched = self._dispatch_planned(now, self.active, running, rec)
        else:
            if self.changed and mech.reset_due(now):
                mech.reset(now)
                self._allocate(now, self.active, self.single_row, rec)
                self.changed = False
            dispatched = self._dispatch(now, running, rec)
        if running.jobs.size:  # active jobs of the last round not dispatched again were preempted
            alive, scratch = self.active[running.jobs], self._scratch
            rec.extensions_possible += running.rows_with_active_job(alive)
            still = running.jobs[alive]
            scratch[dispatched.jobs] = True
            preempted = still[~scratch[still]]
            scratch[dispatched.jobs] = False
            if preempted.size:
                rec.preemptions[preempted] += 1
        self.running = dispatched

    def next_time(self, now: float, arrival: float) -> float:
        """The end of the round's latest lease; with nothing dispatched, the next arrival (the
        gap logged idle), else one more decision now with a fresh solve, then an error."""
        rec, dispatched = self.rec, self.running
        if dispatched.rows.size:
            self.stalled = False
            round_end = float(dispatched.finish.max())
            busy = np.bincount(dispatched.types, weights=dispatched.scale, minlength=self.combos.n)
            ends = dispatched.finish if dispatched.singles else dispatched.finish[dispatched.job_row]
            work = np.dot(ends - now, dispatched.speedup)
            span = round_end - now
            efficiency = float(work / (self.gpus * span)) if span > 0 else 0.0
            rec.log_interval(now, round_end, busy, dispatched.jobs.size, self.num_active, efficiency)
            return round_end
        if math.isfinite(arrival):
            rec.log_interval(now, arrival, np.zeros(self.combos.n), 0, self.num_active)
            return arrival
        if self.stalled:
            raise SimulationError(f"policy {self.policy.name!r} scheduled none of the {self.num_active} "
                                  f"remaining jobs at t={now:.1f} s and no arrivals are pending")
        self.stalled, self.changed, self.mechanism.last_reset = True, True, 0.0
        return now

    def status(self) -> tuple[int, int, float]:
        log = self.rec.solve_log
        return int(self.rec.done.sum()), len(log), log[-1][2] if log else 0.0

    def result(self, now: float) -> SimulationResult:
        self.rec.notes.update(self.jobs.notes)
        self.rec.notes.update(dict.fromkeys(self.policy.notes()))
        return summarize(self.w, self.policy, self.config, self.rec, now)

    def _admit(self, job: int, active: np.ndarray, single_row: np.ndarray, uses_pairs: bool) -> None:
        """Rows for a new job: its single row (time round/2), then pairs (time 0) with every
        active job of equal scale factor, in arrival order of the partner."""
        c, w = self.combos, self.w
        rates = np.zeros((1, c.n, 2))
        rates[0, :, 0] = self.jobs.rates[job]
        scale = int(w.trace.scale_factors[job])
        single_row[job] = c.add(np.array([[job, -1]]), rates, scale, self.mechanism.half_round)[0]
        if uses_pairs:
            partners = np.flatnonzero(active & (w.trace.scale_factors == scale))
            if partners.size:
                partners = partners[np.argsort(single_row[partners], kind="stable")]
                first = np.minimum(partners, job)
                second = np.maximum(partners, job)
                c.add(np.stack([first, second], axis=1), w.pair_rates(first, second), scale, 0.0)

    def _problem(self, now: float, jobs: np.ndarray, rec: RunRecord):
        """The allocation snapshot of the active ``jobs`` and the combo rows of its pairs."""
        w, tr, c = self.w, self.w.trace, self.combos
        pairs, pair_rows = None, np.zeros(0, dtype=np.int64)
        if self.policy.uses_pairs:
            live = c.live()
            pair_rows = live[c.is_pair(live) & (c.rates[live].sum(axis=(1, 2)) > 0)]
            local = np.full(w.num_jobs, -1, dtype=np.int64)
            local[jobs] = np.arange(jobs.size)
            pairs = JobPairs(local[c.members[pair_rows, 0]], local[c.members[pair_rows, 1]], c.rates[pair_rows])
        slo = self._slo_deadlines[jobs] - now
        job_types = tr.job_types
        problem = AllocationProblem(
            worker_types=w.cluster.worker_types, capacities=w.cluster.gpus, job_ids=jobs,
            job_types=tuple([job_types[i] for i in jobs.tolist()]), scale_factors=tr.scale_factors[jobs],
            weights=tr.weights[jobs], throughputs=self.jobs.rates[jobs],
            remaining_steps=(self.jobs.total_steps[jobs] - rec.steps[jobs]).astype(float),
            time_since_arrival=now - tr.arrival_times[jobs],
            slo_remaining=np.where(np.isfinite(slo), np.maximum(slo, 1e-9), np.inf),
            prices=self.prices, pairs=pairs,
        )
        return problem, pair_rows

    def _allocate(self, now: float, active: np.ndarray, single_row: np.ndarray, rec: RunRecord) -> None:
        c = self.combos
        jobs = np.flatnonzero(active)
        live = c.live()
        c.alloc[live] = 0.0
        c.in_alloc[live] = True
        c.changed()
        if jobs.size == 0:
            return
        try:
            problem, pair_rows = self._problem(now, jobs, rec)
            tic = time.perf_counter()
            with tally() as spent:
                allocation = self.policy.allocate(problem)
            rec.log_solve(now, jobs.size, time.perf_counter() - tic, spent)
        except (OptimError, ProblemError) as exc:
            raise SimulationError(f"policy {self.policy.name!r} on solver {self.policy.solver!r} at t={now:.1f} s "
                                  f"({jobs.size} jobs): {exc}") from None
        rec.notes.update(dict.fromkeys(allocation.notes))
        c.alloc[single_row[jobs]] = allocation.x
        if allocation.pair_x is not None and pair_rows.size:
            c.alloc[pair_rows] = allocation.pair_x
        c.changed()

    def _dispatch(self, now: float, previous: _Round, rec: RunRecord) -> _Round:
        c, cfg = self.combos, self.config
        rows, types = self.mechanism.select(c.live(), self._types_this_round())
        if cfg.gavel_compat and not (keep := c.in_alloc[rows]).all():
            rows, types = rows[keep], types[keep]
        return self._launch(now, rows, types, previous, rec)

    def _dispatch_planned(self, now: float, active: np.ndarray, previous: _Round, rec: RunRecord) -> _Round:
        """Run the jobs the round planner names (on the cluster's one type), largest gangs
        first; a plan that does not fit the GPUs is an error."""
        tr = self.w.trace
        jobs = np.flatnonzero(active)
        jobs = jobs[np.argsort(self.admitted[jobs], kind="stable")]
        steps = rec.steps[jobs]
        state = RoundState(self.rounds, now, int(self.w.cluster.gpus[0]), self.config.round_length, jobs,
                           tr.scale_factors[jobs], self.jobs.epochs_done(jobs, steps), self.jobs.epochs[jobs],
                           self.admitted[jobs], self.jobs.profile)
        try:
            with tally() as spent:
                plan = self.policy.plan(state)
        except (OptimError, ProblemError) as exc:
            raise SimulationError(f"policy {self.policy.name!r} on solver {self.policy.solver!r} at t={now:.1f} s "
                                  f"({jobs.size} jobs): {exc}") from None
        if plan.solved:
            rec.log_solve(now, jobs.size, plan.seconds, spent)
        rec.notes.update(dict.fromkeys(plan.notes))
        chosen = np.asarray(plan.jobs, dtype=np.int64)
        if chosen.size and (not active[chosen].all() or np.unique(chosen).size != chosen.size
                            or tr.scale_factors[chosen].sum() > self.w.cluster.gpus[0]):
            raise SimulationError(f"policy {self.policy.name!r} planned jobs {chosen.tolist()} at t={now:.1f} s: "
                                  f"not distinct active jobs within {int(self.w.cluster.gpus[0])} GPUs")
        chosen = chosen[np.argsort(-tr.scale_factors[chosen], kind="stable")]
        rows = self.single_row[chosen]
        return self._launch(now, rows, np.zeros(rows.size, dtype=np.int64), previous, rec)

    def _launch(self, now: float, rows: np.ndarray, types: np.ndarray, previous: _Round, rec: RunRecord) -> _Round:
        c, w, cfg = self.combos, self.w, self.config
        self.rounds += 1
        if rows.size == 0:
            self.placement.previous = {}
            return _Round.empty()
        scale = c.scale[rows]
        placed = self.placement.place(rows, types, scale)
        members = c.members[rows]
        if not self.policy.uses_pairs:  # single jobs only: one member per row, in slot 0
            job_row, slot, jobs, job_type = np.arange(rows.size), None, members[:, 0], types
            rate = c.rates[rows, types, 0]
        else:
            job_row, slot = np.nonzero(members >= 0)
            jobs, job_type = members[job_row, slot], types[job_row]
            rate = c.rates[rows[job_row], job_type, slot]
        if cfg.unconsolidated:
            spread = ((placed.servers > 1) & (members[:, 1] < 0))[job_row]
            rate[spread] = w.spread_rates[jobs[spread], job_type[spread]]
        resumed = np.zeros(jobs.size, dtype=bool)
        if cfg.overhead:
            ran_before = np.zeros(w.num_jobs, dtype=bool)
            ran_before[previous.jobs] = True
            resumed = ~ran_before[jobs] & (self.rounds > 1 or not cfg.gavel_compat)
        left = self.jobs.total_steps[jobs] - rec.steps[jobs]
        if self.charges_upfront:
            upfront = np.where(resumed, cfg.overhead, 0.0)
            steps = np.minimum(np.floor(rate * (cfg.round_length - upfront)), left)
        else:
            upfront = np.zeros(jobs.size)
            steps = np.minimum(np.floor(rate * cfg.round_length), left)
        steps = np.maximum(steps, 1).astype(np.int64)
        busy = np.divide(steps, rate, out=np.zeros(rate.shape), where=rate > 0)
        if self.charges_upfront:
            busy += upfront
        finish = now + (busy if jobs.size == rows.size else np.maximum.reduceat(busy, np.flatnonzero(slot == 0)))
        extended = placed.extended.nonzero()[0]  # rows; with single jobs, also their jobs' positions
        if extended.size:
            rec.extensions += extended.size
            rec.lease_extensions[jobs[extended] if slot is None else jobs[placed.extended[job_row]]] += 1
        rec.first_start[jobs] = np.fmin(rec.first_start[jobs], now)
        if self.jobs.adapting:
            self.jobs.dispatched(jobs, rec.steps[jobs])
        charge = resumed if cfg.gavel_compat else np.zeros(jobs.size, dtype=bool)
        return _Round(now, rows, types, scale, finish, jobs, job_row, steps, upfront, charge,
                      self.speedups[jobs, job_type])

    def _finish_round(self, run: _Round, start: float, rec: RunRecord) -> tuple[np.ndarray, bool]:
        """Credit the round that just ended with the steps the executor reports; returns the
        jobs that finished (completed, forced or failed) and whether a job changed its batch
        size. A job is in at most one row of a round and a row runs on one type, so plain
        fancy-index updates are exact.

        With ``gavel_compat`` the checkpoint/restore overhead follows the published
        Shockwave simulator: taken after the round from a resumed job that ran more than
        ``round - 5`` s (its steps scaled by ``(t - overhead) / t``), never in the first round."""
        cfg = self.config
        seconds = run.finish - start
        self.mechanism.credit(run.rows, run.types, seconds)
        gpu_seconds = seconds * run.scale
        rec.busy_gpu_seconds += np.bincount(run.types, weights=gpu_seconds, minlength=rec.busy_gpu_seconds.size)
        jobs, r = run.jobs, run.job_row
        singles = run.singles  # ``r`` is the identity
        ran = seconds if singles else seconds[r]
        if self.charges_upfront:
            ran = ran - run.upfront
        outcome = None
        if self._simulated:  # every planned step done, nothing failed: no hand-off to build
            steps = run.job_steps
        else:
            planned = run.finish[r] - run.start - run.upfront
            leases = Leases(run.start, jobs, run.types[r], run.scale[r], run.job_steps, planned,
                            np.maximum(planned, cfg.round_length - run.upfront))
            outcome = self.executor.execute(leases)
            outcome.check(leases)
            steps = outcome.steps
        if cfg.gavel_compat and cfg.overhead and run.charge.any():
            late = run.charge & (ran > cfg.round_length - 5.0) & (ran > 0)
            kept = np.where(late, (ran - cfg.overhead) / np.where(ran > 0, ran, 1.0), 1.0)
            steps = np.floor(steps * kept).astype(np.int64)
            ran = np.where(late, ran - cfg.overhead, ran)
        rec.runtime[jobs] += ran
        progress = rec.steps[jobs] + steps
        rec.steps[jobs] = progress
        if singles:
            rec.gpu_seconds[jobs, run.types] += gpu_seconds
        else:
            rec.gpu_seconds[jobs, run.types[r]] += gpu_seconds[r]
        complete = progress >= self.jobs.total_steps[jobs]
        forced = ~complete & (rec.runtime[jobs] > self.deadline[jobs]) if self.capped else None
        done = complete if forced is None else complete | forced
        dead = None
        if outcome is not None:
            dead = rec.failures.record(leases, outcome) & ~done
            done = done | dead
        switched = self.jobs.after_round(jobs[~done], rec.steps) if self.jobs.adapting else _NONE
        if switched.size:  # the published rules round progress up to whole epochs: maybe the last
            complete = rec.steps[jobs] >= self.jobs.total_steps[jobs]
            if forced is not None:
                forced &= ~complete
        done = complete if forced is None else complete | forced
        finished = jobs[done]
        if finished.size:
            if outcome is not None and outcome.seconds is not None:  # when the lease's work really ended
                rec.finish[finished] = run.start + run.upfront[done] + outcome.seconds[done]
            else:
                rec.finish[finished] = run.finish[done if singles else r[done]]
            rec.done[finished] = True
            if forced is not None:
                rec.forced[jobs[forced]] = True
        if dead is not None and dead.any():
            rec.failed[jobs[dead]] = True
            rec.notes.update(dict.fromkeys(rec.failures.end(jobs[dead], jobs[dead], outcome)))
            finished = np.concatenate([finished, jobs[dead]])
        if switched.size:
            rows = self.single_row[switched]
            self.combos.rates[rows, :, 0] = self.jobs.rates[switched]
            self.combos.can_run[rows] = self.jobs.rates[switched] > 0
            self.combos.changed()
        return finished, bool(switched.size)


_NONE = np.zeros(0, dtype=np.int64)


class _Round(NamedTuple):
    """The rows dispatched at ``start`` (with their types, GPU counts and work ends) and,
    per member job, the job, its row's position, the steps it runs, the overhead seconds
    charged up front, whether the overhead is still to be taken after the round and its
    speed-up over one GPU (:func:`~simulator.metrics.speedups`)."""

    start: float
    rows: np.ndarray
    types: np.ndarray
    scale: np.ndarray
    finish: np.ndarray
    jobs: np.ndarray
    job_row: np.ndarray
    job_steps: np.ndarray
    upfront: np.ndarray
    charge: np.ndarray
    speedup: np.ndarray

    @classmethod
    def empty(cls) -> _Round:
        z = np.zeros(0, dtype=np.int64)
        return cls(0.0, z, z, z, np.zeros(0), z, z, z, np.zeros(0), np.zeros(0, dtype=bool), np.zeros(0))

    @property
    def singles(self) -> bool:
        """One job per row (``job_row`` is then the identity; an empty round too)."""
        return self.jobs.size == self.rows.size

    def rows_with_active_job(self, alive: np.ndarray) -> int:
        """Rows of this round that still have an active job (lease-extension opportunities);
        ``alive``: whether each of its jobs is still active."""
        if self.singles:
            return int(np.count_nonzero(alive))
        return int(np.count_nonzero(np.bincount(self.job_row, weights=alive)))
