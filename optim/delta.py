"""The difference between two LPs whose rows and columns carry keys.

A column of model ``old`` and one of ``new`` are the same when they have the same
(block name, key of the leading index, trailing index); rows likewise by (row block, key)
(see :mod:`optim.model`). :func:`model_delta` computes, all vectorized, what turns ``old``
into ``new``: columns and rows to drop and to add, and for those that persist the changed
costs, column bounds, row sides and matrix coefficients. A live solver model applies it
in place of a rebuild (:mod:`optim.session`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .canonical import CanonicalModel
from .sparse import scipy_sparse as sp


@dataclass(frozen=True)
class ModelDelta:
    """What turns ``old`` into ``new``; indices are each model's own column / row numbers.

    ``old_cols[k]`` and ``new_cols[k]`` are the k-th persisting column (likewise rows);
    ``drop_*`` are old indices without a match, ``add_*`` new ones, all ascending.
    ``cost``, ``bounds`` and ``sides`` list positions k whose cost, column bounds or row
    sides differ; ``coef_rows``, ``coef_cols`` (positions k into the persisting rows and
    columns) and ``coef_values`` the coefficients of ``new`` that differ from ``old``'s
    (a value 0 removes the entry).
    """

    old_cols: np.ndarray
    new_cols: np.ndarray
    old_rows: np.ndarray
    new_rows: np.ndarray
    drop_cols: np.ndarray
    drop_rows: np.ndarray
    add_cols: np.ndarray
    add_rows: np.ndarray
    cost: np.ndarray
    bounds: np.ndarray
    sides: np.ndarray
    coef_rows: np.ndarray
    coef_cols: np.ndarray
    coef_values: np.ndarray
    sense_changed: bool
    offset_changed: bool

    @property
    def num_changes(self) -> int:
        """Columns and rows dropped or added plus coefficients changed."""
        return int(self.drop_cols.size + self.drop_rows.size + self.add_cols.size + self.add_rows.size
                   + self.coef_values.size)

    @property
    def is_empty(self) -> bool:
        return (self.num_changes == 0 and not (self.cost.size or self.bounds.size or self.sides.size)
                and not (self.sense_changed or self.offset_changed))


def _match_keys(old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (in ``old``, in ``new``) of the keys both hold (keys of different kinds never match)."""
    if old.dtype.kind != new.dtype.kind and not (old.dtype.kind in "iu" and new.dtype.kind in "iu"):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    _, in_old, in_new = np.intersect1d(old, new, assume_unique=True, return_indices=True)
    return in_old.astype(np.int64), in_new.astype(np.int64)


def _match_columns(old: CanonicalModel, new: CanonicalModel) -> tuple[np.ndarray, np.ndarray]:
    """Persisting columns as (old indices, new indices): per block shared by name, the
    cells of the matched leading keys (blocks whose trailing shape changed match nothing)."""
    olds, news = [], []
    for name, nb in new.blocks.items():
        ob = old.blocks.get(name)
        if ob is None or ob.shape[1:] != nb.shape[1:] or ob.vtype != nb.vtype:
            continue
        io, in_ = _match_keys(old.block_keys(name), new.block_keys(name))
        trailing = np.arange(int(np.prod(nb.shape[1:], dtype=np.int64)))
        olds.append((ob.start + io[:, None] * trailing.size + trailing).reshape(-1))
        news.append((nb.start + in_[:, None] * trailing.size + trailing).reshape(-1))
    return _joined(olds), _joined(news)


def _match_rows(old: CanonicalModel, new: CanonicalModel) -> tuple[np.ndarray, np.ndarray]:
    """Persisting rows as (old indices, new indices), per row block shared by name."""
    olds, news = [], []
    for name, rows in new.row_blocks.items():
        orows = old.row_blocks.get(name)
        if orows is None:
            continue
        io, in_ = _match_keys(old.row_block_keys(name), new.row_block_keys(name))
        olds.append(orows.start + io)
        news.append(rows.start + in_)
    return _joined(olds), _joined(news)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _unmatched(count: int, matched: np.ndarray) -> np.ndarray:
    mask = np.ones(count, dtype=bool)
    mask[matched] = False
    return np.flatnonzero(mask)


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise a != b, with equal infinities equal."""
    return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def model_delta(old: CanonicalModel, new: CanonicalModel) -> ModelDelta:
    """The delta from ``old`` to ``new`` (see :class:`ModelDelta`); both pure LPs or not, the
    caller decides (integrality, log terms and cones are not compared)."""
    old_cols, new_cols = _match_columns(old, new)
    old_rows, new_rows = _match_rows(old, new)
    # the persisting block of each matrix, both indexed by persisting position (k_row, k_col)
    old_sub = _submatrix(old.A.scipy(), old_rows, old_cols)
    new_sub = _submatrix(new.A.scipy(), new_rows, new_cols)
    diff = (new_sub - old_sub).tocoo()
    changed = diff.data != 0
    rows, cols = diff.row[changed].astype(np.int64), diff.col[changed].astype(np.int64)
    values = np.asarray(new_sub.tocsr()[rows, cols]).reshape(-1) if rows.size else np.zeros(0)
    return ModelDelta(
        old_cols=old_cols, new_cols=new_cols, old_rows=old_rows, new_rows=new_rows,
        drop_cols=_unmatched(old.num_vars, old_cols), drop_rows=_unmatched(old.num_rows, old_rows),
        add_cols=_unmatched(new.num_vars, new_cols), add_rows=_unmatched(new.num_rows, new_rows),
        cost=np.flatnonzero(_differs(old.c[old_cols], new.c[new_cols])),
        bounds=np.flatnonzero(_differs(old.col_lo[old_cols], new.col_lo[new_cols])
                              | _differs(old.col_hi[old_cols], new.col_hi[new_cols])),
        sides=np.flatnonzero(_differs(old.row_lo[old_rows], new.row_lo[new_rows])
                             | _differs(old.row_hi[old_rows], new.row_hi[new_rows])),
        coef_rows=rows, coef_cols=cols, coef_values=values,
        sense_changed=old.sense != new.sense, offset_changed=old.offset != new.offset,
    )


def _submatrix(A: sp.csc_matrix, rows: np.ndarray, cols: np.ndarray) -> sp.csr_matrix:
    """``A[rows][:, cols]`` as CSR (rows and columns renumbered by position)."""
    return sp.csr_matrix(A[:, cols].tocsr()[rows])
