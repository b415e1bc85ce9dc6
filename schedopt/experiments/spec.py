"""An experiment file: the axes of a grid of ``schedopt simulate`` runs and their fixed options.

    [experiment]
    name = "gavel-jct-vs-load"
    sweep = "lam"                       # the swept parameter the report plots metrics against
    x_label = "mean seconds between arrivals"   # its axis label in figures (default: a known one)

    [fixed]                             # options every cell shares
    generate = 60
    cluster = "v100=8,p100=8,k80=8"

    [axes]                              # one list per option: the grid is their product
    policy = ["max_min_fairness_perf", "fifo"]
    lam = [900.0, 1800.0]
    seed = [0, 1, 2]

    [axes.trace]                        # or a table: each value under the label figures show
    "0.5" = "{data}/pollux/workloads-0.5/workload-1.csv"
    "1.0" = "{data}/pollux/workloads/workload-1.csv"

Keys are ``schedopt simulate`` options, spelt as on the command line or with underscores
(``multi-gpu``, ``multi_gpu``; ``round`` is ``round_length``, ``config`` ``config_file``). A string
value may hold ``{data}``, replaced by the ``data`` folder given when the file is read; relative
paths are taken from the folder the file is in. Each cell is keyed by a hash of its options.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from simulator.readers.fields import Written, json_number, read_text
from simulator.request import SimulateRequest

#: command-line spellings that differ from the option's name
ALIASES = {"round": "round_length", "config": "config_file", "write_trace": "write_trace_to"}
#: options a sweep cell cannot take (the sweep writes each cell's files itself)
NOT_IN_CELLS = ("write_trace_to",)
#: options that name files or folders
PATHS = ("trace", "throughputs", "config_file", "cluster_spec", "throughput_dir", "applications", "vc_config",
         "lucid_data")


class ExperimentError(ValueError):
    """An experiment file that cannot be read: the message names the file and the key."""


@dataclass(frozen=True)
class Cell:
    """One run of the grid: its options (as given: fixed and this cell's axis values), its axis
    labels (the value itself, or its label where the axis is a table), and its key (a hash of the
    options)."""

    options: dict
    axes: dict
    key: str

    def request(self, base: Path) -> SimulateRequest:
        """The cell's simulation, relative paths taken from ``base``."""
        opts = dict(self.options)
        for name in PATHS:
            if opts.get(name) is not None:
                opts[name] = str(base / opts[name]) if not os.path.isabs(opts[name]) else opts[name]
        if opts.get("policy") is not None:
            opts["policy"] = policy_path(opts["policy"], base)
        return SimulateRequest(**opts)


def policy_path(policy: str, base: Path) -> str:
    """``policy`` with the file of a ``path/to/file.py:Class`` reference taken from ``base``."""
    left, sep, attr = policy.rpartition(":")
    if sep and left.endswith(".py") and not os.path.isabs(left):
        return f"{base / left}:{attr}"
    return policy


@dataclass(frozen=True)
class Experiment:
    """An experiment file read: its name, swept parameter (or None), fixed options, axes (in the
    file's order; each a dict label → value), the folder its relative paths start from, its key,
    and the swept parameter's axis label (None: the report's own)."""

    name: str
    sweep: str | None
    fixed: dict
    axes: dict[str, dict]
    base: Path
    key: str = field(default="")
    x_label: str | None = None

    def cells(self) -> list[Cell]:
        """The grid: every combination of the axes' values, the last axis varying fastest."""
        names = list(self.axes)
        out = []
        for labels in itertools.product(*(list(self.axes[n]) for n in names)):
            options = {**self.fixed, **{n: self.axes[n][lab] for n, lab in zip(names, labels, strict=True)}}
            out.append(Cell(options, dict(zip(names, labels, strict=True)), digest(options)))
        return out


def digest(options: dict) -> str:
    """A cell's key: the SHA-256 of its options as sorted JSON (16 hex digits)."""
    return hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:16]


