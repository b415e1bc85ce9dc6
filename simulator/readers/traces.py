"""Job traces in Gavel's tab-separated format: read, validated, written.

Ten columns per line (job id = line number, from 0):

    job_type  command  working_dir  num_steps_arg  needs_data_dir  total_steps
    scale_factor  priority_weight  SLO  arrival_time

``SLO`` is -1 for none; ``arrival_time`` is in seconds. The legacy seven-column variant
has ``job_type command num_steps_arg needs_data_dir total_steps arrival_time
scale_factor`` (no working dir, priority 1, no SLO). Shockwave's twelve-column variant
adds ``mode`` (static / accordion / gns: how the job adapts its batch size) after
``scale_factor`` and ``duration`` (the job's isolated run time in seconds, as generated)
before ``arrival_time``. Errors name the file, the line and the column; numbers are read by
:mod:`.fields` (finite, below 2**63, integers exact).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.files import write_atomically
from simulator.readers.fields import parse_numbers, read_text, shown

COLUMNS = ("job_type", "command", "working_dir", "num_steps_arg", "needs_data_dir", "total_steps",
           "scale_factor", "priority_weight", "SLO", "arrival_time")
LEGACY_COLUMNS = ("job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time",
                  "scale_factor")
SHOCKWAVE_COLUMNS = ("job_type", "command", "working_dir", "num_steps_arg", "needs_data_dir", "total_steps",
                     "scale_factor", "mode", "priority_weight", "SLO", "duration", "arrival_time")
MODES = ("static", "accordion", "gns")


class TraceError(ValueError):
    """A malformed trace; the message is ``file:line: column N (name): problem``."""


@dataclass(frozen=True)
class Trace:
    """Jobs as parallel arrays, in file order; ``slo`` is inf where the job has none;
    ``modes`` says how each job adapts its batch size ("static" unless the trace says) and
    ``durations`` its generated isolated run time (NaN where the trace has none)."""

    job_types: tuple[str, ...]
    commands: tuple[str, ...]
    working_dirs: tuple[str, ...]
    num_steps_args: tuple[str, ...]
    needs_data_dir: np.ndarray
    total_steps: np.ndarray
    scale_factors: np.ndarray
    weights: np.ndarray
    slo: np.ndarray
    arrival_times: np.ndarray
    source: str = "<memory>"
    modes: tuple[str, ...] | None = None
    durations: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.modes is None:
            object.__setattr__(self, "modes", ("static",) * len(self.job_types))
        if self.durations is None:
            object.__setattr__(self, "durations", np.full(len(self.job_types), np.nan))

    def __len__(self) -> int:
        return len(self.job_types)

    @property
    def adaptive(self) -> bool:
        """Some job changes its batch size while it trains."""
        return any(mode != "static" for mode in self.modes)


def read_trace(path: str | os.PathLike) -> Trace:
    """Read a 10-column Gavel trace (or its legacy 7-column or Shockwave's 12-column variant); the
    numbers of each column are read at once (:func:`~.fields.parse_numbers`)."""
    src = os.fspath(path)
    lines = read_text(src, TraceError, "\t").split("\n")
    records = [(n, line.split("\t")) for n, line in enumerate(lines, start=1) if line.strip()]
    if not records:
        raise TraceError(f"{src}: no jobs")
    columns = {len(c): c for c in (LEGACY_COLUMNS, COLUMNS, SHOCKWAVE_COLUMNS)}.get(len(records[0][1]), COLUMNS)
    for n, parts in records:
        if len(parts) != len(columns):
            raise TraceError(f"{src}:{n}: expected {len(columns)} tab-separated columns "
                             f"({', '.join(columns)}), got {len(parts)}")
    cells = {name: [parts[k].strip() for _, parts in records] for k, name in enumerate(columns)}

    def error(i: int, name: str, problem: str) -> TraceError:
        return TraceError(f"{src}:{records[i][0]}: column {columns.index(name) + 1} ({name}): {problem}")

    def numbers(name: str, **checks) -> np.ndarray:
        return parse_numbers(cells[name], lambda i, problem: error(i, name, problem), **checks)

    def refuse(bad: np.ndarray, name: str, problem: str) -> None:
        if bad.any():
            i = int(np.argmax(bad))
            raise error(i, name, f"{problem}, got {shown(cells[name][i])}")

    n = len(records)
    if "" in cells["job_type"]:
        raise error(cells["job_type"].index(""), "job_type", "empty")
    needs = numbers("needs_data_dir", integer=True)
    refuse((needs != 0) & (needs != 1), "needs_data_dir", "expected 0 or 1")
    if "mode" in cells:
        refuse(~np.isin(cells["mode"], MODES), "mode", f"expected one of {', '.join(MODES)}")
    legacy = columns is LEGACY_COLUMNS
    slo = np.full(n, -1.0) if legacy else parse_numbers(
        cells["SLO"], lambda i, problem: error(i, "SLO", f"{problem} (-1 for none)"))
    refuse(slo == 0, "SLO", "must be > 0, or -1 for none")
    return Trace(
        job_types=tuple(cells["job_type"]), commands=tuple(cells["command"]),
        working_dirs=tuple(cells.get("working_dir", [""] * n)), num_steps_args=tuple(cells["num_steps_arg"]),
        needs_data_dir=needs, total_steps=numbers("total_steps", minimum=0, strict=True, integer=True),
        scale_factors=numbers("scale_factor", minimum=0, strict=True, integer=True),
        weights=np.ones(n) if legacy else numbers("priority_weight", minimum=0, strict=True),
        slo=np.where(slo < 0, math.inf, slo), arrival_times=numbers("arrival_time", minimum=0), source=src,
        modes=tuple(cells.get("mode", ["static"] * n)),
        durations=numbers("duration", minimum=0, strict=True) if "duration" in cells else np.full(n, np.nan),
    )


def trace_text(trace: Trace) -> str:
    """The trace in the 10-column format (SLO -1 where none), or in Shockwave's 12 columns
    when a job adapts its batch size or has a generated duration."""
    twelve = trace.adaptive or not np.isnan(trace.durations).all()
    lines = []
    for i in range(len(trace)):
        slo = -1.0 if math.isinf(trace.slo[i]) else trace.slo[i]
        head = (trace.job_types[i], trace.commands[i], trace.working_dirs[i], trace.num_steps_args[i],
                str(int(trace.needs_data_dir[i])), str(int(trace.total_steps[i])), str(int(trace.scale_factors[i])))
        if twelve:
            tail = (trace.modes[i], f"{trace.weights[i]:g}", f"{slo:f}", f"{trace.durations[i]:g}",
                    f"{trace.arrival_times[i]:g}")
        else:
            tail = (f"{trace.weights[i]:g}", f"{slo:f}", f"{trace.arrival_times[i]:f}")
        lines.append("\t".join(head + tail))
    return "\n".join(lines) + "\n"


def write_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write the trace (see :func:`trace_text`), atomically."""
    write_atomically(Path(path), trace_text(trace))
