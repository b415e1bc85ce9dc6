"""The assembled model every backend reads: variable blocks, one CSC matrix of ranged rows,
column bounds, integrality, log-utility terms and hyperbolic cones (:class:`CanonicalModel`),
built by :meth:`optim.model.Model.canonical`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from typing import Literal

import numpy as np

from .capabilities import Capability
from .sparse import CscArrays
from .sparse import scipy_sparse as sp

Sense = Literal["min", "max"]


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
        return math.prod(self.shape)

    @property
    def stop(self) -> int:
        return self.start + self.size

    @property
    def columns(self) -> slice:
        return slice(self.start, self.stop)


@dataclass(frozen=True)
class LogTerms:
    """Concave terms ``sum_i weights_i * log(G[i] @ x + offset_i)``; ``lo``/``hi``: a range
    the formulation knows each argument stays in (NaN: unknown), where tangent-cut bridges
    seed their cuts."""

    weights: np.ndarray
    G: sp.csr_matrix
    offset: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    def values(self, x: np.ndarray) -> np.ndarray:
        """Per-term ``weights_i * log(G_i x + h_i)`` (``-inf`` outside the domain)."""
        u = self.G @ x + self.offset
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.where(u > 0, np.log(np.where(u > 0, u, 1.0)), -np.inf)
        return np.where(self.weights == 0, 0.0, self.weights * logs)


@dataclass(frozen=True)
class HyperbolicCones:
    """Rotated second-order cones ``k_i <= u_i v_i``, ``u, v >= 0``, with ``k >= 0``,
    ``u = U @ x + u_offset`` and ``v = V @ x + v_offset``.

    Equivalently ``||(2 sqrt(k_i), u_i - v_i)|| <= u_i + v_i`` (a second-order cone).
    """

    U: sp.csr_matrix
    u_offset: np.ndarray
    V: sp.csr_matrix
    v_offset: np.ndarray
    k: np.ndarray

    @property
    def size(self) -> int:
        return self.k.shape[0]

    def residuals(self, x: np.ndarray) -> np.ndarray:
        """Per-cone ``max(||(2 sqrt(k_i), u_i - v_i)|| - (u_i + v_i), 0)``.

        Zero exactly on the feasible set, in the units of ``u`` and ``v``; it is at
        least ``-u_i`` and ``-v_i``, so a negative side is counted too.
        """
        u = self.U @ x + self.u_offset
        v = self.V @ x + self.v_offset
        return np.maximum(np.hypot(2.0 * np.sqrt(self.k), u - v) - (u + v), 0.0)

    def with_columns(self, n: int) -> HyperbolicCones:
        """The same cones over ``n >= U.shape[1]`` columns (new columns unused)."""
        U = sp.csr_matrix((self.U.data, self.U.indices, self.U.indptr), shape=(self.size, n))
        V = sp.csr_matrix((self.V.data, self.V.indices, self.V.indptr), shape=(self.size, n))
        return HyperbolicCones(U, self.u_offset, V, self.v_offset, self.k)


@dataclass(frozen=True)
class AssignmentLayout:
    """A builder's statement that its model is assignment-shaped (:mod:`optim.assignment_lp`) and
    laid out as :class:`~optim.Model` lays such a model out, so that the shape need not be read back
    from the sparsity: columns ``0..mK-1`` are the cells (b, k) block after block, cell (b, k) with
    ``g_bk`` in capacity row k, 1 in budget row ``K + b`` and, in the level form, its level entry in
    row ``K + m + b`` (the level column, last, has the level rows' other entries). ``level`` (m, K):
    the cells' level coefficients in the internal sign (None: the sum form, priced by ``c``). It
    holds for the CSC arrays ``A`` it was stated for, and only while the model has them."""

    A: CscArrays
    g: np.ndarray
    level: np.ndarray | None = None


@dataclass(frozen=True)
class CanonicalModel:
    """The assembled model: what every backend translates.

    ``sense``: "min" or "max"; objective = ``c @ x + offset`` (+ log terms).
    ``integrality[j]`` is True for integer (and binary) columns; ``hyperbolic`` holds
    the rotated second-order cones, if any.
    """

    name: str
    sense: Sense
    c: np.ndarray
    offset: float
    A: CscArrays
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integrality: np.ndarray
    log_terms: LogTerms | None
    blocks: Mapping[str, VarBlock]
    row_blocks: Mapping[str, slice]
    build_seconds: float = 0.0
    hyperbolic: HyperbolicCones | None = None
    #: the builder's statement of an assignment-shaped layout (:class:`AssignmentLayout`), if any
    layout: AssignmentLayout | None = None
    #: keys of a block's leading index / of a row block's rows (blocks not named: positions)
    col_keys: Mapping[str, np.ndarray] = field(default_factory=dict)
    row_keys: Mapping[str, np.ndarray] = field(default_factory=dict)

    def canonical(self) -> CanonicalModel:
        """Itself: a canonical model is its own canonical form (so it goes where a
        :class:`~optim.Model` goes)."""
        return self

    def block_keys(self, name: str) -> np.ndarray:
        """Keys of variable block ``name``'s leading index (its positions if none were given)."""
        keys = self.col_keys.get(name)
        if keys is not None:
            return keys
        shape = self.blocks[name].shape
        return np.arange(shape[0] if shape else 1)

    def row_block_keys(self, name: str) -> np.ndarray:
        """Keys of row block ``name``'s rows (their positions if none were given)."""
        keys = self.row_keys.get(name)
        if keys is not None:
            return keys
        rows = self.row_blocks[name]
        return np.arange(rows.stop - rows.start)

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
    def num_cones(self) -> int:
        return 0 if self.hyperbolic is None else self.hyperbolic.size

    @cached_property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    def required_capabilities(self) -> frozenset[Capability]:
        return self._needs

    @cached_property
    def _needs(self) -> frozenset[Capability]:
        need = {Capability.LP}
        if self.is_mip:
            need.add(Capability.MILP)
        if self.log_terms is not None:
            need.add(Capability.LOG)
        if self.hyperbolic is not None:
            need.add(Capability.SOC)
        return frozenset(need)

    def objective_value(self, x: np.ndarray) -> float:
        """Objective of the model (linear part plus log terms) at ``x``."""
        value = float(self.c @ x) + self.offset
        if self.log_terms is not None:
            value += float(self.log_terms.values(x).sum())
        return value

    def max_violation(self, x: np.ndarray) -> float:
        """Largest violation of a row, bound, integrality or cone at ``x`` (0 = feasible).

        A cone counts with :meth:`HyperbolicCones.residuals`.
        """
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
        if self.hyperbolic is not None:
            viol.append(self.hyperbolic.residuals(x))
        return float(max((v.max(initial=0.0) for v in viol), default=0.0))

    def relaxed(self) -> CanonicalModel:
        """The continuous relaxation: the same model with no integer columns."""
        return replace(self, integrality=np.zeros_like(self.integrality))

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

        ``rows`` has ``num_vars + new_cols`` columns; the cones are kept (the new columns
        do not enter them). Used by reformulation bridges.
        """
        n = self.num_vars + new_cols
        indptr = np.concatenate([self.A.indptr, np.full(new_cols, self.A.indptr[-1])])
        A = CscArrays(self.A.data, self.A.indices, indptr, (self.num_rows, n))
        row_lo, row_hi = self.row_lo, self.row_hi
        if rows is not None:
            A = CscArrays.of(sp.vstack([A.scipy(), rows], format="csc"))
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
            hyperbolic=None if self.hyperbolic is None else self.hyperbolic.with_columns(n),
            col_keys=self.col_keys,
            row_keys=self.row_keys,
        )
