"""Lucid's system tuner: Prescient Adaptive Sharing, driven by the Throughput Predict Model.

As the artifact runs it (``simulation/policy/lucid.py``, ``check_pas``; facts restated, no code
taken): the cluster's throughput is the number of GPU jobs submitted per ten-minute bin; every
:data:`CHECK_EVERY` seconds the model forecasts the bins that start after that moment, and while the
mean of the next :data:`AHEAD` forecasts is at most :data:`THRESHOLD` jobs, sharing is off until the
next check (few jobs are coming: packing would only slow the jobs it pairs). The artifact reads its
forecasts from a file made offline, for Venus only; here the model is trained during the run on the
past alone.

**Throughput Predict Model**: an additive model (:class:`~allocators.lucid.additive.AdditiveModel`,
the EBM's class) of a bin's count from the target bin's hour of day and day of week, how many bins
ahead it lies, the last ended bin's count, the mean of the last six ended bins (an hour) and the count
of the same bin a day earlier. Its rows are (ended bin, bin ahead) pairs of bins that ended before the
fit, over the last :data:`HISTORY` bins; it is refit every :data:`REFIT` seconds, first once a day
of bins has ended (before that sharing stays on, as the artifact's default with no forecast).
"""

from __future__ import annotations

import numpy as np

from allocators.lucid.additive import AdditiveModel

#: a bin of the throughput series (s), the forecasts averaged, the mean at or below which sharing is
#: off, the seconds between checks, between refits, the bins a fit looks back over, a day of bins
BIN = 600.0
AHEAD = 5
THRESHOLD = 2.0
CHECK_EVERY = 100.0
REFIT = 86400.0
HISTORY = 28 * 144
DAY = 144
NAMES = ("hour", "weekday", "ahead", "last", "last_hour", "day_before")
CATEGORICAL = (True, True, False, False, False, False)


class SharingTuner:
    """Whether sharing is on at a moment, from the submissions of GPU jobs before it (module doc).

    ``submit``: every job's submission time (s, a clock whose day starts at multiples of 86,400 s);
    ``gpu_job``: which jobs ask for GPUs. Only bins that ended before a check are read."""

    def __init__(self, submit: np.ndarray, gpu_job: np.ndarray):
        times = np.asarray(submit, dtype=float)[np.asarray(gpu_job, dtype=bool)]
        self.start = np.floor(times.min() / BIN) * BIN if times.size else 0.0
        self.counts = np.bincount(((times - self.start) // BIN).astype(np.int64)) if times.size \
            else np.zeros(0, dtype=np.int64)
        #: the counts' prefix sums (an hour's mean is a difference of two)
        self.cumulative = np.concatenate([[0], np.cumsum(self.counts)])
        self.model: AdditiveModel | None = None
        self.fitted_at = -np.inf
        self.fits = 0
        self.checked_at = np.nan
        self.on = True
        self.checks = self.off_checks = 0
        #: (bins, forecasts, the last ended bin) of every check, for the errors in the notes
        self.forecasts: list[tuple[np.ndarray, np.ndarray, int]] = []

    def sharing(self, now: float) -> bool:
        """Whether sharing is on at ``now``: the state of the last check at or before it."""
        check = np.floor(now / CHECK_EVERY) * CHECK_EVERY
        if check != self.checked_at:
            self.checked_at = check
            self.on = self._forecast_on(check)
            self.checks += 1
            self.off_checks += not self.on
        return self.on

    def next_check(self, now: float) -> float:
        return (np.floor(now / CHECK_EVERY) + 1.0) * CHECK_EVERY

    def _forecast_on(self, t: float) -> bool:
        ended = int((t - self.start) // BIN)  # bins 0..ended-1 ended at or before t
        if ended < DAY:
            return True
        if self.model is None or t - self.fitted_at >= REFIT:
            X, y = self._rows(max(0, ended - HISTORY), ended)
            self.model = AdditiveModel.fit(X, y, CATEGORICAL, NAMES)
            self.fitted_at, self.fits = t, self.fits + 1
        first = int(np.floor((t - self.start) / BIN)) + 1  # the first bin that starts after t
        target = np.arange(first, first + AHEAD)
        forecast = np.maximum(self.model.predict(self._features(np.full(AHEAD, ended - 1), target)), 0.0)
        self.forecasts.append((target, forecast, ended - 1))
        return float(forecast.mean()) > THRESHOLD

    def _rows(self, lo: int, ended: int) -> tuple[np.ndarray, np.ndarray]:
        """Training rows: each ended bin ``o`` in [lo, ended) and each bin 2..AHEAD + 1 after it that
        also ended."""
        o = np.repeat(np.arange(lo, ended), AHEAD)
        target = o + np.tile(np.arange(2, AHEAD + 2), ended - lo)
        keep = target < ended
        o, target = o[keep], target[keep]
        return self._features(o, target), self._count(target).astype(float)

    def _features(self, o: np.ndarray, target: np.ndarray) -> np.ndarray:
        seconds = self.start + target * BIN
        c = self.cumulative
        last_hour = (c[np.clip(o + 1, 0, c.size - 1)] - c[np.clip(o - 5, 0, c.size - 1)]) / 6.0
        return np.stack([(seconds % 86400) // 3600, (seconds // 86400) % 7, target - o, self._count(o), last_hour,
                         self._count(target - DAY)], axis=1).astype(float)

    def _count(self, bins: np.ndarray) -> np.ndarray:
        """Each bin's count (0 outside the series)."""
        out = np.zeros(bins.shape, dtype=np.int64)
        inside = (bins >= 0) & (bins < self.counts.size)
        out[inside] = self.counts[bins[inside]]
        return out

    def error(self) -> tuple[float, float, float, int] | None:
        """Mean absolute error of the forecasts (jobs per bin), that of the naive forecast (the last
        ended bin's count), the mean actual count, and how many forecasts."""
        if not self.forecasts:
            return None
        target = np.concatenate([t for t, _, _ in self.forecasts])
        forecast = np.concatenate([f for _, f, _ in self.forecasts])
        naive = self._count(np.concatenate([np.full(t.size, o) for t, _, o in self.forecasts]))
        actual = self._count(target)
        return (float(np.abs(forecast - actual).mean()), float(np.abs(naive - actual).mean()), float(actual.mean()),
                int(target.size))

    def note(self) -> str:
        err = self.error()
        told = (f"mean absolute error {err[0]:.2f} GPU jobs per 10 min (the last bin's count as forecast: "
                f"{err[1]:.2f}) against {err[2]:.2f} submitted, over {err[3]} forecasts" if err
                else "no forecast (under a day of history)")
        return (f"lucid: system tuner (Prescient Adaptive Sharing): Throughput Predict Model (additive, on "
                f"{', '.join(NAMES)}) refit {self.fits} time(s) on ended 10-minute bins only; {told}; sharing off "
                f"at {self.off_checks} of {self.checks} checks (mean of the next {AHEAD} forecasts <= "
                f"{THRESHOLD:g})")


__all__ = ["SharingTuner"]
