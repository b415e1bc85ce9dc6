"""A live HiGHS LP changed in place by deltas (:mod:`optim.delta`) and re-solved warm.

HiGHS keeps its basis through every update call (added columns enter nonbasic, added
rows with a basic slack) but keeps its basis factorization only through bound and cost
changes: ``addCols``, ``addRows`` and ``changeCoeff`` cost a fresh factorization, most of
a warm re-solve of the 10,000-job max-min LP, and deleting a basic column costs a basis
repair on top (measured: about twice the time). So dropped rows and columns are never
deleted: a column is fixed at 0 and a row freed (``-inf <= row <= inf``), both inert, and
a departure is a change of bounds. New columns and rows are appended. ``cols[k]`` /
``rows[k]`` is the model's index of the k-th live column / row, -1 for an inert one;
:attr:`num_inert` tells the session when to rebuild instead.
"""

from __future__ import annotations

import numpy as np

from ..canonical import CanonicalModel
from ..delta import ModelDelta
from ..options import SolveOptions
from ..result import Result, Status, Timings
from ..slots import Entities
from .base import LiveModel, stopwatch
from .highs import PRIMAL_SIMPLEX, load_highs, read_result, run_highs


def _positions(order: np.ndarray, size: int) -> np.ndarray:
    """``pos[order[k]] = k`` for the live entries of ``order``: where each model index sits live."""
    pos = np.full(size, -1, dtype=np.int64)
    live = order >= 0
    pos[order[live]] = np.flatnonzero(live)
    return pos


def _int32(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int32)


class _Refused(Exception):
    """HiGHS refused an update call."""


def _check(status, call: str) -> None:
    import highspy

    if status == highspy.HighsStatus.kError:
        raise _Refused(f"HiGHS refused {call}")