def read_experiment(path: str | os.PathLike, data: str | os.PathLike | None = None) -> Experiment:
    """Read an experiment file (module doc); ``data`` replaces ``{data}`` in its strings."""
    path = Path(path)
    try:
        doc = tomllib.loads(read_text(path, ExperimentError), parse_float=lambda text: Written(text.replace("_", "")))
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(f"{path}: not TOML: {exc}") from None
    except RecursionError:
        raise ExperimentError(f"{path}: not TOML: nested too deeply") from None
    except ValueError as exc:  # an integer of over 4,300 digits
        raise ExperimentError(f"{path}: not TOML: {str(exc).partition(':')[0]}") from None
    unknown = set(doc) - {"experiment", "fixed", "axes"}
    if unknown:
        raise ExperimentError(f"{path}: unknown table [{sorted(unknown)[0]}] (tables: experiment, fixed, axes)")
    for table in ("experiment", "fixed", "axes"):
        if not isinstance(doc.get(table, {}), dict):
            raise ExperimentError(f"{path}: {table}: expected a table [{table}]")
    head = doc.get("experiment", {})
    for key in ("name", "sweep", "x_label", "description"):
        if not isinstance(head.get(key, ""), str):
            raise ExperimentError(f"{path}: experiment.{key}: expected a string")
    bad = set(head) - {"name", "sweep", "x_label", "description"}
    if bad:
        raise ExperimentError(f"{path}: experiment.{sorted(bad)[0]}: unknown key "
                              f"(keys: name, sweep, x_label, description)")
    fixed = {_option(path, "fixed", k): _value(path, f"fixed.{k}", v, data) for k, v in doc.get("fixed", {}).items()}
    axes = {}
    for k, values in doc.get("axes", {}).items():
        name = _option(path, "axes", k)
        if not isinstance(values, list | dict) or not values:
            raise ExperimentError(f"{path}: axes.{k}: expected a non-empty list of values, or a table label = value")
        if name in fixed:
            raise ExperimentError(f"{path}: axes.{k}: also in [fixed]; give it in one place")
        pairs = values.items() if isinstance(values, dict) else ((v, v) for v in values)
        axes[name] = {lab: _value(path, f"axes.{k}", v, data) for lab, v in pairs}
        if len(axes[name]) < len(values):
            raise ExperimentError(f"{path}: axes.{k}: a value repeats")
    _check_policies(path, fixed, axes)
    sweep = head.get("sweep")
    if sweep is not None:
        sweep = ALIASES.get(sweep.replace("-", "_"), sweep.replace("-", "_"))
        if sweep not in axes:
            raise ExperimentError(f"{path}: experiment.sweep: {head['sweep']!r} is not an axis "
                                  f"(axes: {', '.join(axes) or 'none'})")
    return Experiment(str(head.get("name", path.stem)), sweep, fixed, axes, path.parent.resolve(),
                      digest({"fixed": fixed, "axes": axes}), head.get("x_label"))


def _check_policies(path: Path, fixed: dict, axes: dict) -> None:
    """Every policy the experiment names resolves (a user's reference is loaded now, so a bad one
    is reported before any cell runs)."""
    from allocators import UnknownPolicyError, load

    named = [("fixed.policy", fixed["policy"])] if "policy" in fixed else []
    named += [("axes.policy", v) for v in axes.get("policy", {}).values()]
    for where, policy in named:
        if not isinstance(policy, str):
            raise ExperimentError(f"{path}: {where}: expected a policy name, got {policy!r}")
        try:
            load(policy_path(policy, path.parent.resolve()))
        except UnknownPolicyError as exc:
            raise ExperimentError(f"{path}: {where}: {exc}") from None


def _option(path: Path, table: str, key: str) -> str:
    name = key.replace("-", "_")
    name = ALIASES.get(name, name)
    if name not in SimulateRequest.options() or name in NOT_IN_CELLS:
        known = ", ".join(o for o in SimulateRequest.options() if o not in NOT_IN_CELLS)
        raise ExperimentError(f"{path}: {table}.{key}: not a simulate option (options: {known})")
    return name


def _value(path: Path, where: str, value, data):
    if isinstance(value, str) and "{data}" in value:
        if data is None:
            raise ExperimentError(f"{path}: {where}: uses {{data}}; give the data folder (--data DIR)")
        value = value.replace("{data}", str(Path(data).resolve()))
    if not isinstance(value, str | int | float | bool):
        raise ExperimentError(f"{path}: {where}: expected a string, number or boolean, not {type(value).__name__}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = json_number(value, lambda problem: ExperimentError(f"{path}: {where}: {problem}"))
    return value
