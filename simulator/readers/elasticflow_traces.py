"""Deadline job traces: ElasticFlow's CSV (with its ITP and Philly variants) and Chronus's SLO CSV.

ElasticFlow, one job per row after a header; columns are found by name, others are ignored::

    job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration[,best_effort]

Times are seconds, ``ddl`` is an absolute deadline, ``iteration`` the total iterations at the global
``batch_size``, ``num_gpu`` the GPUs requested, ``duration`` the isolated run time; ``best_effort`` 1
means no deadline (``deadline`` = inf, ``ddl`` then only has to be a number). The public ITP traces
name three columns differently (``submission_time``, ``num_iteration``, ``deadline``); ElasticFlow's
Philly trace adds ``real_iteration`` and ``real_duration``, which are ignored.

Chronus (``job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,expect_time_list,
expect_value_list,best_effort,job_type``; the ``batch_size`` column that chronus-scheduler's converter
from ElasticFlow traces adds is read when present). What the published chronus-scheduler
(pkusys/ElasticFlow) does with it:

- ``expect_time_list`` holds offsets from the submission: a job meets option k when it finishes by
  ``submit_time + expect_time_list[k]``, and its converter writes ``ddl - submit_time``. Options are
  tried in list order and the first met one scores; neither list is checked for order, nor is it here.
- The simulator has one clock in the trace's unit: ``submit_time``, ``duration`` and the offsets share
  it. For the Chronus traces it is minutes (an hour is 60 ticks, measured seconds are divided by 60);
  the converter copies ElasticFlow's seconds. ``minutes=True`` multiplies these three by 60.
  Its reader and lease scheduler never use ``interval``, which is kept as written.
- Best-effort rows carry a placeholder option (offset = submission time) that is never used: here they
  have no options and ``deadline`` inf. ``best_effort`` is 1 exactly when ``job_type`` is ``best``.
- Rows with ``num_gpu`` 0 are skipped by the published reader; they are kept here (``num_gpus`` 0), so
  filter on ``num_gpus > 0`` to reproduce it.

Errors are :class:`DeadlineInputError` with messages ``PATH:LINE: column NAME: problem``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from simulator.readers.csv_rows import CsvRows
from simulator.readers.csv_rows import read_csv_rows as read_rows
from simulator.readers.fields import parse_numbers, shown


class DeadlineInputError(ValueError):
    """A malformed trace, cluster spec or throughput table; the message names file, line and column."""


def read_csv_rows(path: str | os.PathLike, what: str) -> CsvRows:
    """:func:`.csv_rows.read_csv_rows` with this module's :class:`DeadlineInputError` (also for
    :mod:`.node_cluster` and :mod:`.iteration_tables`)."""
    return read_rows(path, what, DeadlineInputError)


def _require_jobs(table: CsvRows) -> None:
    if not table.rows:
        raise DeadlineInputError(f"{table.source}:{table.header_line}: no jobs after the header")


def _flags(table: CsvRows, name: str) -> np.ndarray:
    flags = table.numbers(name, integer=True)
    if (bad := (flags != 0) & (flags != 1)).any():
        i = int(np.argmax(bad))
        raise table.error(i, name, f"expected 0 or 1, got {shown(table.column(name)[i])}")
    return flags.astype(bool)


@dataclass(frozen=True)
class DeadlineTrace:
    """Jobs as arrays in file order: ``submit`` and ``duration`` (isolated run time) in seconds,
    ``deadline`` absolute (s, inf for best-effort jobs), total ``iterations`` at the global ``batch_size``,
    ``num_gpus`` requested."""

    job_ids: np.ndarray
    submit: np.ndarray
    iterations: np.ndarray
    model: np.ndarray
    deadline: np.ndarray
    batch_size: np.ndarray
    num_gpus: np.ndarray
    duration: np.ndarray
    best_effort: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.job_ids)


# field order: job id, submit, iterations, model, deadline, batch size, GPUs, duration
ELASTICFLOW_COLUMNS = ("job_id", "submit_time", "iteration", "model_name", "ddl", "batch_size", "num_gpu", "duration")
ITP_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline", "batch_size", "num_gpu",
               "duration")


def read_deadline_trace(path: str | os.PathLike) -> DeadlineTrace:
    """Read an ElasticFlow, ITP or Philly deadline trace (format chosen by header)."""
    table = read_csv_rows(path, "deadline trace")
    columns = min((ELASTICFLOW_COLUMNS, ITP_COLUMNS), key=lambda names: len(table.missing(names)))
    if table.missing(columns):
        raise DeadlineInputError(
            f"{table.source}:{table.header_line}: unknown deadline trace header: missing column(s) "
            f"{', '.join(table.missing(columns))} (expected {','.join(ELASTICFLOW_COLUMNS)}[,best_effort] "
            f"or {','.join(ITP_COLUMNS)})")
    _require_jobs(table)
    job_id, submit_col, iter_col, model_col, ddl_col, batch_col, gpu_col, duration_col = columns
    submit = table.numbers(submit_col, minimum=0)
    best_effort = (_flags(table, "best_effort") if "best_effort" in table.header
                   else np.zeros(len(table.rows), dtype=bool))
    deadline = table.numbers(ddl_col, finite=False)
    late = ~best_effort & ~(np.isfinite(deadline) & (deadline >= submit))
    if late.any():
        i = int(np.argmax(late))
        text = table.rows[i][table.header.index(ddl_col)].strip()
        raise table.error(i, ddl_col, f"must be finite unless best_effort is 1, got {text!r}"
                          if not math.isfinite(deadline[i]) else
                          f"deadline {text} is before {submit_col} {table.column(submit_col)[i]}")
    deadline[best_effort] = np.inf
    return DeadlineTrace(
        job_ids=table.names(job_id), submit=submit,
        iterations=table.numbers(iter_col, minimum=0, strict=True), model=table.names(model_col),
        deadline=deadline, batch_size=table.numbers(batch_col, minimum=1, integer=True),
        num_gpus=table.numbers(gpu_col, minimum=1, integer=True),
        duration=table.numbers(duration_col, minimum=0, strict=True), best_effort=best_effort,
        source=table.source,
    )


def _cell(value) -> str:
    """A number as the shortest text that reads back to the same float."""
    return "inf" if value == math.inf else repr(float(value)) if not float(value).is_integer() else str(int(value))


def deadline_trace_text(trace: DeadlineTrace) -> str:
    """The trace in ElasticFlow's columns, with ``best_effort`` (read back by :func:`read_deadline_trace`)."""
    lines = [",".join((*ELASTICFLOW_COLUMNS, "best_effort"))]
    for j in range(len(trace)):
        ddl = trace.submit[j] if trace.best_effort[j] else trace.deadline[j]
        lines.append(",".join((str(trace.job_ids[j]), _cell(trace.submit[j]), _cell(trace.iterations[j]),
                               str(trace.model[j]), _cell(ddl), str(int(trace.batch_size[j])),
                               str(int(trace.num_gpus[j])), _cell(trace.duration[j]), str(int(trace.best_effort[j])))))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ChronusTrace:
    """Chronus jobs as arrays in file order (times in seconds when read with ``minutes=True``).

    Deadline options in CSR form: job ``j`` has options ``option_offsets[j]:option_offsets[j + 1]`` of
    ``option_time`` (absolute deadline) and ``option_value``; ``option_job`` names each option's job.
    Best-effort jobs have none. ``batch_size`` is None unless the file has that column.
    """

    job_ids: np.ndarray
    users: np.ndarray
    num_gpus: np.ndarray
    submit: np.ndarray
    iterations: np.ndarray
    model: np.ndarray
    duration: np.ndarray
    interval: np.ndarray
    best_effort: np.ndarray
    job_type: np.ndarray
    option_job: np.ndarray
    option_time: np.ndarray
    option_value: np.ndarray
    option_offsets: np.ndarray
    batch_size: np.ndarray | None
    source: str

    def __len__(self) -> int:
        return len(self.job_ids)

    @property
    def deadline(self) -> np.ndarray:
        """Each job's first option time (the one the published scheduler treats as its deadline); inf if none."""
        first = np.full(len(self), np.inf)
        has = np.diff(self.option_offsets) > 0
        first[has] = self.option_time[self.option_offsets[:-1][has]]
        return first


