"""Assignment-shaped LPs, found from a model's sparsity: m blocks share K capacity rows, each
block owns one budget row and, in the level form, one level row tied to a single level column.

In the internal form (every row ``<=``, maximize)::

    sum form:    maximize  sum_bk c_bk x_bk
    level form:  maximize  z    s.t.  z <= sum_k a_bk x_bk               (level row of block b)
    both:        sum_k e_bk x_bk <= h_b   (budget row of b),   sum_b g_bk x_bk <= n_k   (capacity row k)
                 x_bk >= 0, and x_bk = 0 off the runnable cells

with ``e > 0``, ``g, a >= 0``. Gavel's total throughput (sum), max-min fairness and makespan
(level) are of this shape, and so is any user program that states the same rows
(:func:`assignment_structure` reads them from the canonical arrays, never from names, or takes
them from the layout its builder stated, :class:`~optim.canonical.AssignmentLayout`, checking
the values as it would read them).
:func:`to_result` maps an internal solution and its duals back onto the model's columns and rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .canonical import AssignmentLayout, CanonicalModel


@dataclass
class AssignmentLP:
    """The internal form (module docstring) with the map back to the model."""

    c: np.ndarray | None  # (m, K) sum form; None in the level form
    a: np.ndarray | None  # (m, K) level form
    g: np.ndarray  # (m, K) capacity coefficients
    e: np.ndarray  # (m, K) budget coefficients (1 off the cells)
    h: np.ndarray  # (m,) budgets
    n: np.ndarray  # (K,) capacities
    run: np.ndarray  # (m, K) bool: the cell is a column that may be positive
    col: np.ndarray  # (m, K) the cell's model column, -1 where none
    z_col: int  # the level column, -1 in the sum form
    z_lo: float  # the level column's lower bound (internal sense)
    cap_rows: np.ndarray  # (K,) model rows
    budget_rows: np.ndarray  # (m,)
    level_rows: np.ndarray | None  # (m,)
    level_scale: np.ndarray | None  # (m,) the level column's coefficient in each level row
    flip: np.ndarray  # (rows,) -1 where the model's row is ``>=``
    sign: float  # -1 where the model minimizes
    model_c_z: float = 0.0  # the level column's cost in the model

    @property
    def level_cost(self) -> float:
        """The level column's cost in the internal sense (1 in the sum form)."""
        return self.sign * float(self.model_c_z) if self.a is not None else 1.0

    @property
    def level(self) -> bool:
        return self.a is not None

    @property
    def shape(self) -> tuple[int, int]:
        return self.g.shape


def assignment_structure(model: CanonicalModel) -> AssignmentLP | None:
    """The model in the internal form, or None where it is not of the assignment shape."""
    if model.integrality.any() or model.log_terms is not None or model.hyperbolic is not None:
        return None
    lo, hi = model.row_lo, model.row_hi
    upper, lower = np.isfinite(hi) & ~np.isfinite(lo), np.isfinite(lo) & ~np.isfinite(hi)
    indices = np.asarray(model.A.indices)
    sided = upper | lower
    empty = np.bincount(indices, minlength=lo.size) == 0 if not sided.all() else ~sided
    if not (sided | empty).all():
        return None
    flip = np.where(lower, -1.0, 1.0)
    rhs = np.where(lower, -lo, hi)
    sign = 1.0 if model.sense == "max" else -1.0
    c = sign * np.asarray(model.c, dtype=float)
    if model.layout is not None and model.layout.A is model.A:
        lp = _laid_out(model, model.layout, flip, rhs, sign, c)
        if lp is not None:
            return lp
    data = np.asarray(model.A.data, dtype=float) * flip[indices] if lower.any() else np.asarray(model.A.data, float)
    priced = np.flatnonzero(c)
    if priced.size == 1 and c[priced[0]] > 0 and model.col_hi[priced[0]] == np.inf:
        lp = _read(model, flip, rhs, sign, c, data, int(priced[0]), empty)
        if lp is not None:
            return lp
    return _read(model, flip, rhs, sign, c, data, -1, empty)


