"""``shockwave``: the market program re-planned over a window, executed round by round.

At a re-plan (a job arrived or left, every ``reoptimize_every`` rounds, or the window ran
out) the policy builds :class:`formulations.shockwave.Market` for the active jobs:

* ``R_j``: remaining isolated time from :class:`~allocators.shockwave.remaining_time.RemainingTime`;
  ``ē_j``: mean duration of the epochs so far (the current one included);
* ``F̄_j``: the job's finish time under an equal share ``min(1, G/N)``, estimated on every
  arrival and completion as ``admitted + (elapsed + R_j) / share`` and averaged over time
  (each estimate weighted by the rounds it stood; ``0.9 · average + 0.1 · latest``);
* the hard finish-time rows ``now + TΔ + s_j / share <= ρ_max F̄_j`` are tried first; when
  they cannot hold, the priorities ``π_j = ρ̂_j^λ`` (``ρ̂_j^100`` when ``R_j < Δ``) for the
  jobs whose projected ratio ``ρ̂_j = (now + R_j / share) / F̄_j`` exceeds ρ_max replace them,
  and the reordering MILP moves high-priority rounds forward in the window.

Each planned round is then filled work-conservingly: idle GPUs go to unplanned jobs,
longest predicted remaining time first, while they fit.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from allocators.base import ProgramClass
from allocators.round_plans import RoundPlan, RoundPlanner, RoundState
from allocators.shockwave.config import ShockwaveConfig
from allocators.shockwave.remaining_time import RemainingTime
from formulations import shockwave as market_program
from formulations.shockwave import Market
from optim import SolveOptions, Status, solve
from optim.errors import SolverFailedError

#: momentum of the finish-time estimate's history against its latest value
MOMENTUM = 0.9
#: largest priority: larger ones (the published ρ̂^100 reaches 1e17) are taken to the power
#: that brings the largest here, so objective coefficients stay within solver tolerances
PRIORITY_CAP = 1e6
#: the published planner rules ``gavel_compat`` turns on (:class:`Shockwave`)
PUBLISHED_RULES = ("clock", "predictor", "log")
#: priority exponent for a job predicted to finish within one round
URGENT_EXPONENT = 100.0
#: log-term gap of the LP relaxation solved for a market program's MIP start
START_LOG_GAP = 1e-2


class Shockwave(RoundPlanner):
    """``gavel_compat=True`` turns on three published planner rules (each can also be set
    alone, by name in ``published``): ``"clock"``, the planner's clock is round index x round
    length (ahead of simulated time, as rounds end early when their last job finishes);
    ``"predictor"``, remaining times are predicted one epoch short from epochs of whole
    seconds (:class:`~allocators.shockwave.remaining_time.RemainingTime` with ``published=True``);
    ``"log"``, the log utility is the published secant interpolation through
    ``config.log_bases``."""

    name = "shockwave"
    system = "Shockwave"
    program = ProgramClass.MILP
    supports_gavel_compat = True

    def __init__(self, solver: str = "highs", options: SolveOptions | None = None,
                 config: ShockwaveConfig | None = None, gavel_compat: bool = False,
                 published: tuple[str, ...] | None = None):
        super().__init__(solver, options)
        self.config = config or ShockwaveConfig()
        rules = PUBLISHED_RULES if published is None and gavel_compat else tuple(published or ())
        unknown = sorted(set(rules) - set(PUBLISHED_RULES))
        if unknown:
            raise ValueError(f"shockwave: unknown published rule(s) {', '.join(unknown)}; "
                             f"expected some of {', '.join(PUBLISHED_RULES)}")
        self.published = frozenset(rules)
        self._predictors: dict[int, RemainingTime] = {}
        self._estimates: dict[int, list[tuple[int, float]]] = {}
        self._known: frozenset[int] = frozenset()
        self._plan: dict[int, np.ndarray] = {}

    def _predictor(self, state: RoundState, job: int) -> RemainingTime:
        pred = self._predictors.get(job)
        if pred is None:
            pred = self._predictors[job] = RemainingTime(*state.profile.job(job),
                                                         published="predictor" in self.published)
        return pred

    def plan(self, state: RoundState) -> RoundPlan:
        jobs = state.jobs
        known = frozenset(jobs.tolist())
        due = (known != self._known or state.round_index % self.config.reoptimize_every == 0
               or state.round_index not in self._plan)
        if jobs.size == 0:
            self._known, self._plan = known, {}
            return RoundPlan(jobs)
        if not due:
            planned = self._plan[state.round_index]
            return RoundPlan(planned[np.isin(planned, jobs)])
        tic = time.perf_counter()
        remaining = self._remaining(state)
        if known != self._known:
            self._reestimate(state, remaining)
        self._known = known
        rounds, notes = self._solve(state, remaining)
        self._plan = {state.round_index + t: r for t, r in enumerate(rounds)}
        seconds = time.perf_counter() - tic
        return RoundPlan(self._plan[state.round_index], solved=True, seconds=seconds, notes=notes)

    def _remaining(self, state: RoundState) -> np.ndarray:
        return np.array([self._predictor(state, j).predict(d, oracle=self.config.oracle)
                         for j, d in zip(state.jobs.tolist(), state.epochs_done.tolist())])

    def _reestimate(self, state: RoundState, remaining: np.ndarray) -> None:
        """Append every active job's equal-share finish-time estimate to its history."""
        share = min(1.0, state.gpus / state.jobs.size)
        for j, d, adm, rem in zip(state.jobs.tolist(), state.epochs_done.tolist(), state.admitted.tolist(),
                                  remaining.tolist()):
            estimate = adm + (self._predictor(state, j).elapsed(d) + rem) / share
            self._estimates.setdefault(j, []).append((state.round_index, estimate))
        for gone in self._known - frozenset(state.jobs.tolist()):
            self._estimates.pop(gone, None)
            self._predictors.pop(gone, None)

    def _target(self, job: int, round_index: int) -> float:
        """Momentum average of the job's finish-time estimates (see the module doc)."""
        history = self._estimates[job]
        stamps = np.array([r for r, _ in history] + [round_index], dtype=float)
        values = np.array([v for _, v in history])
        spans = np.diff(stamps)
        weights = spans / spans.sum() if spans.sum() > 0 else np.full(values.size, 1.0 / values.size)
        return MOMENTUM * float(weights @ values) + (1.0 - MOMENTUM) * float(values[-1])

    def _solve(self, state: RoundState, remaining: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
        cfg, N = self.config, state.jobs.size
        epoch_seconds = np.array([self._predictor(state, j).mean_epoch(d)
                                  for j, d in zip(state.jobs.tolist(), state.epochs_done.tolist())])
        share = min(1.0, state.gpus / N)
        target = np.array([self._target(j, state.round_index) for j in state.jobs.tolist()])
        now = state.round_index * state.round_length if "clock" in self.published else state.now
        window_end = now + cfg.rounds * state.round_length
        market = Market(state.gpus, cfg.rounds, state.round_length, state.scale_factors,
                        np.minimum(state.epochs_done, state.epochs_total), state.epochs_total,
                        np.maximum(epoch_seconds, 1e-6), remaining, cfg.k,
                        log_bases=cfg.log_bases if "log" in self.published else None)
        options = SolveOptions(mip_gap=cfg.mip_gap, time_limit=cfg.time_limit, log_gap=cfg.mip_gap,
                               threads=self.options.threads, verbose=self.options.verbose, raw=self.options.raw,
                               seed=self.options.seed)
        notes: list[str] = []
        slack = (cfg.rho_max * target - window_end) * share
        x = None
        if (slack >= 0).all():
            result = self._run(market_program.build(replace(market, finish_slack=slack)), market, options, need=False)
            if result.has_solution and result.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT):
                x = market_program.decode(market, result)
        if x is None:
            rho = (now + remaining / share) / target
            exponent = np.where(remaining < state.round_length, URGENT_EXPONENT, cfg.lam)
            log_priority = np.where(rho > cfg.rho_max, exponent * np.log(np.maximum(rho, 1.0)), 0.0)
            top = float(log_priority.max(initial=0.0))
            if top > np.log(PRIORITY_CAP):
                notes.append(f"shockwave: finish-time priorities over {PRIORITY_CAP:g} taken to a power below 1 "
                             f"(order kept, the largest {PRIORITY_CAP:g})")
                log_priority *= np.log(PRIORITY_CAP) / top
            priority = np.exp(log_priority)
            market = replace(market, priorities=priority)
            result = self._run(market_program.build(market), market, options)
            x = market_program.decode(market, result)
            counts = x.sum(axis=1)
            if counts.any():
                args = (state.scale_factors, state.gpus, cfg.rounds, counts, priority)
                reorder = market_program.build_reorder(*args)
                start = market_program.reorder_start(*args, x).reshape(-1).astype(float)
                ranked = self._run(reorder, None, replace(options, start=start), need=False)
                if ranked.has_solution:
                    x = np.rint(ranked.value("y")).astype(np.int64)
        return self._fill(state, x, remaining), notes

    def _run(self, model, market: Market | None, options: SolveOptions, need: bool = True):
        """Solve ``model``; a market program starts from its LP relaxation rounded to a
        schedule (:func:`formulations.shockwave.round_schedule`) and is not solved further
        when that relaxation is infeasible."""
        canon = model.canonical()
        result = None
        if market is not None:
            relaxed = solve(canon.relaxed(), self.solver, replace(
                options, start=None, log_gap=max(options.log_gap, START_LOG_GAP)))
            if relaxed.status is Status.INFEASIBLE:
                result = relaxed
            else:
                x = (market_program.round_schedule(market, relaxed.value("x")) if relaxed.has_solution
                     else np.zeros((market.num_jobs, market.rounds)))
                options = replace(options, start=market_program.point(model, market, x))
        if result is None:
            result = solve(canon, self.solver, options)
        if need and not result.has_solution:
            raise SolverFailedError(f"policy 'shockwave' on {self.solver}: {model.name} returned no schedule "
                                    f"({result.status}: {result.message})")
        return result

    def _fill(self, state: RoundState, x: np.ndarray, remaining: np.ndarray) -> list[np.ndarray]:
        """Planned rounds as trace ids, each topped up with unplanned jobs (longest predicted
        remaining time first) while their GPUs fit."""
        jobs, w, G = state.jobs, state.scale_factors, state.gpus
        by_remaining = np.argsort(-remaining, kind="stable")
        rounds = []
        for t in range(x.shape[1]):
            chosen = x[:, t] > 0
            idle = G - int(w[chosen].sum())
            extra = []
            for i in by_remaining.tolist():
                if idle <= 0:
                    break
                if not chosen[i] and w[i] <= idle:
                    idle -= int(w[i])
                    extra.append(i)
            rounds.append(jobs[np.concatenate([np.flatnonzero(chosen), np.asarray(extra, dtype=np.int64)])])
        return rounds

