"""Sparse assembly without scipy on the hot path.

Small models are built and solved hundreds of times per simulation; scipy's COO
constructors and conversions cost tens of microseconds each in index-dtype checks, and
importing ``scipy.sparse`` costs a command-line run about 0.09 s of CPU. These helpers do the
same work with a handful of numpy calls, and import scipy only when asked for a scipy matrix.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp


class _LazyScipySparse:
    """``scipy.sparse``, imported on the first attribute read: the modules that build matrices
    with it (the MILPs, Pollux, Shockwave) name it at the top, and a run that never builds one
    never imports it."""

    def __getattr__(self, name: str):
        import scipy.sparse

        return getattr(scipy.sparse, name)


#: ``from optim.sparse import scipy_sparse as sp`` in place of ``import scipy.sparse as sp``
scipy_sparse = _LazyScipySparse()


def is_scipy_sparse(obj) -> bool:
    """``scipy.sparse.issparse(obj)`` without importing scipy: an object can only be a scipy
    matrix if scipy.sparse is loaded."""
    module = sys.modules.get("scipy.sparse")
    return module is not None and module.issparse(obj)


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
        return scipy_sparse.csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)

    def rows(self) -> np.ndarray:
        """The row index of every stored entry."""
        return expand_pointers(self.indptr)

    def column_sums(self) -> np.ndarray:
        """``ones @ matrix``: each column's sum, its entries added in row order."""
        return np.bincount(self.indices, weights=self.data, minlength=self.shape[1])


class CscArrays(NamedTuple):
    """A canonical CSC matrix as bare arrays (what :class:`~optim.canonical.CanonicalModel`
    holds): column j holds ``data[indptr[j]:indptr[j+1]]`` in rows ``indices[...]``, sorted and
    distinct within a column. Clarabel and HiGHS read the arrays as they are;
    :meth:`scipy` gives the scipy matrix to the code that slices or stacks."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, matrix) -> CscArrays:
        """The canonical CSC arrays of a scipy sparse matrix (or of CSC arrays, as they are)."""
        if isinstance(matrix, CscArrays):
            return matrix
        csc = matrix.tocsc(copy=True)
        csc.sum_duplicates()
        return cls(csc.data.astype(float, copy=False), csc.indices.astype(np.int32, copy=False),
                   csc.indptr.astype(np.int32, copy=False), (int(csc.shape[0]), int(csc.shape[1])))

    def hstack(self, right) -> CscArrays:
        """``[self, right]``: the columns of ``right`` (CSC arrays or a scipy matrix with as many
        rows) after these. Each column keeps its rows, so the result is canonical as it is."""
        right = CscArrays.of(right)
        if right.shape[0] != self.shape[0]:
            raise ValueError(f"hstack: {self.shape[0]} rows against {right.shape[0]}")
        indptr = np.concatenate([self.indptr, right.indptr[1:] + self.indptr[-1]]).astype(np.int32)
        return CscArrays(np.concatenate([self.data, right.data]), np.concatenate([self.indices, right.indices]),
                         indptr, (self.shape[0], self.shape[1] + right.shape[1]))

    @property
    def has_canonical_format(self) -> bool:
        """Always: sorted, distinct rows per column (Clarabel asks)."""
        return True

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    def columns(self) -> np.ndarray:
        """The column index of every stored entry (its COO ``col``)."""
        return expand_pointers(self.indptr)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """``A @ x`` for a vector ``x``."""
        return np.bincount(self.indices, weights=self.data * x[self.columns()], minlength=self.shape[0])

    def scipy(self) -> sp.csc_matrix:
        """The scipy matrix (it checks the arrays; imports scipy)."""
        return scipy_sparse.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)

    def toarray(self) -> np.ndarray:
        """The dense matrix."""
        dense = np.zeros(self.shape)
        dense[self.indices, self.columns()] = self.data
        return dense


def csc_from_triplets(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, shape: tuple[int, int],
                      distinct: bool = False) -> CscArrays:
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
    return CscArrays(v.astype(float), r.astype(np.int32), indptr, (int(shape[0]), int(shape[1])))


def expand_pointers(indptr: np.ndarray) -> np.ndarray:
    """Compressed pointers to the major index of every stored entry (``np.diff`` spelled out:
    it costs more than the subtraction on small arrays)."""
    return np.repeat(np.arange(indptr.size - 1), indptr[1:] - indptr[:-1])


def transpose_times(A: CscArrays, y: np.ndarray) -> np.ndarray:
    """``A.T @ y`` for a CSC matrix without building the transpose: the entries' products summed
    column by column (``np.add.reduceat`` over the nonempty columns' starts; expanding the column
    pointers for ``bincount`` took 1.2 s of 1.6 at 10,000,000 columns)."""
    prod = A.data * y[A.indices]
    indptr = np.asarray(A.indptr)
    if prod.size == 0:
        return np.zeros(A.shape[1])
    nonempty = indptr[1:] > indptr[:-1]
    if nonempty.all():
        return np.add.reduceat(prod, indptr[:-1])
    out = np.zeros(A.shape[1])
    out[nonempty] = np.add.reduceat(prod, indptr[:-1][nonempty])
    return out


def distinct_rows(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(first, label, count)`` of the distinct rows of a 2-D float array, labelled in the order of
    their first row: each one's first row, each row's label, rows per label (``-0.0`` equals ``0.0``).

    Rows are grouped by a projection ``data @ w`` (fixed weights in [1, 2)), whatever the width:
    equal rows have equal keys. Each row is then checked against its group's first row; where a key
    is shared by unequal rows (or is NaN) one exact lexsort over the columns groups them instead.
    (A stable sort would give each group's first row without the ``minimum.reduceat``, but it
    takes 7 ms on 100,000 rows where the default sort and the reduction take 4.)"""
    m = data.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        key = data @ _projection(data.shape[1])
    order = key.argsort()
    sorted_key = key[order]
    new = np.empty(m, dtype=bool)
    new[:1] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new[1:])
    label = np.empty(m, dtype=np.int64)
    label[order] = new.cumsum() - 1
    first = np.minimum.reduceat(order, np.flatnonzero(new)) if m else order
    if not (data[first][label] == data).all():
        order = np.lexsort(data.T[::-1])
        ordered = data[order]
        new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
        label[order] = np.cumsum(new) - 1
        first = order[new]
    by_first = first.argsort()
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(by_first.size)
    return first[by_first], rank[label], np.bincount(label, minlength=first.size)[by_first]


@functools.lru_cache(maxsize=32)
def _projection(width: int) -> np.ndarray:
    """Fixed weights in [1, 2) for :func:`distinct_rows`' sort key."""
    return 1.0 + np.random.default_rng(0).random(width)