def _laid_out(model: CanonicalModel, layout: AssignmentLayout, flip: np.ndarray, rhs: np.ndarray, sign: float,
              c: np.ndarray) -> AssignmentLP | None:
    """The model in the internal form from its builder's ``layout`` (no reading of the sparsity),
    or None where its values or bounds do not fit (as :func:`_values` checks them) or its rows are
    not those of the layout's sides: capacity and budget rows ``<=``, the level rows one-sided, the
    level column the only priced one."""
    m, K = layout.g.shape
    cells = m * K
    level = layout.level is not None
    rows = K + m * (1 + level)
    if model.A.shape != (rows, cells + level) or (flip[:K + m] != 1).any():
        return None
    h, n = rhs[K:K + m].astype(float), rhs[:K].astype(float)
    col_lo, col_hi = model.col_lo[:cells], model.col_hi[:cells]
    if (h < 0).any() or (n < 0).any() or (layout.g < 0).any() or (col_lo != 0).any() \
            or not ((col_hi == 0) | (col_hi == np.inf)).all():
        return None
    lp = AssignmentLP(c=None, a=None, g=layout.g, e=np.broadcast_to(1.0, (m, K)), h=h, n=n,
                      run=(col_hi > 0).reshape(m, K), col=np.arange(cells).reshape(m, K), z_col=-1, z_lo=-np.inf,
                      cap_rows=np.arange(K), budget_rows=np.arange(K, K + m), level_rows=None, level_scale=None,
                      flip=flip, sign=sign)
    if not level:
        lp.c = c[:cells].reshape(m, K)
        return lp
    z = cells
    if c[z] <= 0 or c[:cells].any() or model.col_hi[z] != np.inf or (rhs[K + m:] != 0).any() \
            or (layout.level < 0).any():
        return None
    lp.a, lp.level_rows, lp.level_scale, lp.z_col = layout.level, np.arange(K + m, rows), np.ones(m), z
    lp.model_c_z, lp.z_lo = float(model.c[z]), float(model.col_lo[z])
    return lp


def _read(model: CanonicalModel, flip: np.ndarray, rhs: np.ndarray, sign: float, c: np.ndarray, data: np.ndarray,
          z: int, empty: np.ndarray) -> AssignmentLP | None:
    """The model read with column ``z`` as the level column (the sum form where -1), or None: its
    values laid out by the first :class:`_Shape` of its sparsity that takes them. The shape that
    did is kept (:data:`_KEPT`) for the next model of the same sparsity, such as the next level
    LP of a bisection, whose values alone are read then."""
    if z >= 0:
        indptr, indices = np.asarray(model.A.indptr), np.asarray(model.A.indices)
        if (data[indptr[z]:indptr[z + 1]] <= 0).any() or (rhs[indices[indptr[z]:indptr[z + 1]]] != 0).any():
            return None
    kept = _KEPT.get(z)
    if kept is not None and kept.fits(model):
        lp = _values(kept, model, flip, rhs, sign, c, data)
        if lp is not None:
            return lp
    for shape in _shapes(model, z, empty):
        lp = _values(shape, model, flip, rhs, sign, c, data)
        if lp is not None:
            if model.A.nnz <= KEEP_NONZEROS:
                _KEPT[z] = shape
            return lp
    return None


#: a shape is kept for models of at most this many nonzeros (it holds copies of their index arrays)
KEEP_NONZEROS = 4_000_000
#: the last shape read per level column (-1: the sum form)
_KEPT: dict[int, _Shape] = {}


@dataclass(frozen=True)
class _Shape:
    """What the sparsity alone says of an assignment-shaped model: the cells' columns, the
    positions of their two capacity-or-budget entries in ``A.data`` (slices or index arrays),
    the split of those rows, and in the level form the level entries' cells and blocks."""

    indptr: np.ndarray
    indices: np.ndarray
    sided: tuple[np.ndarray, np.ndarray]  # the rows' (upper, lower) masks
    z: int
    cols: np.ndarray
    positions: tuple
    split: tuple
    cells: tuple  # (flat (m, K) index of each column of ``cols``, a slice where ordered; (m, K) model columns)
    is_level_row: np.ndarray
    level: tuple | None  # (each level entry's cell, block and position; the level rows; z's entries' blocks)

    def fits(self, model: CanonicalModel) -> bool:
        """Whether ``model`` has this shape's sparsity and sides of rows."""
        A = model.A
        if A.shape != (self.is_level_row.size, self.indptr.size - 1) or A.nnz != self.indices.size:
            return False
        return (np.array_equal(np.asarray(A.indptr), self.indptr)
                and np.array_equal(np.asarray(A.indices), self.indices)
                and all(np.array_equal(a, b) for a, b in zip(_sides(model), self.sided)))


def _sides(model: CanonicalModel) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = model.row_lo, model.row_hi
    return np.isfinite(hi) & ~np.isfinite(lo), np.isfinite(lo) & ~np.isfinite(hi)


