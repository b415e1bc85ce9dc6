"""Lucid's cluster and workload measurements: VC configs, profiled workloads, measured co-locations.

- VC config (``lucid/philly/vc_config.csv``: ``vc,node num``; ``lucid/venus/vc_config.csv``: an
  unnamed first column and ``num``): one row per virtual cluster, its id and its nodes (>= 1, 8 GPUs a
  node in Lucid's and Helios' simulators). :func:`read_vc_config` yields a :class:`VcConfig`.
- Profiled workloads (``lucid/single_data.csv``: ``model,dataset,batchsize,amp,speed,gpu_util,
  gmem_util,gmem,label``): one row per workload (model, dataset, batch size, AMP flag) measured alone,
  with Lucid's packing label (0, 1, 2). :func:`read_profiles` yields :class:`Profiles`.
- Co-locations (``lucid/colocate_info.csv``: an index column, then ``model1,dataset1,gpu_num1,
  batchsize1,amp1,speed1`` and the same for job 2, then the pair's ``gpu_util,gmem_util,gmem``): each
  job's speed relative to running alone when the two share a GPU. :func:`read_colocations` yields
  :class:`Colocations`.

Errors are :class:`~simulator.readers.helios_logs.LucidInputError` naming file, line and column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from simulator.readers.helios_logs import LucidInputError, Table, read_table

#: GPUs a node in Lucid's and Helios' simulators
GPUS_PER_NODE = 8
PROFILE_COLUMNS = ("model", "dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem", "label")
#: a workload's key, the columns Lucid looks a job's measurements up by
KEY = ("model", "dataset", "batchsize", "amp")
PAIR_COLUMNS = tuple(f"{name}{k}" for k in (1, 2) for name in ("model", "dataset", "gpu_num", "batchsize", "amp",
                                                                "speed")) + ("gpu_util", "gmem_util", "gmem")


@dataclass(frozen=True)
class VcConfig:
    """Virtual clusters in file order: ``names`` (ids) and ``nodes`` each, ``gpus_per_node`` GPUs a node."""

    names: tuple[str, ...]
    nodes: np.ndarray
    gpus_per_node: int
    source: str

    def __len__(self) -> int:
        return len(self.names)

    @property
    def gpus(self) -> np.ndarray:
        return self.nodes * self.gpus_per_node

    def as_dict(self) -> dict[str, int]:
        """VC id -> nodes."""
        return dict(zip(self.names, (int(n) for n in self.nodes), strict=True))

    def scaled(self, factor: float) -> VcConfig:
        """Every VC at ``factor`` times its nodes (rounded, at least one): a lighter or heavier load
        of the same jobs."""
        if not (factor > 0 and np.isfinite(factor)):
            raise ValueError(f"VC scale must be a positive number, got {factor!r}")
        nodes = np.maximum(np.round(self.nodes * factor), 1).astype(np.int64)
        return VcConfig(self.names, nodes, self.gpus_per_node, f"{self.source} x {factor:g}")


def read_vc_config(path: str | os.PathLike, *, gpus_per_node: int = GPUS_PER_NODE) -> VcConfig:
    """Read a VC config (module doc): two columns, VC id then nodes; ids unique."""
    table = read_table(path, "VC config")
    if len(table.header) != 2 or table.header[1] not in ("node num", "num"):
        raise LucidInputError(f"{table.source}:{table.header_line}: not a VC config header: expected 'vc,node num' "
                              f"or ',num', got {','.join(table.header)!r}")
    if not table.rows:
        raise LucidInputError(f"{table.source}:{table.header_line}: no VCs after the header")
    vc, count = table.header
    names = table.names(vc)
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise table.error(i, vc or "1", f"VC {name!r} repeats line {table.lines[seen[name]]}")
        seen[name] = i
    return VcConfig(tuple(names), table.numbers(count, minimum=1, integer=True), gpus_per_node, table.source)


@dataclass(frozen=True)
class Profiles:
    """Profiled workloads in file order: the key (``model``, ``dataset``, ``batch_size``, ``amp``), the
    throughput alone (``speed``), GPU utilization and memory utilization (%), memory (MB), packing
    ``label`` (0: shares well .. 2: shares badly)."""

    model: np.ndarray
    dataset: np.ndarray
    batch_size: np.ndarray
    amp: np.ndarray
    speed: np.ndarray
    gpu_util: np.ndarray
    gmem_util: np.ndarray
    gmem: np.ndarray
    label: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.model)

    def keys(self) -> list[tuple]:
        return list(zip(self.model, self.dataset, self.batch_size.tolist(), self.amp.tolist(), strict=True))


def _flags(table: Table, name: str, allowed: tuple[int, ...]) -> np.ndarray:
    values = table.numbers(name, integer=True)
    if (bad := ~np.isin(values, allowed)).any():
        i = int(np.argmax(bad))
        raise table.error(i, name, f"expected one of {', '.join(map(str, allowed))}, got {table.column(name)[i]!r}")
    return values


def _unique(table: Table, keys: list[tuple], what: str) -> None:
    seen: dict[tuple, int] = {}
    for i, key in enumerate(keys):
        if key in seen:
            raise table.error(i, "model", f"{what} {key} repeats line {table.lines[seen[key]]}")
        seen[key] = i


def read_profiles(path: str | os.PathLike) -> Profiles:
    """Read Lucid's profiled workloads (``single_data.csv``); keys unique."""
    table = read_table(path, "profiled workloads")
    table.require(PROFILE_COLUMNS, "profiled workloads")
    if not table.rows:
        raise LucidInputError(f"{table.source}:{table.header_line}: no workloads after the header")
    profiles = Profiles(
        model=table.names("model"), dataset=table.names("dataset"),
        batch_size=table.numbers("batchsize", minimum=1, integer=True), amp=_flags(table, "amp", (0, 1)),
        speed=table.numbers("speed"), gpu_util=table.numbers("gpu_util"), gmem_util=table.numbers("gmem_util"),
        gmem=table.numbers("gmem"), label=_flags(table, "label", (0, 1, 2)), source=table.source)
    _unique(table, profiles.keys(), "workload")
    return profiles


