"""Row reductions of tall (m, K) arrays with few columns, and the column-major layout they are
fast on.

numpy reduces a C-ordered (m, K) array along its short axis one row at a time: ``max(axis=1)`` of
100,000 x 3 takes about 5 ms, against 0.17 ms on the same array in column-major (Fortran) order,
where it runs over whole columns. ``argmax(axis=1)`` stays row by row in either order;
:func:`argmax_rows` and :func:`argmin_rows` run over the columns instead (first extreme wins, as
numpy's)."""

from __future__ import annotations

import numpy as np


def fortran(a: np.ndarray | None) -> np.ndarray | None:
    """``a`` in column-major order (no copy where it is; a C-ordered one is copied through its
    transpose, 30 % faster than ``np.asfortranarray`` at 1,000,000 x 10)."""
    if a is None or a.flags.f_contiguous:
        return a
    return a.T.copy().T


def take_rows(a: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    """``a[rows]`` (an index array) of a column-major ``a``, column-major (a column at a time:
    no transposing copy)."""
    if a is None:
        return None
    out = np.empty((rows.size, a.shape[1]), dtype=a.dtype, order="F")
    for k in range(a.shape[1]):
        out[:, k] = a[rows, k]
    return out


def argmax_rows(a: np.ndarray) -> np.ndarray:
    """``a.argmax(axis=1)`` by columns (no NaN in ``a``)."""
    return _arg_rows(a, np.greater, np.maximum)


def argmin_rows(a: np.ndarray) -> np.ndarray:
    """``a.argmin(axis=1)`` by columns (no NaN in ``a``)."""
    return _arg_rows(a, np.less, np.minimum)


def _arg_rows(a: np.ndarray, better, keep) -> np.ndarray:
    """The first column of each row's extreme: the running index moves by arithmetic, not by a
    masked store (a random mask stalls a masked store's branches: 10x slower)."""
    best = a[:, 0].copy()
    arg = np.zeros(a.shape[0], dtype=np.intp)
    for k in range(1, a.shape[1]):
        col = a[:, k]
        arg += better(col, best) * (k - arg)
        keep(best, col, out=best)
    return arg
