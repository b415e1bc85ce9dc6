"""Job logs with virtual clusters: Helios' job-log CSV and the Philly CSV, as Lucid simulates them.

Helios (SC '21, HeliosData ``cluster_log.csv``; Lucid's Venus, Saturn and Philly logs use the same
columns)::

    job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration[,...]

read by name: ``vc``, ``gpu_num``, ``submit_time`` and ``duration`` are required, the job's id is
``job_id`` (``jobname`` where a log has no ``job_id``, as Helios' Philly log), ``user`` is kept where
present. The Philly CSV (``pollux/traces/philly.csv``)::

    timestamp,duration,num_gpus,gpu_time,cluster

has no id (a job's id is its rank in submission order, or an integer ``job_id`` column where one is
added)
and ``cluster`` is the VC id. In both, times are date-times (``YYYY-MM-DD[ HH:MM[:SS]]``, seconds
resolution) or numbers of seconds; ``duration`` is the run time alone (s), the GPUs requested an
integer >= 0. Every other column is kept as text, to write the log back (:func:`job_log_text`).

:func:`read_job_log` orders jobs by submission (ties in file order) and, as Lucid's trace preparation
(``simulation/utils.py``), may keep GPU jobs only, the VCs of a config and a submission window.
Errors are :class:`LucidInputError`: one line ``PATH:LINE: column NAME: problem``.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, replace
from typing import Iterable

import numpy as np

from simulator.readers.csv_rows import CsvRows, read_csv_rows
from simulator.readers.fields import LIMIT

#: the Philly CSV's header
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
#: the Helios columns a job log must have (and one of ``job_id`` / ``jobname``)
HELIOS_COLUMNS = ("vc", "gpu_num", "submit_time", "duration")
#: (VC, GPUs, submission) columns of the Philly CSV (True) and of a Helios log (False)
_ROLES = {True: ("cluster", "num_gpus", "timestamp"), False: ("vc", "gpu_num", "submit_time")}
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?")


class LucidInputError(ValueError):
    """A malformed job log, VC config or Lucid measurement file; the message names file, line and column."""


class Table(CsvRows):
    """A job-log CSV (:class:`~.csv_rows.CsvRows`): numbers below 2**63, date-time columns."""

    def numbers(self, name: str, *, minimum: float = 0.0, integer: bool = False) -> np.ndarray:
        """The column as finite floats (int64 when ``integer``), each >= ``minimum`` and below 2**63."""
        return super().numbers(name, minimum=minimum, integer=integer)

    def times(self, name: str) -> tuple[np.ndarray, bool]:
        """The column as seconds: date-times (as POSIX seconds, then ``True``) or numbers >= 0."""
        texts = self.column(name)
        if not texts or not _DATETIME.fullmatch(texts[0]):
            return self.numbers(name), False
        for i, text in enumerate(texts):
            if not _DATETIME.fullmatch(text):
                raise self.error(i, name, f"expected a date-time YYYY-MM-DD[ HH:MM[:SS]] like the first row's, "
                                          f"got {text!r}")
        try:
            stamps = np.array(texts, dtype="datetime64[s]")
        except ValueError:
            for i, text in enumerate(texts):
                try:
                    np.datetime64(text, "s")
                except ValueError:
                    raise self.error(i, name, f"not a valid date-time, got {text!r}") from None
            raise
        return stamps.astype(np.int64).astype(float), True


def read_table(path: str | os.PathLike, what: str) -> Table:
    """:func:`.csv_rows.read_csv_rows` as a :class:`Table`, errors :class:`LucidInputError`."""
    return read_csv_rows(path, what, LucidInputError, Table)


def is_philly_csv(header: Iterable[str]) -> bool:
    return set(PHILLY_COLUMNS) <= set(header)


def is_helios_log(header: Iterable[str]) -> bool:
    names = set(header)
    return set(HELIOS_COLUMNS) <= names and bool({"job_id", "jobname"} & names)


@dataclass(frozen=True)
class JobLog:
    """Jobs in submission order: ``submit`` in seconds (POSIX seconds when ``dated``: the file's times
    were date-times), ``origin`` the instant arrivals count from (the window's start, else the first
    submission), ``duration`` the run time alone (s), ``gpus`` requested, ``vc`` ids, ``users`` (None
    when the log has none). ``columns`` is the file's header (a Philly CSV's without ``job_id``, which the
    writer adds where needed); ``extra`` the other columns' text."""

    job_ids: np.ndarray
    users: np.ndarray | None
    vc: np.ndarray
    gpus: np.ndarray
    submit: np.ndarray
    duration: np.ndarray
    dated: bool
    origin: float
    philly: bool
    columns: tuple[str, ...]
    extra: dict[str, np.ndarray]
    source: str

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def arrival(self) -> np.ndarray:
        """Seconds from :attr:`origin`."""
        return self.submit - self.origin

    def select(self, keep: np.ndarray) -> JobLog:
        """The jobs where ``keep`` (a boolean mask or indices), in order; the origin stays."""
        return replace(self, job_ids=self.job_ids[keep], users=None if self.users is None else self.users[keep],
                       vc=self.vc[keep], gpus=self.gpus[keep], submit=self.submit[keep],
                       duration=self.duration[keep], extra={k: v[keep] for k, v in self.extra.items()})


