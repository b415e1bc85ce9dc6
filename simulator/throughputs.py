"""Throughput tables: steps/s of each job type on each worker type, alone and co-located.

A job type is ``(model, scale_factor)``. Gavel's JSON format is read from any path:

    {worker_type: {"('<model>', <scale>)": {"null": steps_per_s,
                                             "('<other>', <scale>)": [own, other], ...}}}

plus ``<type>_unconsolidated`` copies holding the rates of a multi-GPU job spread over
several servers. A job type missing under a worker type cannot run there (rate 0).
"""

from __future__ import annotations

import ast
import functools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.files import write_atomically
from simulator.readers.fields import LIMIT, json_number, load_json

JobKey = tuple[str, int]
UNCONSOLIDATED = "_unconsolidated"


class ThroughputTableError(ValueError):
    """A malformed throughput file or a lookup of an unknown job or worker type."""


@dataclass(frozen=True)
class ThroughputTable:
    """Dense isolated rates plus sparse co-located pair rates.

    ``isolated[k, j]``: steps/s of job type ``keys[k]`` on type ``worker_types[j]``.
    ``unconsolidated[k, j]``: same when spread over servers (NaN where not given).
    ``pair_keys[p] = (a, b)`` with ``pair_rates[p, j] = (rate of a, rate of b)``
    when co-located on one GPU of type j (NaN where not given).
    """

    worker_types: tuple[str, ...]
    keys: tuple[JobKey, ...]
    isolated: np.ndarray
    unconsolidated: np.ndarray
    pair_keys: tuple[tuple[int, int], ...] = ()
    pair_rates: np.ndarray | None = None
    source: str = "<memory>"

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {k: i for i, k in enumerate(self.keys)})

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k[0] for k in self.keys))

    def index_of(self, model: str, scale: int) -> int:
        try:
            return self._index[(model, int(scale))]
        except KeyError:
            raise ThroughputTableError(
                f"{self.source}: unknown job type {model!r} at scale {scale}"
            ) from None

    def type_columns(self, worker_types) -> np.ndarray:
        """Column indices of ``worker_types`` in this table."""
        cols = []
        for name in worker_types:
            if name not in self.worker_types:
                raise ThroughputTableError(
                    f"{self.source}: no throughputs for worker type {name!r} "
                    f"(the table has {', '.join(self.worker_types)})"
                )
            cols.append(self.worker_types.index(name))
        return np.asarray(cols, dtype=np.int64)

    def rates(self, key_index: np.ndarray, worker_types) -> np.ndarray:
        """Isolated rates of the job types ``key_index`` on ``worker_types``: (m, n)."""
        return self.isolated[np.ix_(np.asarray(key_index), self.type_columns(worker_types))]

    def co_located(self, key_index: np.ndarray, scale_factors: np.ndarray, worker_types):
        """Candidate pairs among jobs of types ``key_index``: ``(first, second, rates)``.

        Every job pair i < k of equal scale factor whose job types have co-located rates
        in the table, not all zero on ``worker_types``; ``rates[p, j] = (rate of first, rate
        of second)``. Built per scale factor from index arrays (no Python loop over pairs).
        """
        keys = np.asarray(key_index)
        cols = self.type_columns(worker_types)
        K = len(self.keys)
        both = np.zeros((K, K, len(cols), 2))
        if self.pair_keys:
            pk = np.asarray(self.pair_keys)
            rates = np.nan_to_num(self.pair_rates[:, cols, :])
            both[pk[:, 1], pk[:, 0]] = rates[:, :, ::-1]
            both[pk[:, 0], pk[:, 1]] = rates
        both = both.reshape(K * K, len(cols), 2)
        shares = both.sum(axis=(1, 2)) > 0
        firsts, seconds, out = [], [], []
        for s in np.unique(scale_factors):
            members = np.flatnonzero(scale_factors == s)
            a, b = np.triu_indices(members.size, k=1)
            a, b = members[a], members[b]
            code = keys[a] * K + keys[b]
            keep = shares[code]
            firsts.append(a[keep])
            seconds.append(b[keep])
            out.append(both[code[keep]])
        return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(out)


def parse_key(text: str, where: str) -> JobKey:
    """``"('ResNet-18 (batch size 16)', 1)"`` -> ``('ResNet-18 (batch size 16)', 1)``."""
    value = _literal_key(text)
    if value is None:
        raise ThroughputTableError(f"{where}: job key {text!r} is not of the form ('<model>', <scale>)")
    return value


