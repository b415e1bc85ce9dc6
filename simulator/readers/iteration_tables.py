"""Iterations per second of each model at a global batch size on n GPUs (ElasticFlow's throughput tables).

A directory holds one ``MODEL.csv`` per model; every file has the same GPU-count columns::

    global_batch_size,1,2,4,8,16,32,64
    64,6.03,8.64,10.36,11.06,10.99,10.61,9.25

one row per global batch size; an empty cell or ``nan`` means the GPU count is unsupported (NaN here).

What the published ElasticFlow simulator (pkusys/ElasticFlow, ``ElasticFlow/scheduler``) does, and what
is done here:

- Lookup is exact: it keys the tables by the batch size's and GPU count's text, so a batch size without
  a row fails there (KeyError) and there is no interpolation or nearest row. Here an unknown batch size
  or model raises :class:`DeadlineInputError` (there, an unknown model name silently becomes resnet50).
- Largest GPU count: its baseline policies take the largest count whose cell is not the text ``nan``,
  capped at 64 and at the batch size; that is :meth:`IterationTable.max_gpus`, with "supported" meaning
  a finite positive value (an empty cell or a 0 is not: resnet50_cifar10's zero columns give 8 here,
  64 there). ElasticFlow's own policy (``ef``, ``ef-accessctrl``) instead uses caps set by hand per GPU
  type, model and batch size in its ``models.py``: :func:`elasticflow_max_gpus`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from simulator.readers.csv_rows import CsvRows
from simulator.readers.elasticflow_traces import DeadlineInputError, read_csv_rows
from simulator.readers.fields import parse_numbers


@dataclass(frozen=True)
class IterationTable:
    """Per model: ``batch_sizes`` (int64 rows) and ``rates`` (rows × ``gpu_counts``, iterations/s, NaN
    unsupported), read from ``directory``."""

    directory: str
    gpu_counts: np.ndarray
    batch_sizes: dict[str, np.ndarray]
    rates: dict[str, np.ndarray]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted(self.rates))

    def curve(self, model: str, batch_size: int) -> np.ndarray:
        """Iterations/s of ``model`` at this global batch size on each of :attr:`gpu_counts` GPUs."""
        if model not in self.rates:
            raise DeadlineInputError(f"unknown model {model!r}: no {model}.csv in {self.directory} "
                                     f"(models: {', '.join(self.models)})")
        rows = np.flatnonzero(self.batch_sizes[model] == batch_size)
        if not rows.size:
            raise DeadlineInputError(
                f"{os.path.join(self.directory, model + '.csv')}: no row for global batch size {batch_size} "
                f"(rows: {', '.join(map(str, self.batch_sizes[model]))}); batch sizes are looked up exactly")
        return self.rates[model][rows[0]].copy()

    def max_gpus(self, model: str, batch_size: int) -> int:
        """The largest GPU count, at most ``batch_size``, with a finite positive rate (0 if none)."""
        curve = self.curve(model, batch_size)
        ok = np.isfinite(curve) & (curve > 0) & (self.gpu_counts <= batch_size)
        return int(self.gpu_counts[ok].max()) if ok.any() else 0

    def curves(self, models: Sequence[str] | np.ndarray, batch_sizes: Sequence[int] | np.ndarray) -> np.ndarray:
        """(jobs × GPU counts) :meth:`curve` of each job's model and batch size, one lookup per distinct pair."""
        models, batch_sizes = np.asarray(models, dtype=object), np.asarray(batch_sizes)
        if models.ndim != 1 or models.shape != batch_sizes.shape:
            raise ValueError(f"models and batch_sizes must be 1-D and of equal length, got shapes {models.shape} "
                             f"and {batch_sizes.shape}")
        pairs: dict[tuple[str, int], int] = {}
        index = np.array([pairs.setdefault(pair, len(pairs)) for pair in zip(models.tolist(), batch_sizes.tolist())],
                         dtype=np.int64)
        rows = np.empty((len(pairs), len(self.gpu_counts)))
        for k, (model, batch_size) in enumerate(pairs):
            rows[k] = self.curve(model, batch_size)
        return rows[index]