def _instant(value, dated: bool, source: str) -> float:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        if dated:
            raise LucidInputError(f"{source}: window bound {value!r}: the log's times are date-times, give one")
        return float(value)
    if not dated:
        raise LucidInputError(f"{source}: window bound {value!r}: the log's times are seconds, give a number")
    try:
        return float(np.datetime64(value, "s").astype(np.int64))
    except ValueError:
        raise LucidInputError(f"{source}: window bound {value!r}: not a date-time") from None


def read_job_log(path: str | os.PathLike, *, window: tuple | None = None, vcs: Iterable[str] | None = None,
                 gpu_only: bool = True) -> JobLog:
    """Read a Helios job log or the Philly CSV (chosen by the header), in submission order.

    ``window``: (first, last) submission instants, both kept (date-times as ``"2017-10-01 00:00:00"``
    for dated logs, seconds otherwise); arrivals then count from ``first``. ``vcs``: keep only these
    VCs. ``gpu_only``: drop jobs requesting 0 GPUs (Lucid and Helios simulate GPU jobs only)."""
    table = read_table(path, "job log")
    philly = is_philly_csv(table.header)
    if not philly and not is_helios_log(table.header):
        raise LucidInputError(
            f"{table.source}:{table.header_line}: not a job log header: expected {','.join(PHILLY_COLUMNS)} or "
            f"Helios' job_id,user,vc,jobname,gpu_num,...,submit_time,...,duration (missing "
            f"{', '.join(c for c in HELIOS_COLUMNS if c not in table.header) or 'job_id / jobname'})")
    if not table.rows:
        raise LucidInputError(f"{table.source}:{table.header_line}: no jobs after the header")
    id_col = "job_id" if "job_id" in table.header else None if philly else "jobname"
    user_col = "user" if "user" in table.header else None
    vc_col, gpu_col, submit_col = _ROLES[philly]
    submit, dated = table.times(submit_col)
    used = {id_col, user_col, vc_col, gpu_col, submit_col, "duration"}
    order = np.argsort(submit, kind="stable")
    log = JobLog(
        job_ids=(table.numbers(id_col, integer=True) if philly else table.names(id_col))[order] if id_col
        else np.arange(len(submit)),
        users=np.array(table.column(user_col), dtype=object)[order] if user_col else None,
        vc=table.names(vc_col)[order], gpus=table.numbers(gpu_col, integer=True)[order], submit=submit[order],
        duration=table.numbers("duration")[order], dated=dated, origin=float(submit[order[0]]), philly=philly,
        columns=tuple(c for c in table.header if not (philly and c == "job_id")), source=table.source,
        extra={name: np.array(table.column(name), dtype=object)[order] for name in table.header if name not in used})
    keep = np.ones(len(log), dtype=bool)
    if gpu_only:
        keep &= log.gpus > 0
    if vcs is not None:
        keep &= np.isin(log.vc, np.array(list(vcs), dtype=object))
    if window is not None:
        first, last = (_instant(bound, dated, table.source) for bound in window)
        keep &= (log.submit >= first) & (log.submit <= last)
        log = replace(log, origin=first)
    log = log.select(keep)
    if not len(log):
        raise LucidInputError(f"{table.source}: no jobs left after the GPU, VC and window filters")
    return log if window is not None else replace(log, origin=float(log.submit[0]))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def job_log_text(log: JobLog) -> str:
    """The log in its file's columns (what :func:`read_job_log` reads back to an equal log; a Philly CSV
    gains a ``job_id`` column when its ids are not the submission ranks)."""
    columns = list(log.columns)
    if log.philly and "job_id" not in columns and not np.array_equal(log.job_ids, np.arange(len(log))):
        columns.append("job_id")
    if log.dated:
        times = np.char.replace(np.datetime_as_string(log.submit.astype("datetime64[s]"), unit="s"), "T", " ")
    else:
        times = [_number(t) for t in log.submit]
    vc_col, gpu_col, submit_col = _ROLES[log.philly]
    id_col = "job_id" if "job_id" in columns else "jobname"
    cells = {**log.extra, vc_col: log.vc, gpu_col: [str(int(g)) for g in log.gpus], submit_col: times,
             "duration": [_number(d) for d in log.duration], id_col: [str(j) for j in log.job_ids]}
    if log.users is not None:
        cells["user"] = log.users
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*(cells[name] for name in columns)))
    return out.getvalue()


__all__ = ["HELIOS_COLUMNS", "LIMIT", "PHILLY_COLUMNS", "JobLog", "LucidInputError", "Table", "is_helios_log",
           "is_philly_csv", "job_log_text", "read_job_log", "read_table"]
