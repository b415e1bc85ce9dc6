"""An interpretable additive regressor: Lucid's Workload Estimate Model, in place of
``interpret-core``'s Explainable Boosting Machine.

The model is ``y ~ b + sum_f s_f(bin_f(x_f))``: one shape function per feature, a value per bin of
the feature (a numeric feature's bins are its training quantiles, :data:`BINS` at most; a
categorical one's its categories, unseen ones score 0). It is fitted as the EBM is, by cyclic
gradient boosting on the squared loss: in each of :data:`ROUNDS` rounds every feature in turn adds
``rate`` times the shrunk mean residual of each of its bins (``sum r / (count + SMOOTH)``) to its
shape. This is the EBM's model class and fitting scheme without its pairwise interaction terms and
outer bagging (Lucid's notebook fits ``ExplainableBoostingRegressor(learning_rate=0.01,
binning="uniform", interactions=20)``); it takes milliseconds, so a simulation refits it as jobs
end, and :meth:`AdditiveModel.shapes` shows what it learnt, feature by feature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BINS = 32
ROUNDS = 150
RATE = 0.1
SMOOTH = 5.0


@dataclass
class AdditiveModel:
    """A fitted model: intercept, per-feature bin edges (None: categorical) or categories, shapes."""

    names: tuple[str, ...]
    intercept: float
    edges: list[np.ndarray | None]
    categories: list[np.ndarray | None]
    shape: list[np.ndarray]

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, categorical: tuple[bool, ...], names: tuple[str, ...],
            rounds: int = ROUNDS, rate: float = RATE) -> AdditiveModel:
        """Fitted on rows ``X`` (n, features) and targets ``y`` (n,)."""
        edges, categories, bins = [], [], []
        for f, cat in enumerate(categorical):
            col = X[:, f]
            if cat:
                values, codes = np.unique(col, return_inverse=True)
                edges.append(None)
                categories.append(values)
                bins.append(codes)
            else:
                cuts = np.unique(np.quantile(col, np.linspace(0, 1, BINS + 1)[1:-1]))
                edges.append(cuts)
                categories.append(None)
                bins.append(np.searchsorted(cuts, col, side="right"))
        intercept = float(y.mean()) if y.size else 0.0
        shape = [np.zeros(int(b.max(initial=0)) + 1 if c is None else len(c)) for b, c in zip(bins, categories)]
        pred = np.full(y.size, intercept)
        counts = [np.bincount(b, minlength=s.size) for b, s in zip(bins, shape)]
        for _ in range(rounds):
            for f, b in enumerate(bins):
                step = rate * np.bincount(b, weights=y - pred, minlength=shape[f].size) / (counts[f] + SMOOTH)
                shape[f] += step
                pred += step[b]
        return cls(tuple(names), intercept, edges, categories, shape)

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = np.full(X.shape[0], self.intercept)
        for f, (cuts, values, s) in enumerate(zip(self.edges, self.categories, self.shape)):
            col = X[:, f]
            if values is None:
                out += s[np.searchsorted(cuts, col, side="right")]
            else:
                at = np.clip(np.searchsorted(values, col), 0, len(values) - 1)
                out += np.where(values[at] == col, s[at], 0.0)
        return out

    def shapes(self) -> dict[str, float]:
        """Each feature's importance: the mean absolute shape over the bins (EBM's summary)."""
        return {name: float(np.abs(s).mean()) for name, s in zip(self.names, self.shape)}


__all__ = ["AdditiveModel"]
