"""The runs a report shows: run folders (``simulate --out``) and sweep folders (``sweep --out``),
each run labelled by what tells it apart.

A sweep's runs are its finished cells; their label is the values of the axes other than ``seed``
and the swept parameter (the policy, when that is the only other axis). Single runs are labelled
by their policy (and solver, or folder, where that is needed to tell them apart).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass
class Run:
    """One run: its label, folder, summary and, for a sweep cell, its sweep's name, options, the
    position of its swept value on the sweep's axis and that value's label."""

    label: str
    folder: Path
    summary: dict
    sweep: str | None = None
    options: dict = field(default_factory=dict)
    x: int | None = None
    x_value: object = None

    def frame(self, name: str) -> pd.DataFrame:
        """``jobs``, ``timeline`` or ``solves`` of the run (empty when the file is empty or absent)."""
        path = self.folder / f"{name}.csv"
        if not path.exists() or path.stat().st_size == 0:
            return pd.DataFrame()
        return pd.read_csv(path)


@dataclass
class Collection:
    """The runs of a report, the sweeps among them (name → swept parameter), each sweep's swept
    values in axis order and axis label (None: the report's own), and the folders given."""

    runs: list[Run]
    sweeps: dict[str, str | None]
    folders: list[Path]
    values: dict[str, list] = field(default_factory=dict)
    x_labels: dict[str, str | None] = field(default_factory=dict)

    def labels(self) -> list[str]:
        return list(dict.fromkeys(r.label for r in self.runs))

    def table(self) -> pd.DataFrame:
        """One row per run: label, sweep, swept value and every scalar summary metric."""
        rows = [{"label": r.label, "sweep": r.sweep or "", "x": r.x_value,
                 **{k: v for k, v in r.summary.items() if not isinstance(v, list | dict)}} for r in self.runs]
        return pd.DataFrame(rows)


def collect(folders: list[Path]) -> Collection:
    """Read ``folders``; a folder that is neither a run nor a sweep is an error naming it."""
    runs: list[Run] = []
    sweeps: dict[str, str | None] = {}
    values: dict[str, list] = {}
    x_labels: dict[str, str | None] = {}
    for folder in folders:
        if (folder / "experiment.json").exists():
            exp = json.loads((folder / "experiment.json").read_text())
            name = exp["name"] if exp["name"] not in sweeps else f"{exp['name']} ({folder})"
            sweeps[name] = exp.get("sweep")
            values[name] = exp["axes"][exp["sweep"]] if exp.get("sweep") else []
            x_labels[name] = exp.get("x_label")
            runs += _sweep_runs(folder, name, exp)
        elif (folder / "summary.json").exists():
            runs.append(Run("", folder, json.loads((folder / "summary.json").read_text())))
        else:
            raise ValueError(f"{folder}: neither a run folder (summary.json) nor a sweep folder (experiment.json)")
    if not runs:
        raise ValueError(f"{', '.join(map(str, folders))}: no finished run to report")
    _label_single_runs([r for r in runs if r.sweep is None])
    return Collection(runs, sweeps, list(folders), values, x_labels)


def _sweep_runs(folder: Path, name: str, exp: dict) -> list[Run]:
    swept = exp.get("sweep")
    shown = [a for a in exp["axes"] if a not in ("seed", swept)]
    runs = []
    axes = exp["axes"]

    def grid_order(path: Path) -> tuple:
        labels = json.loads((path.parent / "cell.json").read_text())["axes"]
        return tuple(axes[a].index(labels[a]) if labels.get(a) in axes[a] else -1 for a in axes)

    for cell in sorted((folder / "cells").glob("*/row.json"), key=grid_order):
        row = json.loads(cell.read_text())
        if row.get("status") != "ok":
            continue
        spec = json.loads((cell.parent / "cell.json").read_text())
        labels = spec["axes"]
        label = " / ".join(_part(a, labels[a]) for a in shown if _part(a, labels[a])) or str(
            row.get("run_policy", name))
        summary = json.loads((cell.parent / "summary.json").read_text())
        x = exp["axes"][swept].index(labels[swept]) if swept else None
        runs.append(Run(label, cell.parent, summary, name, spec["options"], x, labels.get(swept)))
    return runs


def _part(axis: str, label) -> str:
    """An axis value in a label: a true flag by its name, a false one not at all."""
    if isinstance(label, bool):
        return axis if label else ""
    return str(label)


def _label_single_runs(runs: list[Run]) -> None:
    """Policy; policy / solver where policies repeat; the folder's name where those repeat too."""
    for r in runs:
        r.label = str(r.summary.get("policy", r.folder.name))
    for key in ("solver", None):
        counts = pd.Series([r.label for r in runs]).value_counts()
        for r in runs:
            if counts.get(r.label, 0) > 1:
                r.label = f"{r.label} / {r.summary.get(key, '')}" if key else f"{r.label} ({r.folder.name})"
