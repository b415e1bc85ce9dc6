"""A solver-neutral, vectorized optimization model.

The model is a set of named variable blocks (numpy shapes) and blocks of ranged linear
rows ``lo <= A x <= hi`` given as numpy / scipy.sparse matrices, a linear objective
with a sense, and optional concave log-utility terms

    sum_i b_i * log(g_i . x + h_i),   b_i >= 0, added to a maximized objective.

:meth:`Model.canonical` assembles everything into one :class:`CanonicalModel` (CSC
matrix, ranged rows, column bounds, integrality vector), which is what backends read.
Nothing here creates a Python object per scalar.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, Union

import numpy as np
import scipy.sparse as sp

from .capabilities import Capability
from .errors import ModelError

Sense = Literal["min", "max"]
MatrixLike = Union[np.ndarray, sp.spmatrix, sp.sparray, float, int]


class VarType(str, Enum):
    CONTINUOUS = "continuous"
    INTEGER = "integer"
    BINARY = "binary"


@dataclass(frozen=True)
class VarBlock:
    """A named block of variables occupying columns ``start .. start+size-1``."""

    name: str
    start: int
    shape: tuple[int, ...]
    vtype: VarType

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def stop(self) -> int:
        return self.start + self.size

    @property
    def columns(self) -> slice:
        return slice(self.start, self.stop)


@dataclass(frozen=True)
class LogTerms:
    """Concave terms ``sum_i weights_i * log(G[i] @ x + offset_i)``."""

    weights: np.ndarray
    G: sp.csr_matrix
    offset: np.ndarray

    def values(self, x: np.ndarray) -> np.ndarray:
        """Per-term ``weights_i * log(G_i x + h_i)`` (``-inf`` outside the domain)."""
        u = self.G @ x + self.offset
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(u > 0, np.log(np.where(u > 0, u, 1.0)), -np.inf)
        return np.where(self.weights == 0, 0.0, self.weights * logs)


@dataclass(frozen=True)
class CanonicalModel:
    """The assembled model: what every backend translates.

    ``sense``: "min" or "max"; objective = ``c @ x + offset`` (+ log terms).
    ``integrality[j]`` is True for integer (and binary) columns.
    """

    name: str
    sense: Sense
    c: np.ndarray
    offset: float
    A: sp.csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integrality: np.ndarray
    log_terms: LogTerms | None
    blocks: Mapping[str, VarBlock]
    row_blocks: Mapping[str, slice]
    build_seconds: float = 0.0

    @property
    def num_vars(self) -> int:
        return self.c.shape[0]

    @property
    def num_rows(self) -> int:
        return self.row_lo.shape[0]

    @property
    def num_nonzeros(self) -> int:
        return int(self.A.nnz)

    @property
    def num_integers(self) -> int:
        return int(self.integrality.sum())

    @property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    def required_capabilities(self) -> frozenset[Capability]:
        need = {Capability.LP}
        if self.is_mip:
            need.add(Capability.MILP)
        if self.log_terms is not None:
            need.add(Capability.LOG)
        return frozenset(need)

    def objective_value(self, x: np.ndarray) -> float:
        """Objective of the model (linear part plus log terms) at ``x``."""
        value = float(self.c @ x) + self.offset
        if self.log_terms is not None:
            value += float(self.log_terms.values(x).sum())
        return value

    def max_violation(self, x: np.ndarray) -> float:
        """Largest violation of a row, bound or integrality at ``x`` (0 = feasible)."""
        ax = self.A @ x
        viol = [
            np.maximum(self.row_lo - ax, 0.0),
            np.maximum(ax - self.row_hi, 0.0),
            np.maximum(self.col_lo - x, 0.0),
            np.maximum(x - self.col_hi, 0.0),
        ]
        if self.is_mip:
            xi = x[self.integrality]
            viol.append(np.abs(xi - np.round(xi)))
        return float(max((v.max(initial=0.0) for v in viol), default=0.0))

    def with_extra(
        self,
        *,
        new_cols: int = 0,
        new_c: np.ndarray | None = None,
        new_col_lo: np.ndarray | None = None,
        new_col_hi: np.ndarray | None = None,
        rows: sp.spmatrix | None = None,
        lo: np.ndarray | None = None,
        hi: np.ndarray | None = None,
        drop_log_terms: bool = False,
    ) -> CanonicalModel:
        """A copy with ``new_cols`` continuous columns appended and extra rows.

        ``rows`` has ``num_vars + new_cols`` columns. Used by reformulation bridges.
        """
        n = self.num_vars + new_cols
        indptr = np.concatenate([self.A.indptr, np.full(new_cols, self.A.indptr[-1])])
        A = sp.csc_matrix((self.A.data, self.A.indices, indptr), shape=(self.num_rows, n))
        row_lo, row_hi = self.row_lo, self.row_hi
        if rows is not None:
            A = sp.vstack([A, sp.csc_matrix(rows)], format="csc")
            row_lo = np.concatenate([row_lo, lo])
            row_hi = np.concatenate([row_hi, hi])
        zeros = np.zeros(new_cols)
        return CanonicalModel(
            name=self.name,
            sense=self.sense,
            c=np.concatenate([self.c, zeros if new_c is None else new_c]),
            offset=self.offset,
            A=A,
            row_lo=row_lo,
            row_hi=row_hi,
            col_lo=np.concatenate([self.col_lo, zeros if new_col_lo is None else new_col_lo]),
            col_hi=np.concatenate([self.col_hi, zeros if new_col_hi is None else new_col_hi]),
            integrality=np.concatenate([self.integrality, np.zeros(new_cols, dtype=bool)]),
            log_terms=None if drop_log_terms else self.log_terms,
            blocks=self.blocks,
            row_blocks=self.row_blocks,
            build_seconds=self.build_seconds,
        )


def _as_block_matrix(mat: MatrixLike, nrows: int, block: VarBlock, where: str) -> sp.coo_matrix:
    """Coerce one term of a row block to a sparse (nrows x block.size) matrix."""
    if np.isscalar(mat):
        if nrows != 1:
            raise ModelError(f"{where}: a scalar coefficient needs a single row, got {nrows}")
        mat = np.full((1, block.size), float(mat))
    if sp.issparse(mat):
        coo = sp.coo_matrix(mat)
    else:
        arr = np.asarray(mat, dtype=float)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        coo = sp.coo_matrix(arr)
    if coo.shape != (nrows, block.size):
        raise ModelError(
            f"{where}: coefficients for block {block.name!r} have shape {coo.shape}, "
            f"expected ({nrows}, {block.size})"
        )
    return coo


def _broadcast(value, shape: tuple[int, ...], what: str) -> np.ndarray:
    try:
        return np.broadcast_to(np.asarray(value, dtype=float), shape).reshape(-1)
    except ValueError as exc:
        raise ModelError(f"{what}: cannot broadcast to shape {shape}") from exc


@dataclass
class _RowBlock:
    name: str
    start: int
    count: int
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass
class Model:
    """A vectorized LP / MILP / log-utility model; see the module docstring."""

    name: str = "model"
    _blocks: dict[str, VarBlock] = field(default_factory=dict, init=False)
    _lbs: list[np.ndarray] = field(default_factory=list, init=False)
    _ubs: list[np.ndarray] = field(default_factory=list, init=False)
    _rows: dict[str, _RowBlock] = field(default_factory=dict, init=False)
    _num_vars: int = field(default=0, init=False)
    _num_rows: int = field(default=0, init=False)
    _obj: dict[str, np.ndarray] = field(default_factory=dict, init=False)
    _sense: Sense = field(default="max", init=False)
    _offset: float = field(default=0.0, init=False)
    _log: list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]] = field(default_factory=list, init=False)
    _t0: float = field(default_factory=time.perf_counter, init=False)
    _canonical: CanonicalModel | None = field(default=None, init=False, repr=False)

    @property
    def num_vars(self) -> int:
        return self._num_vars

    @property
    def num_rows(self) -> int:
        return self._num_rows

    @property
    def blocks(self) -> Mapping[str, VarBlock]:
        return self._blocks

    def add_variables(
        self,
        name: str,
        shape: int | tuple[int, ...] = (),
        *,
        lb: float | np.ndarray = 0.0,
        ub: float | np.ndarray = np.inf,
        vtype: VarType | str = VarType.CONTINUOUS,
    ) -> VarBlock:
        """Add a block of variables with bounds ``lb <= x <= ub`` (broadcast to shape)."""
        if name in self._blocks:
            raise ModelError(f"variable block {name!r} already exists")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ModelError(f"variable block {name!r}: negative shape {shape}")
        vtype = VarType(vtype)
        block = VarBlock(name, self._num_vars, shape, vtype)
        lo = _broadcast(lb, shape, f"lower bound of {name!r}").copy()
        hi = _broadcast(ub, shape, f"upper bound of {name!r}").copy()
        if vtype is VarType.BINARY:
            lo = np.maximum(lo, 0.0)
            hi = np.minimum(hi, 1.0)
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ModelError(f"variable block {name!r}: NaN bound")
        if (lo > hi).any():
            raise ModelError(f"variable block {name!r}: lower bound above upper bound")
        self._blocks[name] = block
        self._lbs.append(lo)
        self._ubs.append(hi)
        self._num_vars += block.size
        self._canonical = None
        return block

    def add_rows(
        self,
        name: str,
        terms: Mapping[VarBlock, MatrixLike],
        lo: float | np.ndarray = -np.inf,
        hi: float | np.ndarray = np.inf,
    ) -> slice:
        """Add rows ``lo <= sum_b terms[b] @ x_b <= hi``; returns their row slice.

        Each ``terms[b]`` is a dense or sparse ``(k, b.size)`` matrix (a 1-D array is one
        row). ``lo`` and ``hi`` broadcast to ``(k,)``.
        """
        if name in self._rows:
            raise ModelError(f"row block {name!r} already exists")
        if not terms:
            raise ModelError(f"row block {name!r} has no terms")
        nrows = None
        parts = []
        for block, mat in terms.items():
            self._check_block(block, f"row block {name!r}")
            if nrows is None:
                nrows = _infer_rows(mat)
            coo = _as_block_matrix(mat, nrows, block, f"row block {name!r}")
            parts.append((coo.row, coo.col + block.start, coo.data))
        lo_arr = _broadcast(lo, (nrows,), f"row block {name!r} lower side").astype(float)
        hi_arr = _broadcast(hi, (nrows,), f"row block {name!r} upper side").astype(float)
        if np.isnan(lo_arr).any() or np.isnan(hi_arr).any():
            raise ModelError(f"row block {name!r}: NaN row bound")
        if (lo_arr > hi_arr).any():
            raise ModelError(f"row block {name!r}: lower side above upper side")
        rows = np.concatenate([p[0] for p in parts]).astype(np.int64)
        vals = np.concatenate([p[2] for p in parts]).astype(float)
        if not np.isfinite(vals).all():
            raise ModelError(f"row block {name!r}: non-finite coefficient")
        self._rows[name] = _RowBlock(
            name,
            self._num_rows,
            nrows,
            rows + self._num_rows,
            np.concatenate([p[1] for p in parts]).astype(np.int64),
            vals,
            lo_arr,
            hi_arr,
        )
        start = self._num_rows
        self._num_rows += nrows
        self._canonical = None
        return slice(start, self._num_rows)

    def set_objective(
        self,
        terms: Mapping[VarBlock, float | np.ndarray],
        sense: Sense = "max",
        constant: float = 0.0,
    ) -> None:
        """Set the linear objective ``sum_b terms[b] . x_b + constant`` and its sense."""
        if sense not in ("min", "max"):
            raise ModelError(f"objective sense must be 'min' or 'max', not {sense!r}")
        obj = {}
        for block, coef in terms.items():
            self._check_block(block, "objective")
            vec = _broadcast(coef, block.shape, f"objective coefficients of {block.name!r}")
            if not np.isfinite(vec).all():
                raise ModelError(f"objective coefficients of {block.name!r} are not finite")
            obj[block.name] = vec
        self._obj = obj
        self._sense = sense
        self._offset = float(constant)
        self._canonical = None

    def add_log_utility(
        self,
        weights: np.ndarray,
        terms: Mapping[VarBlock, MatrixLike],
        offset: float | np.ndarray = 0.0,
    ) -> None:
        """Add ``sum_i weights_i * log(sum_b terms[b][i] @ x_b + offset_i)`` to the objective.

        Requires a maximized objective and ``weights >= 0`` (the sum is then concave).
        """
        w = np.atleast_1d(np.asarray(weights, dtype=float))
        k = w.shape[0]
        if (w < 0).any() or not np.isfinite(w).all():
            raise ModelError("log-utility weights must be finite and >= 0 (concave utility)")
        cols, rows, vals = [], [], []
        for block, mat in terms.items():
            self._check_block(block, "log utility")
            coo = _as_block_matrix(mat, k, block, "log utility")
            rows.append(coo.row)
            cols.append(coo.col + block.start)
            vals.append(coo.data)
        h = _broadcast(offset, (k,), "log-utility offset").astype(float)
        triplets = (np.concatenate(rows), np.concatenate(cols), np.concatenate(vals))
        self._log.append((w, triplets, h))
        self._canonical = None

    def canonical(self) -> CanonicalModel:
        """Assemble (once, cached until the next change) the canonical model.

        Its ``build_seconds`` is the wall time from ``Model()`` to this assembly: the
        formulation's build time as reported in ``Result.timings.build``.
        """
        if self._canonical is not None:
            return self._canonical
        n = self._num_vars
        if self._rows:
            blocks = self._rows.values()
            rows = np.concatenate([b.rows for b in blocks])
            cols = np.concatenate([b.cols for b in blocks])
            vals = np.concatenate([b.vals for b in blocks])
            lo = np.concatenate([b.lo for b in blocks])
            hi = np.concatenate([b.hi for b in blocks])
        else:
            rows = cols = np.zeros(0, dtype=np.int64)
            vals = lo = hi = np.zeros(0)
        A = sp.csc_matrix((vals, (rows, cols)), shape=(self._num_rows, n))
        A.sum_duplicates()
        A.eliminate_zeros()
        c = np.zeros(n)
        for bname, vec in self._obj.items():
            c[self._blocks[bname].columns] = vec
        integrality = np.zeros(n, dtype=bool)
        for block in self._blocks.values():
            if block.vtype is not VarType.CONTINUOUS:
                integrality[block.columns] = True
        log_terms = None
        if self._log:
            if self._sense != "max":
                raise ModelError("log-utility terms need a maximized objective")
            w = np.concatenate([t[0] for t in self._log])
            h = np.concatenate([t[2] for t in self._log])
            r, cidx, v, base = [], [], [], 0
            for wt, (rr, cc, vv), _ in self._log:
                r.append(rr + base)
                cidx.append(cc)
                v.append(vv)
                base += wt.shape[0]
            G = sp.csr_matrix(
                (np.concatenate(v), (np.concatenate(r), np.concatenate(cidx))), shape=(base, n)
            )
            log_terms = LogTerms(w, G, h)
        self._canonical = CanonicalModel(
            name=self.name,
            sense=self._sense,
            c=c,
            offset=self._offset,
            A=A,
            row_lo=lo,
            row_hi=hi,
            col_lo=np.concatenate(self._lbs) if self._lbs else np.zeros(0),
            col_hi=np.concatenate(self._ubs) if self._ubs else np.zeros(0),
            integrality=integrality,
            log_terms=log_terms,
            blocks=dict(self._blocks),
            row_blocks={b.name: slice(b.start, b.start + b.count) for b in self._rows.values()},
            build_seconds=time.perf_counter() - self._t0,
        )
        return self._canonical

    def _check_block(self, block: VarBlock, where: str) -> None:
        if self._blocks.get(block.name) != block:
            raise ModelError(f"{where}: variable block {block.name!r} is not part of this model")


def _infer_rows(mat: MatrixLike) -> int:
    if np.isscalar(mat):
        return 1
    shape = mat.shape if sp.issparse(mat) else np.shape(mat)
    return 1 if len(shape) == 1 else int(shape[0])
