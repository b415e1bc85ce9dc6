"""Co-adaptive jobs (Pollux's job model): each job trains its application's epochs on the GPUs it
is placed on, choosing its batch size as Pollux's agent does.

A job on a placement (GPUs per node) with per-GPU batch m and s extra accumulation micro-steps
(global batch M = R·m·(s + 1)) makes progress ``gain(M, epoch) / (step + s·(step − sync))`` per
second, with step and sync the application's measured times (:mod:`simulator.applications`).
Within an interval it runs epoch by epoch: an epoch whose end falls inside the interval ends at a
whole second (the time to it rounded), and the job re-chooses its batch at each epoch end and at
the interval's end; it completes at the end of its last epoch.

The agent's batch choice: a job with a fixed global batch (the baselines' tuned batch; ``ncf``
under Pollux) splits it by :func:`simulator.goodput.batch_config`; an adaptive job not yet
profiled takes max(M0, min_local·R); once profiled it takes the best-goodput batch of its fitted
model (:func:`simulator.goodput.optimize`). Every (nodes, replicas, per-GPU batch) a job runs is
profiled once (the measured step and sync times), and the model is refit on each new point; the
gradient statistics are the ones measured where the job is.

A job may grow to ``min(max(2·R_profiled, 1), 64, max_batch // min_local)`` replicas (``ncf``:
1): at most twice the most it has run on.
"""

from __future__ import annotations

import math

import numpy as np

from simulator.applications import Application, gain
from simulator.goodput import PerfParams, batch_config, fit_perf_params, optimize

#: the largest replica count Pollux lets a job grow to
MAX_REPLICAS = 64