def _shapes(model: CanonicalModel, z: int, empty: np.ndarray):
    """The shapes the model's sparsity allows with ``z`` as the level column, in the order tried."""
    lo = model.row_lo
    indptr, indices = np.asarray(model.A.indptr), np.asarray(model.A.indices)
    counts = np.diff(indptr)
    level = z >= 0
    if not level and (counts > 2).any():
        return
    is_level_row = np.zeros(lo.size, dtype=bool)
    if level:
        is_level_row[indices[indptr[z]:indptr[z + 1]]] = True
    cols = np.flatnonzero(np.arange(counts.size) != z)
    per = counts[cols]
    if ((per != 2) & (per != 3 if level else True)).any():
        return
    entries = _cell_entries(indptr, indices, cols, per, z, is_level_row)
    if entries is None:
        return
    rows2, positions, level_entries = entries
    for split in _splits(rows2, lo.size):
        cells = _cells(split, cols, empty, is_level_row, model)
        if cells is None:
            continue
        found = _level_map(cells, model, z, indices, indptr, level_entries, split[4], cols) if level else None
        if level and found is None:
            continue
        # copies: a shape outlives its model, and its index arrays are what the next model is compared with
        yield _Shape(indptr.copy(), indices.copy(), _sides(model), z, cols, positions, split, cells, is_level_row,
                     found)


def _cell_entries(indptr, indices, cols, per, z, is_level_row):
    """Each cell's two capacity-or-budget entries ``((rows0, rows1), (positions0, positions1))`` in
    column order (positions in ``A.data``: slices where strided) and its level-row entries
    ``(rows, columns, positions)``, or None where a cell has not exactly ``per - 2`` entries in
    level rows. The common layouts (every cell's level entry last, as :class:`~optim.Model` and
    the formulations lay models out) are read without sorting."""
    p = int(per[0]) if per.size else 0
    if per.size and cols[-1] == cols.size - 1 and indptr[cols.size] == p * cols.size and (per == p).all():
        end = p * cols.size  # the cells are the leading columns, p entries each: strided views
        pos0, pos1 = slice(0, end, p), slice(1, end, p)
    else:
        pos0 = indptr[cols]
        pos1 = pos0 + 1
    rows0, rows1 = indices[pos0], indices[pos1]
    if z < 0:
        return (rows0, rows1), (pos0, pos1), (np.zeros(0, dtype=np.int64), cols[:0], np.zeros(0, dtype=np.int64))
    has3 = per == 3
    start = indptr[cols]
    third = start[has3] + 2
    if is_level_row[indices[third]].all() and not (is_level_row[rows0].any() or is_level_row[rows1].any()):
        return (rows0, rows1), (pos0, pos1), (indices[third], cols[has3], third)
    spots = np.stack([start, start + 1, np.where(has3, start + 2, -1)], axis=1)
    rows3 = np.where(spots >= 0, indices[np.maximum(spots, 0)], -1)
    present = spots >= 0
    on_level = present & is_level_row[rows3]
    if (on_level.sum(axis=1) != per - 2).any():
        return None
    rows2, spots2 = rows3[present & ~on_level].reshape(-1, 2), spots[present & ~on_level].reshape(-1, 2)
    lv = on_level.any(axis=1)
    return (rows2[:, 0], rows2[:, 1]), (spots2[:, 0], spots2[:, 1]), (rows3[on_level], cols[lv], spots[on_level])


def _cells(split, cols: np.ndarray, empty: np.ndarray, is_level_row: np.ndarray, model: CanonicalModel):
    """The cells of one split of their rows into capacity and budget rows: ``(cells, col)``
    (``cells`` the flat (m, K) index of each column in ``cols``, a slice where ordered; ``col``
    each cell's model column, -1 where none), or None where a row has entries outside the shape."""
    cap_first, cap_rows, k, budget_rows, b = split
    m, K = budget_rows.size, cap_rows.size
    if k is None:  # ordered: cell i is (i // K, i % K)
        cells, col = slice(None), cols
    else:
        cells = b * K + k
        col = np.full(m * K, -1, dtype=np.int64)
        col[cells] = cols
    used = is_level_row.copy()
    used[cap_rows] = used[budget_rows] = True
    if not (used | empty).all() and not (used | (np.bincount(model.A.indices, minlength=used.size) == 0)).all():
        return None  # a row with entries outside the shape (``empty``: rows known to have none)
    return cells, col.reshape(m, K)