@functools.lru_cache(maxsize=4096)
def _literal_key(text: str) -> JobKey | None:
    """The key in ``text``, or None (memoized: a table repeats every key once per pair)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    if (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
            and type(value[1]) is int and 1 <= value[1] < LIMIT):
        return value
    return None


def _rate(value, where: str) -> float:
    return json_number(value, lambda problem: ThroughputTableError(f"{where}: {problem}"), minimum=0)


GAVEL_TABLE_NAME = "simulation_throughputs.json"


def find_gavel_table(near: str | os.PathLike, levels: int = 2) -> Path | None:
    """Gavel's ``simulation_throughputs.json`` for a trace: in the trace's folder or up to
    ``levels`` folders above it, or in a subfolder of one of those (Gavel's own layout keeps
    traces and the table side by side); None if there is none."""
    folder = Path(near).resolve().parent
    for _ in range(levels + 1):
        hits = [folder / GAVEL_TABLE_NAME, *sorted(folder.glob(f"*/{GAVEL_TABLE_NAME}"))]
        for hit in hits:
            if hit.is_file():
                return hit
        folder = folder.parent
    return None


def read_gavel_json(path: str | os.PathLike) -> ThroughputTable:
    """Read a throughput table in Gavel's JSON format (errors name file and entry)."""
    src = os.fspath(path)
    return table_from_gavel_dict(load_json(src, ThroughputTableError), src)


def table_from_gavel_dict(raw, src: str = "<memory>") -> ThroughputTable:
    if not isinstance(raw, dict) or not raw:
        raise ThroughputTableError(f"{src}: expected an object of worker types at the top level")
    types = [t for t in raw if not t.endswith(UNCONSOLIDATED)]
    if not types:
        raise ThroughputTableError(f"{src}: no worker types")
    entries: dict[str, dict[JobKey, dict]] = {}
    for wtype, jobs in raw.items():
        if not isinstance(jobs, dict):
            raise ThroughputTableError(f"{src}: worker type {wtype!r}: expected an object of job types")
        entries[wtype] = {}
        for text, rec in jobs.items():
            where = f"{src}: {wtype} -> {text}"
            key = parse_key(text, f"{src}: {wtype}")
            if not isinstance(rec, dict) or "null" not in rec:
                raise ThroughputTableError(f"{where}: expected an object with a 'null' (isolated) rate")
            entries[wtype][key] = rec
    keys = sorted({k for t in types for k in entries[t]}, key=lambda k: (k[1], k[0]))
    index = {k: i for i, k in enumerate(keys)}
    n = len(types)
    isolated = np.zeros((len(keys), n))
    unconsolidated = np.full((len(keys), n), np.nan)
    pair_rates: dict[tuple[int, int], list[tuple[float, float]]] = {}
    missing = (math.nan, math.nan)
    for j, wtype in enumerate(types):
        for key, rec in entries[wtype].items():
            where = f"{src}: {wtype} -> {key!r}"
            isolated[index[key], j] = _rate(rec["null"], f"{where} -> null")
            for other_text, pair in rec.items():
                if other_text == "null":
                    continue
                other = parse_key(other_text, where)
                if other not in index:
                    continue
                pw = f"{where} -> {other_text}"
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ThroughputTableError(f"{pw}: expected a pair [own, other] of rates")
                a, b = index[key], index[other]
                rates = pair_rates.get((a, b))
                if rates is None:
                    rates = pair_rates[(a, b)] = [missing] * n
                rates[j] = (_rate(pair[0], pw), _rate(pair[1], pw))
        for key, rec in entries.get(wtype + UNCONSOLIDATED, {}).items():
            if key in index:
                unconsolidated[index[key], j] = _rate(rec["null"], f"{src}: {wtype}{UNCONSOLIDATED} -> {key!r}")
    pkeys = tuple(sorted(pair_rates))
    prates = np.array([pair_rates[p] for p in pkeys], dtype=float).reshape(len(pkeys), n, 2)
    return ThroughputTable(tuple(types), tuple(keys), isolated, unconsolidated, pkeys, prates, src)


def table_to_gavel_dict(table: ThroughputTable) -> dict:
    """The table in Gavel's JSON layout (NaN entries omitted)."""
    out: dict[str, dict] = {}

    def fmt(key) -> str:
        return repr((key[0], key[1]))

    by_first: dict[int, list[int]] = {}
    for p, (a, _) in enumerate(table.pair_keys):
        by_first.setdefault(a, []).append(p)
    for j, wtype in enumerate(table.worker_types):
        jobs, uncons = {}, {}
        for k, key in enumerate(table.keys):
            rec = {"null": float(table.isolated[k, j])}
            for p in by_first.get(k, []):
                rates = table.pair_rates[p, j]
                if not np.isnan(rates).any():
                    rec[fmt(table.keys[table.pair_keys[p][1]])] = [float(rates[0]), float(rates[1])]
            jobs[fmt(key)] = rec
            if not np.isnan(table.unconsolidated[k, j]):
                uncons[fmt(key)] = {"null": float(table.unconsolidated[k, j])}
        out[wtype] = jobs
        if uncons:
            out[wtype + UNCONSOLIDATED] = uncons
    return out


def write_gavel_json(table: ThroughputTable, path: str | os.PathLike) -> None:
    """Write the table in Gavel's format, atomically."""
    write_atomically(Path(path), json.dumps(table_to_gavel_dict(table), indent=1))