CHRONUS_COLUMNS = ("job_id", "user", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval",
                   "expect_time_list", "expect_value_list", "best_effort", "job_type")
JOB_TYPES = ("strict", "soft", "best")


def chronus_trace_text(trace: ChronusTrace, *, minutes: bool = True) -> str:
    """The trace in Chronus's columns (``batch_size`` where it has one), times in minutes when
    ``minutes``; a best-effort job gets the placeholder option the published traces carry."""
    scale = 60.0 if minutes else 1.0
    header = CHRONUS_COLUMNS + (("batch_size",) if trace.batch_size is not None else ())
    lines = [",".join(header)]
    for j in range(len(trace)):
        lo, hi = trace.option_offsets[j], trace.option_offsets[j + 1]
        offsets = (trace.option_time[lo:hi] - trace.submit[j]) / scale if hi > lo else [trace.submit[j] / scale]
        values = trace.option_value[lo:hi] if hi > lo else [0.0]
        row = [str(trace.job_ids[j]), str(trace.users[j]), str(int(trace.num_gpus[j])), _cell(trace.submit[j] / scale),
               _cell(trace.iterations[j]), str(trace.model[j]), _cell(trace.duration[j] / scale),
               _cell(trace.interval[j]), "-".join(map(_cell, offsets)), "-".join(map(_cell, values)),
               str(int(trace.best_effort[j])), str(trace.job_type[j])]
        if trace.batch_size is not None:
            row.append(str(int(trace.batch_size[j])))
        lines.append(",".join(row))
    return "\n".join(lines) + "\n"


