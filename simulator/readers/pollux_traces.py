"""Pollux's workload traces (``workloads*/workload-N.csv`` of the Pollux artifact).

One row per job: ``name`` (``<application>-<index>``), ``time`` (submission, s from the start),
``application`` (one of the measured applications, :mod:`simulator.applications`),
``num_replicas`` and ``batch_size``: the job's tuned configuration (GPUs, global batch), which
the fixed-configuration baselines run and Pollux ignores. Read by :mod:`.csv_rows` (numbers by
:mod:`.fields`): errors name the file, the line and the column.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from simulator.applications import MAX_EPOCHS
from simulator.readers.csv_rows import read_csv_rows
from simulator.readers.fields import shown

#: the header of a Pollux workload
POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


class PolluxInputError(ValueError):
    """A malformed Pollux workload (the message names the file, line and column)."""


@dataclass(frozen=True)
class PolluxTrace:
    names: np.ndarray
    time: np.ndarray
    application: np.ndarray
    num_replicas: np.ndarray
    batch_size: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.time)


def is_pollux_workload(path: str | os.PathLike) -> bool:
    """Whether the file's first line is a Pollux workload's header."""
    try:
        with open(path, encoding="utf-8") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return set(POLLUX_COLUMNS) <= {c.strip() for c in first.split(",")}


def read_pollux_trace(path: str | os.PathLike) -> PolluxTrace:
    """Read a Pollux workload; a bad line is one :class:`PolluxInputError` naming file, line, column."""
    table = read_csv_rows(path, "Pollux workload", PolluxInputError)
    table.require(POLLUX_COLUMNS, "Pollux workload")
    if not table.rows:
        raise PolluxInputError(f"{table.source}:{table.header_line}: no jobs after the header")
    applications = table.names("application")
    unknown = ~np.isin(applications, np.array(list(MAX_EPOCHS), dtype=object))
    if unknown.any():
        i = int(np.argmax(unknown))
        raise table.error(i, "application", f"unknown application {shown(applications[i])} (known: "
                                            f"{', '.join(MAX_EPOCHS)})")
    return PolluxTrace(table.names("name"), table.numbers("time", minimum=0), applications,
                       table.numbers("num_replicas", minimum=1, integer=True),
                       table.numbers("batch_size", minimum=1, integer=True), table.source)


def pollux_trace_text(trace: PolluxTrace) -> str:
    """The trace as a Pollux workload CSV (what :func:`read_pollux_trace` reads back)."""
    lines = [",".join(POLLUX_COLUMNS)]
    for name, t, app, r, b in zip(trace.names, trace.time, trace.application, trace.num_replicas,
                                  trace.batch_size, strict=True):
        lines.append(f"{name},{int(t) if float(t).is_integer() else repr(float(t))},{app},{int(r)},{int(b)}")
    return "\n".join(lines) + "\n"
