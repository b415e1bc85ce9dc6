"""Entities of a keyed LP and structural signatures, for reusing inert slots of a live model.

An *entity* is an integer key shared by keyed blocks: the columns of every variable block
whose leading index carries it and the rows of every row block that carry it (rows with
an integer key no column block has, and rows and columns without keys, are *shared*).
An entity's structure is its cells (block, trailing index), its rows (block), every
matrix entry among them, and every entry linking them to shared rows and columns, named
by their live positions in a solver model. Two entities with equal structure differ only
in costs, bounds and row sides, so a live model can turn an inert slot holding one into
the other by bound and cost changes alone, which keep the solver's factorization; adding
rows and columns does not. An entity touching another entity, or a shared row or column
that is not live, has no signature (it cannot be pooled).

Signatures are 64-bit sums of mixed per-entry hashes (order-free, computed vectorized).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .canonical import CanonicalModel

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, elementwise on uint64 (wrapping)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M1
    x = x ^ (x >> np.uint64(27))
    x = x * _M2
    return x ^ (x >> np.uint64(31))


def _token(*parts: np.ndarray) -> np.ndarray:
    h = np.zeros(np.broadcast(*parts).shape, dtype=np.uint64)
    for part in parts:
        h = _mix(h ^ np.asarray(part).astype(np.int64).view(np.uint64))
    return h


def _name_id(name: str) -> int:
    return zlib.crc32(name.encode())


@dataclass(frozen=True)
class Entities:
    """``keys`` (sorted) of a model's entities; ``col`` / ``row``: entity index of every
    column / row (-1 shared); ``col_block`` / ``row_block``: an id of each one's block and
    ``col_cell``: each column's trailing index in its block."""

    keys: np.ndarray
    col: np.ndarray
    row: np.ndarray
    col_block: np.ndarray
    col_cell: np.ndarray
    row_block: np.ndarray

    @classmethod
    def of(cls, model: CanonicalModel) -> Entities:
        int_keyed = {name: keys for name, keys in model.col_keys.items() if keys.dtype.kind in "iu"}
        keys = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *int_keyed.values()]).astype(np.int64))
        col = np.full(model.num_vars, -1, dtype=np.int64)
        col_block = np.zeros(model.num_vars, dtype=np.int64)
        col_cell = np.zeros(model.num_vars, dtype=np.int64)
        for name, block in model.blocks.items():
            trailing = block.size // max(1, block.shape[0] if block.shape else 1)
            col_block[block.columns] = _name_id(name)
            col_cell[block.columns] = np.arange(block.size) % max(1, trailing)
            if name in int_keyed:
                col[block.columns] = np.repeat(np.searchsorted(keys, int_keyed[name]), trailing)
        row = np.full(model.num_rows, -1, dtype=np.int64)
        row_block = np.zeros(model.num_rows, dtype=np.int64)
        for name, rows in model.row_blocks.items():
            row_block[rows] = _name_id(name)
            row_keys = model.row_keys.get(name)
            if row_keys is not None and row_keys.dtype.kind in "iu" and keys.size:
                pos = np.minimum(np.searchsorted(keys, row_keys), keys.size - 1)
                row[rows] = np.where(keys[pos] == row_keys, pos, -1)
        return cls(keys, col, row, col_block, col_cell, row_block)

    def members(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Columns and rows of the entities ``which``, each grouped by entity (in the order
        of ``which``) and ascending within it: the entities' local order."""
        rank = np.full(self.keys.size + 1, -1, dtype=np.int64)
        rank[which] = np.arange(which.size)
        cols = np.flatnonzero(rank[self.col] >= 0)
        rows = np.flatnonzero(rank[self.row] >= 0)
        return (cols[np.argsort(rank[self.col[cols]], kind="stable")],
                rows[np.argsort(rank[self.row[rows]], kind="stable")])

    def signatures(self, model: CanonicalModel, which: np.ndarray, col_live: np.ndarray,
                   row_live: np.ndarray) -> np.ndarray:
        """(len(which),) uint64 structure signature of each entity (0 when it has none: it
        touches another entity or a shared row / column that is not live)."""
        rank = np.full(self.keys.size + 1, -1, dtype=np.int64)
        rank[which] = np.arange(which.size)
        cols, rows = self.members(which)
        col_local = _local(rank[self.col[cols]])
        row_local = _local(rank[self.row[rows]])
        local = np.full(model.num_vars, -1, dtype=np.int64)
        local[cols] = col_local
        local_row = np.full(model.num_rows, -1, dtype=np.int64)
        local_row[rows] = row_local
        total = np.zeros(which.size, dtype=np.uint64)
        bad = np.zeros(which.size, dtype=bool)
        # entries of the entities' columns
        A = model.A.scipy()
        sub = A[:, cols].tocoo()
        c, r, v = cols[sub.col], sub.row, sub.data
        owner = rank[self.col[c]]
        inside = self.row[r] == self.col[c]
        other = (self.row[r] >= 0) & ~inside
        dead = ~inside & ~other & (row_live[r] < 0)
        np.logical_or.at(bad, owner[other | dead], True)
        where = np.where(inside, local_row[r], row_live[r])
        np.add.at(total, owner, _token(np.where(inside, 1, 2), local[c], where, v.view(np.int64)))
        # entries of the entities' rows in columns outside them
        sub = A[rows, :].tocoo() if rows.size else A[:0, :].tocoo()
        r, c, v = rows[sub.row], sub.col, sub.data
        owner = rank[self.row[r]]
        outside = self.col[c] != self.row[r]
        other = outside & (self.col[c] >= 0)
        dead = outside & ~other & (col_live[c] < 0)
        np.logical_or.at(bad, owner[other | dead], True)
        keep = outside & ~other
        np.add.at(total, owner[keep], _token(3, local_row[r[keep]], col_live[c[keep]], v[keep].view(np.int64)))
        # the cells and rows themselves
        np.add.at(total, rank[self.col[cols]], _token(4, self.col_block[cols], self.col_cell[cols], col_local))
        np.add.at(total, rank[self.row[rows]], _token(5, self.row_block[rows], row_local))
        total[bad] = 0
        return total


def _local(group: np.ndarray) -> np.ndarray:
    """Index of each element within its run of equal ``group`` values (runs contiguous)."""
    if group.size == 0:
        return group
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    return np.arange(group.size) - np.repeat(starts, np.diff(np.r_[starts, group.size]))