def _values(shape: _Shape, model: CanonicalModel, flip: np.ndarray, rhs: np.ndarray, sign: float, c: np.ndarray,
            data: np.ndarray) -> AssignmentLP | None:
    """The (m, K) arrays of ``shape`` filled from the model's values, or None where they do not
    fit the internal form (signs, bounds)."""
    cap_first, cap_rows, k, budget_rows, _ = shape.split
    cells, col = shape.cells
    vals0, vals1 = data[shape.positions[0]], data[shape.positions[1]]
    if cap_first is True:
        g_v, e_v = vals0, vals1
    else:
        g_v, e_v = np.where(cap_first, vals0, vals1), np.where(cap_first, vals1, vals0)
    m, K = budget_rows.size, cap_rows.size
    if (e_v <= 0).any() or (g_v < 0).any() or (rhs[budget_rows] < 0).any() or (rhs[cap_rows] < 0).any():
        return None
    cols = shape.cols
    col_lo, col_hi = model.col_lo[cols], model.col_hi[cols]
    if (col_lo != 0).any() or not ((col_hi == 0) | (col_hi == np.inf)).all():
        return None
    if k is None:
        run, g, e = col_hi > 0, g_v, e_v
    else:
        run = np.zeros(m * K, dtype=bool)
        run[cells] = col_hi > 0
        g, e = np.zeros(m * K), np.ones(m * K)
        g[cells], e[cells] = g_v, e_v
    lp = AssignmentLP(c=None, a=None, g=g.reshape(m, K), e=e.reshape(m, K), h=rhs[budget_rows].astype(float),
                      n=rhs[cap_rows].astype(float), run=run.reshape(m, K), col=col, z_col=-1,
                      z_lo=-np.inf, cap_rows=cap_rows, budget_rows=budget_rows, level_rows=None,
                      level_scale=None, flip=flip, sign=sign)
    if shape.level is None:
        cell_c = np.zeros(m * K)
        cell_c[cells] = c[cols]
        lp.c = cell_c.reshape(m, K)
        return lp
    lv_cell, lv_blocks, lv_pos, level_rows, blocks = shape.level
    z = shape.z
    scale = np.empty(m)
    scale[blocks] = data[model.A.indptr[z]:model.A.indptr[z + 1]]
    a = np.zeros(m * K)
    a[lv_cell] = -data[lv_pos] / scale[lv_blocks]
    if (a < 0).any():
        return None
    lp.a, lp.level_rows, lp.level_scale, lp.z_col = a.reshape(m, K), level_rows, scale, z
    lp.model_c_z = float(model.c[z])
    lp.z_lo = float(model.col_lo[z])
    return lp


def _splits(rows2: tuple[np.ndarray, np.ndarray], size: int):
    """The valid ways to read each cell's two rows as its capacity row and its budget row, as
    ``(cap_first, cap_rows, k, budget_rows, b)``: the capacity side the row with more entries (a
    capacity row has one per block on the type, a budget row one per type of its block), then
    (where few blocks make that ambiguous) the first row, then the second. Valid: no row on both
    sides, no block with two cells in one capacity row."""
    first, second = rows2
    ordered = _ordered(first, second, size)
    if ordered is not None:
        yield ordered
    count = np.bincount(first, minlength=size) + np.bincount(second, minlength=size)
    for cap_first in (count[first] > count[second], np.ones(first.size, dtype=bool),
                      np.zeros(first.size, dtype=bool)):
        if cap_first.all():
            cap_side, budget_side = first, second
        elif not cap_first.any():
            cap_side, budget_side = second, first
        else:
            cap_side, budget_side = np.where(cap_first, first, second), np.where(cap_first, second, first)
        cap_rows, k = _ranks(cap_side, size)
        budget_rows, b = _ranks(budget_side, size)
        K = cap_rows.size
        if not np.isin(cap_rows, budget_rows, assume_unique=True).any() and np.bincount(b * K + k).max(initial=0) <= 1:
            yield cap_first, cap_rows, k, budget_rows, b


def _ordered(first: np.ndarray, second: np.ndarray, size: int):
    """The split of cells laid out block after block, each block's cells in the order of the
    capacity rows, and each cell's capacity row first (as :class:`~optim.Model` and the
    formulations lay them out), found without sorting: ``(True, cap_rows, None, budget_rows,
    None)`` (cell i is block ``i // K``, type ``i % K``), or None."""
    K = int(np.argmax(second != second[0])) if first.size and (second != second[0]).any() else first.size
    if K == 0 or first.size % K:
        return None
    cap, bud = first.reshape(-1, K), second.reshape(-1, K)
    if not ((cap == cap[0]).all() and (bud == bud[:, :1]).all()):
        return None
    cap_rows, budget_rows = cap[0], bud[:, 0]
    seen = np.bincount(np.concatenate([cap_rows, budget_rows]), minlength=size)
    return (True, cap_rows, None, budget_rows, None) if seen.max(initial=0) <= 1 else None


