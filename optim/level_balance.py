"""The level form's two spreading steps of the price-directed method (:mod:`optim.price_directed`),
also :func:`formulations.max_min_fairness.start_basis`'s: one type per block for a level Z
(:func:`balance`), and a vertex's idle capacity on unpriced types handed out (:func:`fill`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .price_directed import _Part

#: :func:`balance` runs at most this many rounds per type
BALANCE_ROUNDS = 4


def balance(per_level: np.ndarray, allowed: np.ndarray, n: np.ndarray, best: np.ndarray, Z: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """``(best', load)``: the choice of one ``allowed`` type per block ``best`` rebalanced for
    level Z, and each type's capacity per unit of level ``load_k = sum_{b on k} per_level_bk``.

    Block b on type k takes ``Z per_level_bk`` of capacity k at level Z. In each of at most
    :data:`BALANCE_ROUNDS` K rounds, the type most over its capacity at Z (if any) sheds blocks
    until it fits: in order of the capacity they would take elsewhere per unit they free, each to
    the allowed type with room for it where it would take least, as long as that type keeps room.
    A round that moves no block ends."""
    m, K = per_level.shape
    rows = np.arange(m)
    load = np.bincount(best, weights=per_level[rows, best], minlength=K)
    spare = (n - Z * load).tolist()
    for _ in range(BALANCE_ROUNDS * K):
        j = min(range(K), key=spare.__getitem__)
        if spare[j] >= 0:
            break
        on = np.flatnonzero(best == j)
        elsewhere = np.where(allowed[on] & (Z * per_level[on] <= np.array(spare)), per_level[on], np.inf)
        dest = elsewhere.argmin(axis=1)
        add = Z * elsewhere[np.arange(on.size), dest]
        free = Z * per_level[on, j]
        order = np.argsort(add / free, kind="stable")
        moved = False
        for i, d, more, less in zip(on[order].tolist(), dest[order].tolist(), add[order].tolist(),
                                    free[order].tolist(), strict=True):
            if more == np.inf:
                break
            if more <= spare[d]:
                best[i], moved = d, True
                spare[d] -= more
                spare[j] += less
                if spare[j] >= 0:
                    break
        if not moved:
            break
    return best, np.bincount(best, weights=per_level[rows, best], minlength=K)


def fill(x: np.ndarray, part: _Part, y: np.ndarray) -> np.ndarray:
    """``x`` with each unpriced type's spare capacity handed to the blocks on it: on type k every
    positive ``x_bk`` grows by the same factor ``t_k >= 1``, each block stopping at its budget,
    until the type is full or every block on it is (types in order)."""
    x = x.copy()
    unpriced = np.flatnonzero(y <= 0)
    if unpriced.size == 0:
        return x
    single = np.count_nonzero(x, axis=1) == 1  # a block on one cell: its budget use is that cell's
    for k in unpriced:
        on = np.flatnonzero(x[:, k] > 0)
        spare = part.n[k] - part.g[:, k] @ x[:, k]
        if on.size == 0 or spare <= 0:
            continue
        e_k, x_k = part.e[on, k], x[on, k]
        used = e_k * x_k
        several = np.flatnonzero(~single[on])
        if several.size:
            used[several] = (part.e[on[several]] * x[on[several]]).sum(axis=1)
        room = np.maximum(part.h[on] - used, 0.0) / e_k
        grow = part.g[on, k] * x[on, k]  # capacity taken per unit of (t_k - 1) until the block's budget stops it
        stop = room / x[on, k]  # t_k - 1 at which it does
        order = np.argsort(stop, kind="stable")
        stop, grow, cap = stop[order], grow[order], (part.g[on, k] * room)[order]
        # capacity used at t - 1 = stop[i]: the stopped blocks' caps plus the rest growing
        used = np.concatenate([[0.0], np.cumsum(cap)])[:-1] + stop * (grow.sum() - np.concatenate([[0.0],
                                                                                               np.cumsum(grow)])[:-1])
        i = int(np.searchsorted(used, spare, side="right"))
        if i >= on.size:
            t = stop[-1] if on.size else 0.0
        else:
            done, rest = cap[:i].sum(), grow[i:].sum()
            t = (spare - done) / rest if rest > 0 else 0.0
        x[on, k] += np.minimum(x[on, k] * t, room)
    return x
