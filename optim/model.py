"""A solver-neutral, vectorized optimization model.

The model is a set of named variable blocks (numpy shapes) and blocks of ranged linear
rows ``lo <= A x <= hi`` given as numpy / scipy.sparse matrices, a linear objective
with a sense, and optional concave log-utility terms

    sum_i b_i * log(g_i . x + h_i),   b_i >= 0, added to a maximized objective,

and optional hyperbolic (rotated second-order cone) constraints

    (U x + u0)_i * (V x + v0)_i >= k_i,   U x + u0 >= 0,   V x + v0 >= 0,   k >= 0.

:meth:`Model.canonical` assembles everything into one :class:`CanonicalModel` (CSC
matrix, ranged rows, column bounds, integrality vector), which is what backends read.
Rows and columns can carry **keys**: one per leading index of a variable block (a row of
``x[c, :]``) and one per row of a row block, unique within the block (positions where
none are given). A column is then known as (block, key, trailing index) and a row as
(block, key), across models: :mod:`optim.delta` matches two models by them.
Nothing here creates a Python object per scalar.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .canonical import CanonicalModel, HyperbolicCones, LogTerms, Sense, VarBlock, VarType
from .errors import ModelError
from .sparse import CsrArrays, csc_from_triplets, expand_pointers, is_scipy_sparse
from .sparse import scipy_sparse as sp
from .tally import add_build

if TYPE_CHECKING:
    MatrixLike = np.ndarray | sp.spmatrix | sp.sparray | CsrArrays | float | int


def _block_triplets(mat: MatrixLike, nrows: int, block: VarBlock, where: str) -> Triplets:
    """(row, column-in-block, value) of one term of a row block, a (nrows x block.size) matrix.

    Compressed and COO matrices are read without building another scipy matrix (the
    constructors' checks dominate the build time of small models)."""
    if isinstance(mat, CsrArrays):
        shape = mat.shape
        row, col, val = mat.rows(), mat.indices, mat.data
    elif is_scipy_sparse(mat):
        shape = mat.shape
        if mat.format == "csr":
            row, col, val = expand_pointers(mat.indptr), mat.indices, mat.data
        elif mat.format == "csc":
            row, col, val = mat.indices, expand_pointers(mat.indptr), mat.data
        else:
            coo = mat.tocoo()
            row, col, val = coo.row, coo.col, coo.data
    else:
        if np.isscalar(mat):
            if nrows != 1:
                raise ModelError(f"{where}: a scalar coefficient needs a single row, got {nrows}")
            mat = np.full((1, block.size), float(mat))
        arr = np.asarray(mat, dtype=float)
        if arr.ndim == 1:
            arr = arr.reshape(1, -1)
        shape = arr.shape
        row, col = np.nonzero(arr)
        val = arr[row, col]
    if shape != (nrows, block.size):
        raise ModelError(
            f"{where}: coefficients for block {block.name!r} have shape {shape}, "
            f"expected ({nrows}, {block.size})"
        )
    return row, col, val


def _broadcast(value, shape: tuple[int, ...], what: str) -> np.ndarray:
    """A fresh, flat float array of ``value`` broadcast to ``shape``."""
    if isinstance(value, (int, float)):
        return np.full(math.prod(shape), float(value))
    if isinstance(value, np.ndarray) and value.shape == shape:  # nothing to broadcast
        return value.astype(float).reshape(-1)
    try:
        return np.broadcast_to(np.asarray(value, dtype=float), shape).reshape(-1).copy()
    except ValueError as exc:
        raise ModelError(f"{what}: cannot broadcast to shape {shape}") from exc


def _check_sides(lo: np.ndarray, hi: np.ndarray, what: str, side: str) -> None:
    """``lo <= hi`` everywhere, neither NaN (one pass when all is well)."""
    if not (lo <= hi).all():
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ModelError(f"{what}: NaN {side}")
        raise ModelError(f"{what}: lower {side} above upper {side}")


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


Triplets = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _ConeBlock:
    u: Triplets
    u_offset: np.ndarray
    v: Triplets
    v_offset: np.ndarray
    k: np.ndarray


def _csr(parts: list[Triplets], shape: tuple[int, int]) -> sp.csr_matrix:
    """One CSR matrix from (row, column, value) triplets (duplicates summed)."""
    rows, cols, vals = (np.concatenate(p) for p in zip(*parts))
    mat = sp.csr_matrix((vals, (rows, cols)), shape=shape)
    mat.eliminate_zeros()
    return mat


@dataclass
class Model:
    """A vectorized LP / MILP / log-utility / SOC model; see the module docstring."""

    name: str = "model"
    _blocks: dict[str, VarBlock] = field(default_factory=dict, init=False)
    _lbs: list[np.ndarray] = field(default_factory=list, init=False)
    _ubs: list[np.ndarray] = field(default_factory=list, init=False)
    _rows: dict[str, _RowBlock] = field(default_factory=dict, init=False)
    _col_keys: dict[str, np.ndarray] = field(default_factory=dict, init=False)
    _row_keys: dict[str, np.ndarray] = field(default_factory=dict, init=False)
    _num_vars: int = field(default=0, init=False)
    _num_rows: int = field(default=0, init=False)
    _obj: dict[str, np.ndarray] = field(default_factory=dict, init=False)
    _sense: Sense = field(default="max", init=False)
    _offset: float = field(default=0.0, init=False)
    _log: list[tuple[np.ndarray, Triplets, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list,
                                                                                          init=False)
    _cones: dict[str, _ConeBlock] = field(default_factory=dict, init=False)
    _num_cones: int = field(default=0, init=False)
    _t0: float = field(default_factory=time.perf_counter, init=False)
    _tallied: float = field(default=0.0, init=False)  # build seconds already in open tallies (optim.tally)
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
        keys: np.ndarray | None = None,
    ) -> VarBlock:
        """Add a block of variables with bounds ``lb <= x <= ub`` (broadcast to shape);
        ``keys``: one unique key per leading index (see the module docstring)."""
        if name in self._blocks:
            raise ModelError(f"variable block {name!r} already exists")
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ModelError(f"variable block {name!r}: negative shape {shape}")
        vtype = VarType(vtype)
        block = VarBlock(name, self._num_vars, shape, vtype)
        lo = _broadcast(lb, shape, f"lower bound of {name!r}")
        hi = _broadcast(ub, shape, f"upper bound of {name!r}")
        if vtype is VarType.BINARY:
            lo = np.maximum(lo, 0.0)
            hi = np.minimum(hi, 1.0)
        _check_sides(lo, hi, f"variable block {name!r}", "bound")
        if keys is not None:
            self._col_keys[name] = _unique_keys(keys, shape[0] if shape else 1, f"variable block {name!r}")
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
        keys: np.ndarray | None = None,
    ) -> slice:
        """Add rows ``lo <= sum_b terms[b] @ x_b <= hi``; returns their row slice.

        Each ``terms[b]`` is a dense or sparse ``(k, b.size)`` matrix (a 1-D array is one
        row). ``lo`` and ``hi`` broadcast to ``(k,)``; ``keys``: one unique key per row.
        """
        if name in self._rows:
            raise ModelError(f"row block {name!r} already exists")
        if not terms:
            raise ModelError(f"row block {name!r} has no terms")
        nrows = _infer_rows(next(iter(terms.values())))
        rows, cols, vals = self._triplets(terms, nrows, f"row block {name!r}")
        lo_arr = _broadcast(lo, (nrows,), f"row block {name!r} lower side")
        hi_arr = _broadcast(hi, (nrows,), f"row block {name!r} upper side")
        _check_sides(lo_arr, hi_arr, f"row block {name!r}", "side")
        if keys is not None:
            self._row_keys[name] = _unique_keys(keys, nrows, f"row block {name!r}")
        self._rows[name] = _RowBlock(
            name, self._num_rows, nrows, rows + self._num_rows, cols, vals, lo_arr, hi_arr
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
        """Set the linear objective ``sum_b terms[b] . x_b + constant`` and its sense. A block's
        coefficients broadcast to its shape, or are a flat vector over ``vec(x_b)`` (row-major,
        as the columns of :meth:`add_rows` terms)."""
        if sense not in ("min", "max"):
            raise ModelError(f"objective sense must be 'min' or 'max', not {sense!r}")
        obj = {}
        for block, coef in terms.items():
            self._check_block(block, "objective")
            if isinstance(coef, np.ndarray) and coef.ndim == 1 and len(block.shape) > 1 and coef.size == block.size:
                coef = coef.reshape(block.shape)
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
        *,
        argument_range: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Add ``sum_i weights_i * log(sum_b terms[b][i] @ x_b + offset_i)`` to the objective.

        Requires a maximized objective and ``weights >= 0`` (the sum is then concave).
        ``argument_range = (lo, hi)``: where the formulation expects each argument at an
        optimum (besides the offset itself); backends without a log cone seed their tangent
        cuts there and at the offset.
        """
        w = np.atleast_1d(np.asarray(weights, dtype=float))
        k = w.shape[0]
        if (w < 0).any() or not np.isfinite(w).all():
            raise ModelError("log-utility weights must be finite and >= 0 (concave utility)")
        triplets = self._triplets(terms, k, "log utility")
        h = _broadcast(offset, (k,), "log-utility offset").astype(float)
        lo, hi = argument_range if argument_range is not None else (np.nan, np.nan)
        lo = _broadcast(lo, (k,), "log-utility argument range")
        hi = _broadcast(hi, (k,), "log-utility argument range")
        if ((lo <= 0) | (hi < lo)).any():
            raise ModelError("log-utility argument range must satisfy 0 < lo <= hi")
        self._log.append((w, triplets, h, lo, hi))
        self._canonical = None

    def add_hyperbolic(
        self,
        name: str,
        u: Mapping[VarBlock, MatrixLike],
        u_offset: float | np.ndarray,
        v: Mapping[VarBlock, MatrixLike],
        v_offset: float | np.ndarray,
        k: float | np.ndarray,
    ) -> slice:
        """Add cones ``(U x + u_offset)_i * (V x + v_offset)_i >= k_i`` with both factors >= 0.

        ``U x = sum_b u[b] @ x_b`` and ``V x = sum_b v[b] @ x_b`` take matrices as in
        :meth:`add_rows`, one row per cone (a side without terms is its offset alone);
        ``u_offset``, ``v_offset`` and ``k >= 0`` broadcast to the number of cones. The
        set is a rotated second-order cone, so convex. Returns the cones' index slice in
        ``CanonicalModel.hyperbolic``; further calls append cones.
        """
        where = f"hyperbolic block {name!r}"
        if name in self._cones:
            raise ModelError(f"{where} already exists")
        if not u and not v:
            raise ModelError(f"{where} has no terms")
        count = _infer_rows(next(iter(u.values())) if u else next(iter(v.values())))
        u_rows, u_cols, u_vals = self._triplets(u, count, f"{where}, side u")
        v_rows, v_cols, v_vals = self._triplets(v, count, f"{where}, side v")
        u0 = _broadcast(u_offset, (count,), f"{where}, u_offset").copy()
        v0 = _broadcast(v_offset, (count,), f"{where}, v_offset").copy()
        kk = _broadcast(k, (count,), f"{where}, k").copy()
        if not (np.isfinite(u0).all() and np.isfinite(v0).all() and np.isfinite(kk).all()):
            raise ModelError(f"{where}: non-finite offset or k")
        if (kk < 0).any():
            raise ModelError(f"{where}: k must be >= 0 (k_i <= u_i v_i with u_i, v_i >= 0)")
        start = self._num_cones
        self._cones[name] = _ConeBlock(
            (u_rows + start, u_cols, u_vals), u0, (v_rows + start, v_cols, v_vals), v0, kk
        )
        self._num_cones += count
        self._canonical = None
        return slice(start, self._num_cones)

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
        A = csc_from_triplets(rows, cols, vals, (self._num_rows, n))
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
            for wt, (rr, cc, vv), *_ in self._log:
                r.append(rr + base)
                cidx.append(cc)
                v.append(vv)
                base += wt.shape[0]
            G = sp.csr_matrix(
                (np.concatenate(v), (np.concatenate(r), np.concatenate(cidx))), shape=(base, n)
            )
            log_terms = LogTerms(w, G, h, np.concatenate([t[3] for t in self._log]),
                                 np.concatenate([t[4] for t in self._log]))
        hyperbolic = None
        if self._num_cones:
            cones = self._cones.values()
            shape = (self._num_cones, n)
            hyperbolic = HyperbolicCones(
                U=_csr([c.u for c in cones], shape),
                u_offset=np.concatenate([c.u_offset for c in cones]),
                V=_csr([c.v for c in cones], shape),
                v_offset=np.concatenate([c.v_offset for c in cones]),
                k=np.concatenate([c.k for c in cones]),
            )
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
            hyperbolic=hyperbolic,
            col_keys=dict(self._col_keys),
            row_keys=dict(self._row_keys),
        )
        add_build(self._canonical.build_seconds - self._tallied)
        self._tallied = self._canonical.build_seconds
        return self._canonical

    def _triplets(self, terms: Mapping[VarBlock, MatrixLike], nrows: int, where: str) -> Triplets:
        """(row, column, value) triplets of ``sum_b terms[b] @ x_b``, ``nrows`` rows."""
        parts = []
        for block, mat in terms.items():
            self._check_block(block, where)
            row, col, val = _block_triplets(mat, nrows, block, where)
            parts.append((row, col + block.start, val))
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        rows, cols, vals = parts[0] if len(parts) == 1 else (np.concatenate(p) for p in zip(*parts))
        rows, cols = rows.astype(np.int64, copy=False), cols.astype(np.int64, copy=False)
        vals = vals.astype(float)  # a copy: the model must not alias the caller's matrix
        if not np.isfinite(vals).all():
            raise ModelError(f"{where}: non-finite coefficient")
        return rows, cols, vals

    def _check_block(self, block: VarBlock, where: str) -> None:
        known = self._blocks.get(block.name)
        if known is not block and known != block:
            raise ModelError(f"{where}: variable block {block.name!r} is not part of this model")


def _unique_keys(keys, count: int, where: str) -> np.ndarray:
    """``keys`` as a 1-D array of ``count`` distinct values (a copy)."""
    arr = np.array(keys).reshape(-1)
    if arr.shape[0] != count:
        raise ModelError(f"{where}: {arr.shape[0]} keys for {count} entries")
    numbers = arr.dtype.kind in "iuf"
    if numbers and (arr[1:] > arr[:-1]).all():  # the usual case: no sort needed
        return arr
    if (np.unique(arr).shape[0] if numbers else len(set(arr.tolist()))) != count:
        raise ModelError(f"{where}: keys are not unique")
    return arr


def _infer_rows(mat: MatrixLike) -> int:
    if isinstance(mat, (np.ndarray, CsrArrays)) or is_scipy_sparse(mat):
        shape = mat.shape
    elif np.isscalar(mat):
        return 1
    else:
        shape = np.shape(mat)
    return 1 if len(shape) == 1 else int(shape[0])