def _ranks(rows: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``rows`` in order and each entry's rank among them."""
    mark = np.zeros(size, dtype=bool)
    mark[rows] = True
    rank = np.cumsum(mark) - 1
    return np.flatnonzero(mark), rank[rows]


def _level_map(cells, model: CanonicalModel, z: int, indices, indptr, level_entries, b, cols):
    """The level rows' structure: one per block, holding the level column; ``level_entries``: the
    cells' entries in level rows as (rows, columns, positions). Returns ``(cell of each entry, its
    block, its position, the blocks' level rows, the block of each of z's entries)``, or
    None where a level row is shared by two blocks or a block has not exactly one."""
    m, K = cells[1].shape
    col = cells[1]
    lv_rows, lv_cols, lv_pos = level_entries
    position = np.full(model.num_vars, -1, dtype=np.int64)
    if b is None:  # ordered: cell i is column cols[i], block i // K
        position[cols] = np.arange(cols.size)
        lv_blocks = position[lv_cols] // K
    else:
        position[col[col >= 0]] = np.flatnonzero(col.reshape(-1) >= 0)
        block_of_col = np.full(model.num_vars, -1, dtype=np.int64)
        block_of_col[cols] = b
        lv_blocks = block_of_col[lv_cols]
    row_block = np.full(model.row_lo.size, -1, dtype=np.int64)
    row_block[lv_rows] = lv_blocks
    if (row_block[lv_rows] != lv_blocks).any():
        return None  # a level row shared by two blocks
    z_rows = indices[indptr[z]:indptr[z + 1]]
    blocks = row_block[z_rows]
    if z_rows.size != m or (blocks < 0).any() or np.bincount(blocks, minlength=m).max(initial=0) > 1:
        return None
    level_rows = np.empty(m, dtype=np.int64)
    level_rows[blocks] = z_rows
    return position[lv_cols], lv_blocks, lv_pos, level_rows, blocks


def _on_columns(lp: AssignmentLP, cells: np.ndarray, num_vars: int) -> np.ndarray:
    """``num_vars`` model values with each cell's (m, K) value at its column (0 elsewhere): one
    copy where the cells are the leading columns in order, a scatter otherwise."""
    out = np.zeros(num_vars)
    m, K = lp.shape
    if lp.col.size <= num_vars and (lp.col.reshape(-1) == np.arange(m * K)).all():
        out[:m * K] = cells.reshape(-1)
    else:
        on = lp.col >= 0
        out[lp.col[on]] = cells[on]
    return out


def transposed_times(lp: AssignmentLP, model: CanonicalModel, duals: np.ndarray) -> np.ndarray:
    """``A^T duals`` over the model's columns from the internal form (the model's entries are
    ``g flip``, ``e flip`` and ``-a scale flip`` in a cell's capacity, budget and level rows): (m, K)
    array arithmetic instead of a product per stored entry; the level column's from its own
    entries."""
    d = lp.flip * duals
    cells = lp.g * d[lp.cap_rows] + lp.e * d[lp.budget_rows][:, None]
    if lp.level:
        cells -= lp.a * (lp.level_scale * d[lp.level_rows])[:, None]
    out = _on_columns(lp, cells, model.num_vars)
    if lp.level:
        z, indptr = lp.z_col, model.A.indptr
        span = slice(indptr[z], indptr[z + 1])
        out[z] = float(model.A.data[span] @ duals[model.A.indices[span]])
    return out


def to_result(lp: AssignmentLP, model: CanonicalModel, x: np.ndarray, z: float, y: np.ndarray, mu: np.ndarray,
              lam: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The model's column values and row duals (``c = A^T duals + reduced costs``) of an
    internal solution ``x`` (m, K), level ``z`` and internal duals ``y`` (capacity), ``mu``
    (budget), ``lam`` (level rows), those of the level form per unit of z (scaled here by the
    level column's cost)."""
    values = _on_columns(lp, np.ascontiguousarray(x), model.num_vars)  # x column-major: 25 ms at 1,000,000 x 10
    internal = np.zeros(model.row_lo.size)
    internal[lp.cap_rows], internal[lp.budget_rows] = y, mu
    if lp.level:
        values[lp.z_col] = z
        internal[lp.level_rows] = lam / lp.level_scale
    return values, lp.sign * lp.flip * internal * lp.level_cost


