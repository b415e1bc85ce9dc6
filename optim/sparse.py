"""Sparse assembly without scipy's per-constructor checks on the hot path.

Small models are built and solved hundreds of times per simulation; scipy's COO
constructors and conversions cost tens of microseconds each in index-dtype checks. These
helpers do the same work with a handful of numpy calls.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp


class CsrArrays(NamedTuple):
    """A CSR matrix as bare arrays, accepted wherever the model takes coefficients: row i
    holds ``data[indptr[i]:indptr[i+1]]`` in columns ``indices[...]``. Building one costs
    nothing; a scipy matrix checks its index arrays on construction."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix: sp.csr_matrix | CsrArrays, scale: float = 1.0) -> CsrArrays:
        """``scale * matrix`` of a scipy sparse matrix (converted to CSR if it is not) or of
        CSR arrays."""
        if not isinstance(matrix, CsrArrays) and matrix.format != "csr":
            matrix = matrix.tocsr()
        return cls(matrix.data * scale, matrix.indices, matrix.indptr, matrix.shape)

    def to_csr(self) -> sp.csr_matrix:
        """The scipy matrix (it checks the arrays)."""
        return sp.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)

    def rows(self) -> np.ndarray:
        """The row index of every stored entry."""
        return expand_pointers(self.indptr)

    def column_sums(self) -> np.ndarray:
        """``ones @ matrix``: each column's sum, its entries added in row order."""
        return np.bincount(self.indices, weights=self.data, minlength=self.shape[1])


def csc_from_triplets(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int],
                      distinct: bool = False) -> sp.csc_matrix:
    """The canonical CSC matrix of ``sum`` of ``(row, col, value)`` triplets: entries sorted
    by column then row, duplicates summed, zeros dropped (``distinct``: the caller knows
    there are neither, so only the sort is done)."""
    order = np.lexsort((rows, cols))
    r, c, v = rows[order], cols[order], vals[order]
    if r.size and not distinct:
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


def expand_pointers(indptr: np.ndarray) -> np.ndarray:
    """Compressed pointers to the major index of every stored entry (``np.diff`` spelled out:
    it costs more than the subtraction on small arrays)."""
    return np.repeat(np.arange(indptr.size - 1), indptr[1:] - indptr[:-1])


def csc_columns(A: sp.csc_matrix) -> np.ndarray:
    """The column index of every stored entry of a CSC matrix (its COO ``col``)."""
    return expand_pointers(A.indptr)


def transpose_times(A: sp.csc_matrix, y: np.ndarray) -> np.ndarray:
    """``A.T @ y`` for a CSC matrix without building the transpose."""
    return np.bincount(csc_columns(A), weights=A.data * y[A.indices], minlength=A.shape[1])


def distinct_rows(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(first, label, count)`` of the distinct rows of a 2-D float array, labelled in the order of
    their first row: each one's first row, each row's label, rows per label (``-0.0`` equals ``0.0``).

    Rows are sorted once on a projection ``data @ w`` (fixed weights in [1, 2)), whatever the width:
    equal rows have equal keys, so they are adjacent unless a distinct row with the very same key
    sits between them, which shows as two adjacent rows with equal keys and unequal data. Then (or
    when a key is not finite) one exact lexsort over the columns is used instead."""
    m = data.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        key = data @ _projection(data.shape[1])
    order = np.argsort(key)
    ordered = data[order]
    differ = (ordered[1:] != ordered[:-1]).any(axis=1)
    sorted_key = key[order]
    if not np.isfinite(sorted_key).all() or (differ & (sorted_key[1:] == sorted_key[:-1])).any():
        order = np.lexsort(data.T[::-1])
        ordered = data[order]
        differ = (ordered[1:] != ordered[:-1]).any(axis=1)
    new = np.ones(m, dtype=bool)
    new[1:] = differ
    starts = np.flatnonzero(new)
    first = np.minimum.reduceat(order, starts) if m else order
    by_first = np.argsort(first, kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    label = np.empty(m, dtype=np.int64)
    label[order] = rank[np.cumsum(new) - 1]
    count = np.diff(np.append(starts, m))
    return first[by_first], label, count[by_first]


@functools.lru_cache(maxsize=32)
def _projection(width: int) -> np.ndarray:
    """Fixed weights in [1, 2) for :func:`distinct_rows`' sort key."""
    return 1.0 + np.random.default_rng(0).random(width)