class CoAdaptiveJobs:
    """The jobs ``apps[j]`` (their applications); ``fixed_batch[j]`` a global batch the job keeps
    (0: adaptive)."""

    def __init__(self, apps: list[Application], fixed_batch: np.ndarray):
        J = len(apps)
        self.apps = apps
        self.fixed_batch = np.asarray(fixed_batch, dtype=np.int64)
        self.epoch = np.zeros(J, dtype=np.int64)
        self.progress = np.zeros(J)
        self.atomic = np.zeros(J, dtype=np.int64)
        self.accum = np.zeros(J, dtype=np.int64)
        self.placement: list[tuple[int, ...]] = [()] * J
        self.done = np.zeros(J, dtype=bool)
        self.profile: list[dict] = [{} for _ in range(J)]
        self.perf: list[PerfParams | None] = [None] * J
        self.stats = np.zeros((J, 2))
        self.max_profiled = np.zeros(J, dtype=np.int64)
        #: reallocations after the first start (-1: never started)
        self.restarts = np.full(J, -1, dtype=np.int64)
        self._packed: dict[tuple, float] = {}

    @classmethod
    def for_policy(cls, apps: list[Application], batch_size: np.ndarray, adaptive: bool) -> CoAdaptiveJobs:
        """Jobs that keep the trace's ``batch_size`` (the baselines' tuned batch), or adapt it
        (Pollux), ``ncf`` pinned at its largest batch as the published simulator does."""
        if not adaptive:
            return cls(apps, batch_size)
        return cls(apps, np.array([a.max_batch if a.name == "ncf" else 0 for a in apps], dtype=np.int64))

    def epochs_done(self, jobs: np.ndarray) -> np.ndarray:
        """Epochs ``jobs`` have done, the current one as its fraction of progress."""
        out = self.epoch[jobs].astype(float)
        for k, j in enumerate(jobs.tolist()):
            if not self.done[j]:
                b, e = self.apps[j].boundaries, self.epoch[j]
                out[k] += (self.progress[j] - b[e]) / (b[e + 1] - b[e])
        return out

    def batch(self, j: int) -> int:
        """The job's global batch on its placement (0 when it holds no GPUs)."""
        return int(sum(self.placement[j]) * self.atomic[j] * (self.accum[j] + 1))

    def reallocate(self, j: int, placement) -> None:
        """Place job j on ``placement`` (GPUs per node, empty: none) and choose its batch."""
        self.placement[j] = tuple(int(g) for g in placement if g > 0)
        if self.placement[j]:
            self.restarts[j] += 1
            self._choose_batch(j)
        else:
            self.atomic[j] = 0

    def max_replicas(self, j: int) -> int:
        """Pollux's growth cap (module doc)."""
        app = self.apps[j]
        if app.name == "ncf":
            return 1
        return int(min(max(2 * self.max_profiled[j], 1), MAX_REPLICAS, app.max_batch // app.min_local))

    def _choose_batch(self, j: int) -> None:
        app, placement = self.apps[j], self.placement[j]
        R, N = sum(placement), len(placement)
        if self.fixed_batch[j] or self.perf[j] is None:
            batch = self.fixed_batch[j] or max(app.init_batch, app.min_local * R)
            m, s = batch_config(batch, R, app.init_batch, app.max_local, app.max_batch)
        else:
            _, m, s = optimize(self.perf[j], *self.stats[j], app.init_batch, N, R, app.max_batch, app.min_local,
                               app.max_local)
            m, s = m[0], s[0]
            m = min(m, app.max_batch // (R * (s + 1)))
        self.atomic[j], self.accum[j] = int(m), int(s)

    def advance(self, j: int, seconds: float) -> float:
        """Run job j for ``seconds`` (whole seconds) on its placement; returns the seconds it took to
        complete (NaN: not completed)."""
        app, placement = self.apps[j], self.placement[j]
        if not placement or self.done[j]:
            return math.nan
        R, N = sum(placement), len(placement)
        used = 0.0
        while seconds > 0 and not self.done[j]:
            m, s = int(self.atomic[j]), int(self.accum[j])
            batch = R * m * (s + 1)
            step, sync = app.step_time(placement, m)
            sqr, var = app.grad_stats(batch, int(self.epoch[j]))
            self._observe(j, N, R, m, step, sync, sqr, var)
            rate = float(gain(batch / app.init_batch, sqr, var)) / (step + s * (step - sync))
            target = app.boundaries[self.epoch[j] + 1]
            if self.progress[j] + rate * seconds < target:
                self.progress[j] += rate * seconds
                used += seconds
                seconds = 0
            else:
                delta = round((target - self.progress[j]) / rate)
                self.epoch[j] += 1
                self.progress[j] = target
                used += delta
                seconds -= delta
                if self.epoch[j] >= app.max_epochs:
                    self.done[j] = True
                    return used
            self._choose_batch(j)
        return math.nan

    def _observe(self, j: int, N: int, R: int, m: int, step: float, sync: float, sqr: float, var: float) -> None:
        """The agent profiles (N, R, m) once and refits its model on each new point."""
        self.stats[j] = sqr, var
        key = (N, R, m)
        profile = self.profile[j]
        if key in profile:
            return
        profile[key] = (step, sync)
        self.max_profiled[j] = max(self.max_profiled[j], R)
        points = np.array([(*k, st - sy, st) for k, (st, sy) in profile.items()], dtype=float)
        self.perf[j] = fit_perf_params(*points.T)

    def speedups(self, j: int, nodes: np.ndarray, replicas: np.ndarray, base_replicas: int) -> np.ndarray:
        """Goodput on (nodes, replicas) over goodput on one node with ``base_replicas`` (Pollux's
        fair share), from the job's fitted model; linear in replicas before it is profiled."""
        nodes, replicas = np.asarray(nodes), np.asarray(replicas)
        perf = self.perf[j]
        if perf is None:
            return replicas / base_replicas
        app = self.apps[j]
        args = (app.max_batch, app.min_local, app.max_local)
        good = optimize(perf, *self.stats[j], app.init_batch, np.maximum(nodes, 1), np.maximum(replicas, 1), *args)[0]
        base = optimize(perf, *self.stats[j], app.init_batch, 1, base_replicas, *args)[0][0]
        return np.where(replicas > 0, good / base, 0.0)

    def remaining_iterations(self, j: int, batch: int) -> float:
        """Iterations at global ``batch`` from the end of the job's current epoch to its last (1 when
        in its last epoch): the Optimus+Oracle estimate, whole epochs only."""
        app, e = self.apps[j], int(self.epoch[j])
        last = app.max_epochs - 1
        if e >= last:
            return 1.0
        return app.iterations_at(batch, last) - app.iterations_at(batch, e)

    def packed_step_seconds(self, j: int, replicas: int, batch: int, gpus_per_node: int) -> float:
        """Measured seconds per step of job j's application at global ``batch`` on ``replicas`` GPUs
        packed on full nodes of ``gpus_per_node`` (one GPU: at least two micro-steps)."""
        app = self.apps[j]
        key = (app.name, replicas, batch, gpus_per_node)
        if key in self._packed:
            return self._packed[key]
        full, rest = divmod(replicas, gpus_per_node)
        placement = (gpus_per_node,) * full + ((rest,) if rest else ())
        local = math.ceil(batch / replicas - 1e-8)
        accum = math.ceil(local / app.max_local - 1e-8) - 1
        if replicas == 1:
            accum = max(accum, 1)
        atomic = min(math.ceil(local / (accum + 1) - 1e-8), app.max_batch // (replicas * (accum + 1)))
        step, sync = app.step_time(placement, atomic)
        self._packed[key] = step + accum * (step - sync)
        return self._packed[key]