def _gpu_counts(table: CsvRows) -> np.ndarray:
    where = f"{table.source}:{table.header_line}"
    if len(table.header) < 2 or table.header[0] != "global_batch_size":
        raise DeadlineInputError(f"{where}: column 1: expected the header global_batch_size,<GPU count>,..., "
                                 f"got {','.join(table.header)!r}")
    counts = parse_numbers(table.header[1:], lambda k, problem: DeadlineInputError(
        f"{where}: column {k + 2}: GPU count {problem}"), minimum=1, integer=True)
    if (np.diff(counts) <= 0).any():
        k = int(np.argmax(np.diff(counts) <= 0)) + 1
        raise DeadlineInputError(f"{where}: column {k + 2}: GPU counts must increase, got {','.join(table.header[1:])}")
    return counts


def _rates(table: CsvRows, name: str) -> np.ndarray:
    texts = table.column(name)
    given = [i for i, text in enumerate(texts) if text and text.lower() != "nan"]
    values = np.full(len(texts), np.nan)
    values[given] = parse_numbers([texts[i] for i in given], lambda k, problem: table.error(
        given[k], repr(name), problem), minimum=0)
    return values


def read_throughput_dir(directory: str | os.PathLike) -> IterationTable:
    """Read every ``*.csv`` in ``directory`` (model name = file stem)."""
    src = os.fspath(directory)
    if not os.path.isdir(src):
        raise DeadlineInputError(f"{src}: not a directory")
    paths = sorted(Path(src).glob("*.csv"))
    if not paths:
        raise DeadlineInputError(f"{src}: no *.csv throughput tables")
    gpu_counts, first, first_header = None, "", ""
    batch_sizes, rates = {}, {}
    for path in paths:
        table = read_csv_rows(path, "throughput table")
        counts = _gpu_counts(table)
        if gpu_counts is None:
            gpu_counts, first, first_header = counts, table.source, ",".join(table.header[1:])
        elif not np.array_equal(counts, gpu_counts):
            n = min(len(counts), len(gpu_counts))
            differ = np.flatnonzero(counts[:n] != gpu_counts[:n])
            k = int(differ[0]) if differ.size else n
            raise DeadlineInputError(
                f"{table.source}:{table.header_line}: column {k + 2}: GPU counts {','.join(table.header[1:])} "
                f"differ from {first}'s {first_header}")
        if not table.rows:
            raise DeadlineInputError(f"{table.source}:{table.header_line}: no batch-size rows after the header")
        batch = table.numbers("global_batch_size", minimum=1, integer=True)
        texts = table.column("global_batch_size")
        for i in range(1, len(batch)):
            if batch[i] in batch[:i]:
                raise table.error(i, "global_batch_size", f"batch size {texts[i]} appears twice (line "
                                                          f"{table.lines[int(np.argmax(batch[:i] == batch[i]))]})")
        batch_sizes[path.stem] = batch
        rates[path.stem] = np.column_stack([_rates(table, name) for name in table.header[1:]])
    return IterationTable(src, gpu_counts, batch_sizes, rates)


_EF_A100_CAPS = {("gpt2", 128): 16, ("gpt2", 256): 32, ("bert", 64): 8, ("inception3", 64): 16,
                 ("inception3", 128): 32, ("resnet50", 64): 32, ("vgg16", 64): 32}
_EF_T4_CAPS = {"bert": 16, "cifar10": 16, "yolov3": 4, "ncf": 1}


def elasticflow_max_gpus(model: str, batch_size: int, gpu_type: str = "A100") -> int:
    """The most GPUs ElasticFlow's own policy gives a job, as set by hand in the published simulator
    (restated, not derived from the tables): A100 deepspeech2 gets its batch size, bert 16 (8 at batch
    64), a few (model, batch) pairs fixed caps, the rest min(batch size, 64); on T4 bert and cifar10 get
    16, deepspeech2 at batch 320 32, yolov3 4, ncf 1, the rest 64."""
    if gpu_type == "T4":
        return 32 if (model, batch_size) == ("deepspeech2", 320) else _EF_T4_CAPS.get(model, 64)
    if gpu_type != "A100":
        raise ValueError(f"gpu_type must be 'A100' or 'T4', got {gpu_type!r}")
    if model == "deepspeech2":
        return int(batch_size)
    if model == "bert" and batch_size != 64:
        return 16
    return _EF_A100_CAPS.get((model, batch_size), min(int(batch_size), 64))
