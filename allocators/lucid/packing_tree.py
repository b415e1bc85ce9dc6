"""Lucid's Packing Analyze Model: a decision tree that reads a workload's profile alone (AMP, GPU
utilization, GPU memory utilization, memory) and gives its packing label (0: shares well .. 2:
shares badly), trained on Lucid's profiled workloads (``single_data.csv``'s ``label``).

Lucid's analyzer fits an interpretable tree (Primo's ``PrDT``, prune factor 1e-4) on a seeded 70/30
split of those 66 workloads; this is a CART tree on the Gini impurity (depth :data:`DEPTH` at most,
leaves of :data:`MIN_LEAF` workloads at least), fitted on the same kind of split and reported with
its held-out accuracy. A job's label is the tree's answer for its profile, as a scheduler that has
profiled the job (and not measured it beside others) knows it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEPTH = 3
MIN_LEAF = 2
#: the held-out share and the split's seed (Lucid's analyzer: ``test_size=0.3, random_state=42``)
HELD_OUT = 0.3
SEED = 42
FEATURES = ("amp", "gpu_util", "gmem_util", "gmem")


@dataclass
class PackingTree:
    """Nodes in preorder: ``feature[i]`` (-1: a leaf answering ``label[i]``), ``threshold[i]``, the
    children ``left[i]`` (value <= threshold) and ``right[i]``; the held-out accuracy."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    label: list[int]
    accuracy: float = float("nan")
    held_out: int = 0

    @classmethod
    def train(cls, X: np.ndarray, y: np.ndarray) -> PackingTree:
        """Fitted on a seeded split of ``(X, y)``, scored on the held-out part."""
        order = np.random.default_rng(SEED).permutation(len(y))
        cut = int(round(len(y) * HELD_OUT))
        test, train = order[:cut], order[cut:]
        tree = cls([], [], [], [], [])
        tree._grow(X[train], y[train], 0)
        if cut:
            tree.accuracy = float((tree.predict(X[test]) == y[test]).mean())
            tree.held_out = cut
        return tree

    def _grow(self, X: np.ndarray, y: np.ndarray, depth: int) -> int:
        node = len(self.feature)
        self.feature.append(-1)
        self.threshold.append(0.0)
        self.left.append(-1)
        self.right.append(-1)
        self.label.append(int(np.bincount(y).argmax()) if y.size else 0)
        split = _best_split(X, y) if depth < DEPTH and np.unique(y).size > 1 else None
        if split is not None:
            f, t = split
            low = X[:, f] <= t
            self.feature[node], self.threshold[node] = f, t
            self.left[node] = self._grow(X[low], y[low], depth + 1)
            self.right[node] = self._grow(X[~low], y[~low], depth + 1)
        return node

    def predict(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0], dtype=np.int64)
        for i, row in enumerate(X):
            node = 0
            while self.feature[node] >= 0:
                node = self.left[node] if row[self.feature[node]] <= self.threshold[node] else self.right[node]
            out[i] = self.label[node]
        return out


def _gini(counts: np.ndarray) -> np.ndarray:
    total = counts.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 1.0 - ((counts / np.maximum(total, 1)[..., None]) ** 2).sum(axis=-1), 0.0)


def _best_split(X: np.ndarray, y: np.ndarray) -> tuple[int, float] | None:
    """The (feature, threshold) of least weighted Gini impurity with leaves of MIN_LEAF at least."""
    classes = int(y.max()) + 1
    best, where = _gini(np.bincount(y, minlength=classes)[None])[0] * len(y), None
    for f in range(X.shape[1]):
        order = np.argsort(X[:, f], kind="stable")
        xs, ys = X[order, f], y[order]
        left = np.cumsum(np.eye(classes, dtype=np.int64)[ys], axis=0)[:-1]
        right = left[-1] + np.eye(classes, dtype=np.int64)[ys[-1]] - left
        n_left = np.arange(1, len(y))
        ok = (xs[1:] > xs[:-1]) & (n_left >= MIN_LEAF) & (len(y) - n_left >= MIN_LEAF)
        if not ok.any():
            continue
        cost = _gini(left) * n_left + _gini(right) * (len(y) - n_left)
        cost = np.where(ok, cost, np.inf)
        i = int(cost.argmin())
        if cost[i] < best - 1e-12:
            best, where = float(cost[i]), (f, float((xs[i] + xs[i + 1]) / 2))
    return where


def profile_features(profiles) -> np.ndarray:
    """(workloads, 4) the tree's features of Lucid's profiled workloads."""
    return np.stack([profiles.amp, profiles.gpu_util, profiles.gmem_util, profiles.gmem], axis=1).astype(float)


__all__ = ["FEATURES", "PackingTree", "profile_features"]
