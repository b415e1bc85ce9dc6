"""The single-job program's columns (:func:`formulations.combinations.singles_program`) assembled
in one compiled pass: at a million jobs the array path's three-wide staging arrays and masked
copies took 0.5 s a program, most of a finish-time fairness level LP's build. Compiled on first
use and cached on disk (numba ``cache=True``); imported only for large programs."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def cell_columns(gpus, n, level, level_sign, z_value):
    """``(data, indices, indptr)`` of the program's CSC columns over m jobs and n types: cell
    (i, j) (column ``i n + j``) holds ``gpus_i`` in capacity row j, 1 in time-budget row ``n + i``
    and, where ``level`` (m, n) has rows, ``level_sign * level_ij`` in row ``n + m + i`` where
    nonzero; then (with ``level``) the level column, ``z_value`` in rows ``n + m .. n + 2m - 1``.
    Without level rows ``level`` is (0, 0)."""
    m = gpus.size
    epigraph = level.shape[0] > 0
    cells = m * n
    nnz = 2 * cells
    if epigraph:
        for i in range(m):
            for j in range(n):
                if level[i, j] != 0.0:
                    nnz += 1
        nnz += m
    data = np.empty(nnz)
    indices = np.empty(nnz, dtype=np.int32)
    indptr = np.empty(cells + epigraph + 1, dtype=np.int32)
    p = 0
    for i in range(m):
        for j in range(n):
            indptr[i * n + j] = p
            data[p], indices[p] = gpus[i], j
            data[p + 1], indices[p + 1] = 1.0, n + i
            p += 2
            if epigraph and level[i, j] != 0.0:
                data[p], indices[p] = level_sign * level[i, j], n + m + i
                p += 1
    if epigraph:
        indptr[cells] = p
        for i in range(m):
            data[p], indices[p] = z_value, n + m + i
            p += 1
    indptr[cells + epigraph] = p
    return data, indices, indptr
