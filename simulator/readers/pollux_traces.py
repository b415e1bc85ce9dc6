"""Pollux's workload traces (``workloads*/workload-N.csv`` of the Pollux artifact).

One row per job: ``name`` (``<application>-<index>``), ``time`` (submission, s from the start),
``application`` (one of the measured applications, :mod:`simulator.applications`),
``num_replicas`` and ``batch_size``: the job's tuned configuration (GPUs, global batch), which
the fixed-configuration baselines run and Pollux ignores.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass

import numpy as np

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
    src = os.fspath(path)
    names, times, apps, replicas, batches = [], [], [], [], []
    try:
        with open(src, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            missing = [c for c in POLLUX_COLUMNS if c not in header]
            if missing:
                raise PolluxInputError(f"{src}:1: missing column(s) {', '.join(missing)}")
            col = {c: header.index(c) for c in POLLUX_COLUMNS}
            for line, row in enumerate(reader, start=2):
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) < len(header):
                    raise PolluxInputError(f"{src}:{line}: expected {len(header)} fields, got {len(row)}")
                names.append(row[col["name"]].strip())
                apps.append(row[col["application"]].strip())
                times.append(_number(src, line, "time", row[col["time"]], float, 0))
                replicas.append(_number(src, line, "num_replicas", row[col["num_replicas"]], int, 1))
                batches.append(_number(src, line, "batch_size", row[col["batch_size"]], int, 1))
    except OSError as exc:
        raise PolluxInputError(f"{src}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise PolluxInputError(f"{src}: not a text file ({exc.reason})") from None
    if not names:
        raise PolluxInputError(f"{src}: no jobs")
    return PolluxTrace(np.array(names, dtype=object), np.array(times), np.array(apps, dtype=object),
                       np.array(replicas, dtype=np.int64), np.array(batches, dtype=np.int64), src)


def _number(src: str, line: int, column: str, text: str, kind, least):
    try:
        value = kind(text.strip())
    except ValueError:
        raise PolluxInputError(f"{src}:{line}: column {column!r}: not a{'n integer' if kind is int else ' number'}: "
                               f"{text!r}") from None
    if not (value >= least and np.isfinite(value)):
        raise PolluxInputError(f"{src}:{line}: column {column!r}: must be >= {least}, got {text.strip()}")
    return value


def pollux_trace_text(trace: PolluxTrace) -> str:
    """The trace as a Pollux workload CSV (what :func:`read_pollux_trace` reads back)."""
    lines = [",".join(POLLUX_COLUMNS)]
    for name, t, app, r, b in zip(trace.names, trace.time, trace.application, trace.num_replicas,
                                  trace.batch_size, strict=True):
        lines.append(f"{name},{int(t) if float(t).is_integer() else repr(float(t))},{app},{int(r)},{int(b)}")
    return "\n".join(lines) + "\n"
