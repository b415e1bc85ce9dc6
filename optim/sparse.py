"""Sparse assembly without scipy's per-constructor checks on the hot path.

Small models are built and solved hundreds of times per simulation; scipy's COO
constructors and conversions cost tens of microseconds each in index-dtype checks. These
helpers do the same work with a handful of numpy calls.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def csc_from_triplets(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int]) -> sp.csc_matrix:
    """The canonical CSC matrix of ``sum`` of ``(row, col, value)`` triplets: entries sorted
    by column then row, duplicates summed, zeros dropped."""
    order = np.lexsort((rows, cols))
    r, c, v = rows[order], cols[order], vals[order]
    if r.size:
        start = np.ones(r.size, dtype=bool)
        start[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
        heads = np.flatnonzero(start)
        if heads.size < r.size:
            v = np.add.reduceat(v, heads)
            r, c = r[heads], c[heads]
        keep = v != 0
        if not keep.all():
            r, c, v = r[keep], c[keep], v[keep]
    indptr = np.zeros(shape[1] + 1, dtype=np.int32)
    np.cumsum(np.bincount(c, minlength=shape[1]), out=indptr[1:])
    return sp.csc_matrix((v.astype(float), r.astype(np.int32), indptr), shape=shape)


def csc_columns(A: sp.csc_matrix) -> np.ndarray:
    """The column index of every stored entry of a CSC matrix (its COO ``col``)."""
    return np.repeat(np.arange(A.shape[1]), np.diff(A.indptr))


def transpose_times(A: sp.csc_matrix, y: np.ndarray) -> np.ndarray:
    """``A.T @ y`` for a CSC matrix without building the transpose."""
    return np.bincount(csc_columns(A), weights=A.data * y[A.indices], minlength=A.shape[1])