def read_chronus_trace(path: str | os.PathLike, *, minutes: bool = True) -> ChronusTrace:
    """Read a Chronus SLO trace; ``minutes``: its times are minutes (the published traces), else seconds."""
    table = read_csv_rows(path, "Chronus trace")
    table.require(CHRONUS_COLUMNS, "Chronus trace")
    _require_jobs(table)
    scale = 60.0 if minutes else 1.0
    submit = table.numbers("submit_time", minimum=0) * scale
    best_effort = _flags(table, "best_effort")
    job_type = table.names("job_type")
    for i, (kind, flag) in enumerate(zip(job_type, best_effort)):
        if kind not in JOB_TYPES:
            raise table.error(i, "job_type", f"expected one of {', '.join(JOB_TYPES)}, got {kind!r}")
        if (kind == "best") != flag:
            raise table.error(i, "job_type", f"{kind!r} contradicts best_effort {int(flag)}")
    time_items = [text.split("-") for text in table.column("expect_time_list")]
    value_items = [text.split("-") for text in table.column("expect_value_list")]
    for i, (times, values) in enumerate(zip(time_items, value_items)):
        if len(times) != len(values):
            raise table.error(i, "expect_value_list", f"{len(values)} values ({shown('-'.join(values))}) for "
                                                      f"{len(times)} expect_time_list entries "
                                                      f"({shown('-'.join(times))})")
    counts = np.array([len(times) for times in time_items], dtype=np.int64)
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts

    def options(name: str, items: list[list[str]]) -> np.ndarray:
        cells = table.column(name)
        return parse_numbers([item for row in items for item in row], lambda k, problem: table.error(
            owner[k], name, f"item {k - starts[owner[k]] + 1} of {shown(cells[owner[k]])}: {problem}"), minimum=0)

    offsets, values = options("expect_time_list", time_items), options("expect_value_list", value_items)
    keep = ~best_effort[owner]
    option_job = owner[keep]
    return ChronusTrace(
        job_ids=table.names("job_id"), users=table.names("user"),
        num_gpus=table.numbers("num_gpu", minimum=0, integer=True), submit=submit,
        iterations=table.numbers("iterations", minimum=0, strict=True), model=table.names("model_name"),
        duration=table.numbers("duration", minimum=0, strict=True) * scale,
        interval=table.numbers("interval", minimum=0), best_effort=best_effort, job_type=job_type,
        option_job=option_job, option_time=submit[option_job] + offsets[keep] * scale, option_value=values[keep],
        option_offsets=np.concatenate(([0], np.cumsum(np.where(best_effort, 0, counts)))),
        batch_size=(table.numbers("batch_size", minimum=1, integer=True) if "batch_size" in table.header else None),
        source=table.source,
    )