@dataclass(frozen=True)
class Colocations:
    """Measured pairs in file order. Per side (shape (pairs, 2)): the workload's key columns, its GPUs
    and its speed relative to running alone; per pair: GPU utilization, memory utilization (%) and
    memory (MB). Each unordered pair of keys appears once."""

    model: np.ndarray
    dataset: np.ndarray
    gpus: np.ndarray
    batch_size: np.ndarray
    amp: np.ndarray
    speed: np.ndarray
    gpu_util: np.ndarray
    gmem_util: np.ndarray
    gmem: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.gpu_util)

    def keys(self, side: int) -> list[tuple]:
        """Side 0's or 1's workload keys."""
        return list(zip(self.model[:, side], self.dataset[:, side], self.batch_size[:, side].tolist(),
                        self.amp[:, side].tolist(), strict=True))


def read_colocations(path: str | os.PathLike) -> Colocations:
    """Read Lucid's measured co-locations (``colocate_info.csv``); per-side arrays have shape (pairs, 2)."""
    table = read_table(path, "co-location measurements")
    table.require(PAIR_COLUMNS, "co-location measurements")
    if not table.rows:
        raise LucidInputError(f"{table.source}:{table.header_line}: no pairs after the header")

    def sides(read, name: str) -> np.ndarray:
        return np.stack([read(f"{name}1"), read(f"{name}2")], axis=1)

    pairs = Colocations(
        model=sides(table.names, "model"), dataset=sides(table.names, "dataset"),
        gpus=sides(lambda c: table.numbers(c, minimum=1, integer=True), "gpu_num"),
        batch_size=sides(lambda c: table.numbers(c, minimum=1, integer=True), "batchsize"),
        amp=sides(lambda c: _flags(table, c, (0, 1)), "amp"), speed=sides(table.numbers, "speed"),
        gpu_util=table.numbers("gpu_util"), gmem_util=table.numbers("gmem_util"), gmem=table.numbers("gmem"),
        source=table.source)
    _unique(table, [tuple(sorted(p)) for p in zip(pairs.keys(0), pairs.keys(1), strict=True)], "pair")
    return pairs