class HighsLive(LiveModel):
    """One highspy model; a load solves with the backend's method, an update re-solves by
    primal simplex from the held basis (the dual simplex first recomputes its steepest-edge
    weights, seconds at 10,000 jobs)."""

    def __init__(self, options: SolveOptions, spec: str = "highs"):
        self.options = options
        self.spec = spec
        self._highs = None
        self._cols = np.zeros(0, dtype=np.int64)
        self._rows = np.zeros(0, dtype=np.int64)
        self._entities: Entities | None = None
        self._pool: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}

    @property
    def num_inert(self) -> int:
        return int((self._cols < 0).sum() + (self._rows < 0).sum())

    def load(self, model: CanonicalModel) -> Result:
        timings = Timings()
        self._highs = self.model = None
        with stopwatch(timings, "translate"):
            h = load_highs(model, self.options)
        if h is None:
            return Result(Status.ERROR, self.spec, message="HiGHS rejected the model", timings=timings)
        self._highs, self.model = h, model
        self._cols, self._rows = np.arange(model.num_vars), np.arange(model.num_rows)
        self._pool = {}
        with stopwatch(timings, "translate"):
            self._entities = Entities.of(model)
            self._add_spares()
        with stopwatch(timings, "solve"):
            run_highs(h)
        return read_result(h, model, timings, self.spec, cols=self._cols, rows=self._rows)

    def _add_spares(self) -> None:
        """One inert copy (columns fixed at 0, rows free) of an entity of each structure that
        at least two entities share (the most common first, at most ``SPARE_SHARE`` of the
        entities, so small models get none), pooled, so an arrival of that structure needs no new rows or columns."""
        ent, model, h = self._entities, self.model, self._highs
        signature = ent.signatures(model, np.arange(ent.keys.size), self._cols, self._rows)
        distinct, first, count = np.unique(signature, return_index=True, return_counts=True)
        recurring = np.flatnonzero((distinct != 0) & (count >= 2))
        recurring = recurring[np.argsort(-count[recurring], kind="stable")][:int(SPARE_SHARE * ent.keys.size)]
        reps = np.sort(first[recurring])
        if reps.size == 0:
            return
        cols, rows = ent.members(reps)
        base_col, base_row = self._cols.size, self._rows.size
        spare_row = np.full(model.num_rows, -1, dtype=np.int64)
        spare_row[rows] = base_row + np.arange(rows.size)
        by_row = model.A.scipy().tocsr()[rows]
        shared = ent.col[by_row.indices] < 0
        starts = np.concatenate([[0], np.cumsum(shared)])[by_row.indptr[:-1]]
        _check(h.addRows(rows.size, np.full(rows.size, -np.inf), np.full(rows.size, np.inf), int(shared.sum()),
                         _int32(starts), _int32(by_row.indices[shared]), by_row.data[shared]), "addRows")
        by_col = model.A.scipy()[:, cols]
        target = np.where(spare_row[by_col.indices] >= 0, spare_row[by_col.indices], by_col.indices)
        zeros = np.zeros(cols.size)
        _check(h.addCols(cols.size, zeros, zeros, zeros, by_col.nnz, _int32(by_col.indptr[:-1]), _int32(target),
                         by_col.data), "addCols")
        self._cols = np.concatenate([self._cols, np.full(cols.size, -1)])
        self._rows = np.concatenate([self._rows, np.full(rows.size, -1)])
        rank = np.full(ent.keys.size, -1, dtype=np.int64)
        rank[reps] = np.arange(reps.size)
        self._pool_slots(signature[reps], rank[ent.col[cols]], base_col + np.arange(cols.size), rank[ent.row[rows]],
                         base_row + np.arange(rows.size))

    def _pool_slots(self, signature: np.ndarray, col_rank: np.ndarray, live_cols: np.ndarray,
                    row_rank: np.ndarray, live_rows: np.ndarray) -> None:
        """Pool the inert slots of k entities: ``signature`` (k,), and their live columns and
        rows grouped by entity, ``*_rank`` the entity (0..k-1) of each."""
        k = signature.size
        col_split = np.cumsum(np.bincount(col_rank, minlength=k))[:-1]
        row_split = np.cumsum(np.bincount(row_rank, minlength=k))[:-1]
        for sig, slot_cols, slot_rows in zip(signature.tolist(), np.split(live_cols, col_split),
                                             np.split(live_rows, row_split)):
            self._pool.setdefault(sig, []).append((slot_cols, slot_rows))

    def update(self, delta: ModelDelta, model: CanonicalModel) -> Result:
        if self.model is None:
            raise RuntimeError("HighsLive.update needs a model loaded first")
        timings = Timings()
        try:
            with stopwatch(timings, "translate"):
                cols, rows = self._apply(delta, model)
        except _Refused as exc:
            self._highs = self.model = None
            return Result(Status.ERROR, self.spec, message=str(exc), timings=timings)
        with stopwatch(timings, "solve"):
            run_highs(self._highs)
        self.model, self._cols, self._rows = model, cols, rows
        return read_result(self._highs, model, timings, self.spec, cols=cols, rows=rows)

    def _apply(self, d: ModelDelta, new: CanonicalModel) -> tuple[np.ndarray, np.ndarray]:
        """Apply ``d`` to the live model; the new live order (model indices, -1 inert) of its
        columns and rows."""
        import highspy

        h, old = self._highs, self.model
        cols = _renumbered(self._cols, d.old_cols, d.new_cols, old.num_vars)
        rows = _renumbered(self._rows, d.old_rows, d.new_rows, old.num_rows)
        gone = np.flatnonzero((self._cols >= 0) & (cols < 0))
        if gone.size:
            zeros = np.zeros(gone.size)
            _check(h.changeColsBounds(gone.size, _int32(gone), zeros, zeros), "changeColsBounds")
        gone = np.flatnonzero((self._rows >= 0) & (rows < 0))
        if gone.size:
            _check(h.changeRowsBounds(gone.size, _int32(gone), np.full(gone.size, -np.inf),
                                      np.full(gone.size, np.inf)), "changeRowsBounds")
        entities = Entities.of(new)
        self._pool_departures(cols, rows)
        add_cols, add_rows = self._reuse_slots(entities, new, cols, rows, d.add_cols, d.add_rows)
        self._entities = entities
        row_pos = _positions(rows, new.num_rows)
        if add_cols.size:
            block = new.A.scipy()[:, add_cols]
            live_row = row_pos[block.indices]
            keep = live_row >= 0
            starts = np.concatenate([[0], np.cumsum(keep)])[block.indptr[:-1]]
            add = add_cols
            _check(h.addCols(add.size, new.c[add], new.col_lo[add], new.col_hi[add], int(keep.sum()),
                             _int32(starts), _int32(live_row[keep]), block.data[keep]), "addCols")
            cols = np.concatenate([cols, add])
        col_pos = _positions(cols, new.num_vars)
        if add_rows.size:
            block = new.A.scipy().tocsr()[add_rows]
            add = add_rows
            _check(h.addRows(add.size, new.row_lo[add], new.row_hi[add], block.nnz, _int32(block.indptr[:-1]),
                             _int32(col_pos[block.indices]), block.data), "addRows")
            rows = np.concatenate([rows, add])
            row_pos = _positions(rows, new.num_rows)
        if d.cost.size:
            live, idx = _sorted_live(col_pos, d.new_cols[d.cost])
            _check(h.changeColsCost(live.size, live, new.c[idx]), "changeColsCost")
        if d.bounds.size:
            live, idx = _sorted_live(col_pos, d.new_cols[d.bounds])
            _check(h.changeColsBounds(live.size, live, new.col_lo[idx], new.col_hi[idx]), "changeColsBounds")
        if d.sides.size:
            live, idx = _sorted_live(row_pos, d.new_rows[d.sides])
            _check(h.changeRowsBounds(live.size, live, new.row_lo[idx], new.row_hi[idx]), "changeRowsBounds")
        for r, c, v in zip(row_pos[d.new_rows[d.coef_rows]].tolist(), col_pos[d.new_cols[d.coef_cols]].tolist(),
                           d.coef_values.tolist()):
            _check(h.changeCoeff(r, c, v), "changeCoeff")
        if d.sense_changed:
            sense = highspy.ObjSense.kMaximize if new.sense == "max" else highspy.ObjSense.kMinimize
            _check(h.changeObjectiveSense(sense), "changeObjectiveSense")
        if d.offset_changed:
            _check(h.changeObjectiveOffset(new.offset), "changeObjectiveOffset")
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        return cols, rows


    def _pool_departures(self, cols: np.ndarray, rows: np.ndarray) -> None:
        """Pool the slots of the held model's entities whose every column and row just went
        inert (``cols`` / ``rows``: the live order after this update)."""
        old, ent = self.model, self._entities
        col_live, row_live = _positions(self._cols, old.num_vars), _positions(self._rows, old.num_rows)
        gone_col = np.zeros(old.num_vars, dtype=bool)
        gone_col[self._cols[(self._cols >= 0) & (cols < 0)]] = True
        gone_row = np.zeros(old.num_rows, dtype=bool)
        gone_row[self._rows[(self._rows >= 0) & (rows < 0)]] = True
        stays = np.zeros(ent.keys.size + 1, dtype=bool)
        stays[ent.col[~gone_col]] = True
        stays[ent.row[~gone_row]] = True
        left = np.flatnonzero(~stays[:-1])
        if left.size == 0:
            return
        signature = ent.signatures(old, left, col_live, row_live)
        left = left[signature != 0]
        member_cols, member_rows = ent.members(left)
        rank = np.full(ent.keys.size, -1, dtype=np.int64)
        rank[left] = np.arange(left.size)
        self._pool_slots(signature[signature != 0], rank[ent.col[member_cols]], col_live[member_cols],
                         rank[ent.row[member_rows]], row_live[member_rows])

    def _reuse_slots(self, ent: Entities, new: CanonicalModel, cols: np.ndarray, rows: np.ndarray,
                     add_cols: np.ndarray, add_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Place arriving entities of ``new`` in pooled slots of their structure (bound and
        cost changes only; ``cols`` / ``rows`` updated in place); the columns and rows still
        to add."""
        if (add_cols.size == 0 and add_rows.size == 0) or not self._pool:
            return add_cols, add_rows
        arriving = np.zeros(ent.keys.size + 1, dtype=bool)
        arriving[ent.col[add_cols]] = True
        arriving[ent.row[add_rows]] = True
        kept_cols = np.ones(new.num_vars, dtype=bool)
        kept_cols[add_cols] = False
        kept_rows = np.ones(new.num_rows, dtype=bool)
        kept_rows[add_rows] = False
        present = np.zeros(ent.keys.size + 1, dtype=bool)
        present[ent.col[kept_cols]] = True
        present[ent.row[kept_rows]] = True
        arriving = np.flatnonzero(arriving[:-1] & ~present[:-1])
        if arriving.size == 0:
            return add_cols, add_rows
        signature = ent.signatures(new, arriving, _positions(cols, new.num_vars), _positions(rows, new.num_rows))
        member_cols, member_rows = ent.members(arriving)
        col_split = np.cumsum(np.bincount(np.searchsorted(arriving, ent.col[member_cols]), minlength=arriving.size))
        row_split = np.cumsum(np.bincount(np.searchsorted(arriving, ent.row[member_rows]), minlength=arriving.size))
        placed_cols, placed_rows, live_cols, live_rows = [], [], [], []
        for k, sig in enumerate(signature.tolist()):
            slots = self._pool.get(sig)
            if not sig or not slots:
                continue
            slot_cols, slot_rows = slots.pop()
            placed_cols.append(member_cols[col_split[k] - slot_cols.size:col_split[k]])
            placed_rows.append(member_rows[row_split[k] - slot_rows.size:row_split[k]])
            live_cols.append(slot_cols)
            live_rows.append(slot_rows)
        if not live_cols:
            return add_cols, add_rows
        model_cols, model_rows = np.concatenate(placed_cols), np.concatenate(placed_rows)
        at_cols, at_rows = np.concatenate(live_cols), np.concatenate(live_rows)
        cols[at_cols], rows[at_rows] = model_cols, model_rows
        h = self._highs
        order = np.argsort(at_cols)
        at, idx = _int32(at_cols[order]), model_cols[order]
        _check(h.changeColsCost(at.size, at, new.c[idx]), "changeColsCost")
        _check(h.changeColsBounds(at.size, at, new.col_lo[idx], new.col_hi[idx]), "changeColsBounds")
        order = np.argsort(at_rows)
        at, idx = _int32(at_rows[order]), model_rows[order]
        _check(h.changeRowsBounds(at.size, at, new.row_lo[idx], new.row_hi[idx]), "changeRowsBounds")
        return np.setdiff1d(add_cols, model_cols), np.setdiff1d(add_rows, model_rows)


#: spare slots made at a load: at most this share of the model's entities
SPARE_SHARE = 0.02


def _renumbered(order: np.ndarray, old: np.ndarray, new: np.ndarray, size: int) -> np.ndarray:
    """The live ``order`` (old model indices, -1 inert) in new model indices; unmatched ones
    inert. ``mapping`` has one spare last entry, -1, which an inert ``order[k] = -1`` reads."""
    mapping = np.full(size + 1, -1, dtype=np.int64)
    mapping[old] = new
    return mapping[order]


def _sorted_live(pos: np.ndarray, model_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Live positions of ``model_index`` in ascending order, and the model indices in that order."""
    live = pos[model_index]
    order = np.argsort(live)
    return _int32(live[order]), model_index[order]
