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
from simulator.readers.fields import parse_number, read_text, shown

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


def _number(text: str, where: str, *, integer: bool = False, minimum: float = 0.0, strict: bool = False):
    return parse_number(text, lambda problem: TraceError(f"{where}: {problem}"), integer=integer, minimum=minimum,
                        strict=strict)


def read_trace(path: str | os.PathLike) -> Trace:
    """Read a 10-column Gavel trace (or its legacy 7-column or Shockwave's 12-column variant)."""
    src = os.fspath(path)
    lines = read_text(src, TraceError, "\t").split("\n")
    records = [(n, line.split("\t")) for n, line in enumerate(lines, start=1) if line.strip()]
    if not records:
        raise TraceError(f"{src}: no jobs")
    columns = {len(c): c for c in (LEGACY_COLUMNS, COLUMNS, SHOCKWAVE_COLUMNS)}.get(len(records[0][1]), COLUMNS)
    fields: dict[str, list] = {name: [] for name in SHOCKWAVE_COLUMNS}
    for n, parts in records:
        if len(parts) != len(columns):
            raise TraceError(f"{src}:{n}: expected {len(columns)} tab-separated columns "
                             f"({', '.join(columns)}), got {len(parts)}")
        row = dict(zip(columns, (p.strip() for p in parts)))

        def where(name: str, n: int = n) -> str:
            return f"{src}:{n}: column {columns.index(name) + 1} ({name})"

        if not row["job_type"]:
            raise TraceError(f"{where('job_type')}: empty")
        fields["job_type"].append(row["job_type"])
        fields["command"].append(row["command"])
        fields["working_dir"].append(row.get("working_dir", ""))
        fields["num_steps_arg"].append(row["num_steps_arg"])
        needs = _number(row["needs_data_dir"], where("needs_data_dir"), integer=True)
        if needs not in (0, 1):
            raise TraceError(f"{where('needs_data_dir')}: expected 0 or 1, got {shown(row['needs_data_dir'])}")
        fields["needs_data_dir"].append(needs)
        fields["total_steps"].append(_number(row["total_steps"], where("total_steps"), integer=True, strict=True))
        fields["scale_factor"].append(_number(row["scale_factor"], where("scale_factor"), integer=True, strict=True))
        weight = row.get("priority_weight", "1")
        fields["priority_weight"].append(
            1.0 if columns is LEGACY_COLUMNS else _number(weight, where("priority_weight"), strict=True))
        slo = -1.0 if columns is LEGACY_COLUMNS else _slo(row["SLO"], where("SLO"))
        fields["SLO"].append(math.inf if slo < 0 else slo)
        fields["arrival_time"].append(_number(row["arrival_time"], where("arrival_time")))
        mode = row.get("mode", "static")
        if mode not in MODES:
            raise TraceError(f"{where('mode')}: expected one of {', '.join(MODES)}, got {shown(mode)}")
        fields["mode"].append(mode)
        fields["duration"].append(
            _number(row["duration"], where("duration"), strict=True) if "duration" in row else math.nan)
    return Trace(
        job_types=tuple(fields["job_type"]), commands=tuple(fields["command"]),
        working_dirs=tuple(fields["working_dir"]), num_steps_args=tuple(fields["num_steps_arg"]),
        needs_data_dir=np.array(fields["needs_data_dir"], dtype=np.int64),
        total_steps=np.array(fields["total_steps"], dtype=np.int64),
        scale_factors=np.array(fields["scale_factor"], dtype=np.int64),
        weights=np.array(fields["priority_weight"], dtype=float), slo=np.array(fields["SLO"], dtype=float),
        arrival_times=np.array(fields["arrival_time"], dtype=float), source=src,
        modes=tuple(fields["mode"]), durations=np.array(fields["duration"], dtype=float),
    )


def _slo(text: str, where: str) -> float:
    """-1 (or any negative) = no SLO; otherwise a positive number."""
    value = parse_number(text, lambda problem: TraceError(f"{where}: {problem} (-1 for none)"))
    if value == 0:
        raise TraceError(f"{where}: must be > 0, or -1 for none, got {shown(text)}")
    return value


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
