"""A report's figures, each sized for one column of a paper (3.4 × 2.5 in, 8 pt text), one colour
and marker per label (policy), axes in hours or seconds as labelled.

Per label: CDFs of JCT, queueing delay and finish-time fairness (the jobs of all its runs; for a
sweep, its cells at the swept parameter's largest value), the average and 99.9th percentile
queueing delay per virtual cluster (runs on VCs: their summaries' ``per_vc``), utilization and
running jobs over time (its first run), deadline ratio bars (where jobs have deadlines), the
solver's seconds per decision; for a sweep, each metric against the swept parameter, the mean over
seeds with their min–max.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .collect import Collection, Run

SIZE = (3.4, 2.5)
DPI = 200
#: (summary metric, axis label, scale) plotted against a sweep's parameter
SWEPT_METRICS = (("average_jct", "average JCT (h)", 1 / 3600), ("p99_jct", "p99 JCT (h)", 1 / 3600),
                 ("makespan", "makespan (h)", 1 / 3600), ("utilization", "utilization (%)", 100),
                 ("ftf_mean", "mean finish-time fairness", 1),
                 ("deadline_satisfactory_ratio", "deadline satisfactory ratio (%)", 100),
                 ("solver_seconds_total", "solver time per run (s)", 1))


#: axis labels of swept parameters (the option's name where none is given)
PARAMETERS = {"lam": "mean seconds between arrivals (lam)", "round_length": "round length (s)",
              "slot": "slot length (s)", "generate": "jobs", "reset_interval": "seconds between re-plans",
              "overhead": "restart overhead (s)", "trace": "workload", "cluster_spec": "cluster"}
#: points a timeline is averaged to (time-weighted), so time-shared rounds read as a line
TIMELINE_POINTS = 200


@dataclass(frozen=True)
class Figure:
    """One figure: file name, title, caption and PNG bytes."""

    name: str
    title: str
    caption: str
    png: bytes


def figures(col: Collection) -> list[Figure]:
    """Every figure the runs support (module doc)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 8, "legend.fontsize": 6.5, "lines.linewidth": 1.2})
    styles = _styles(col.labels())
    shown = _distribution_runs(col)
    out = []
    jobs = {label: pd.concat([r.frame("jobs") for r in runs], ignore_index=True) for label, runs in shown.items()}
    where = _where(col)
    for column, name, title, xlabel, scale, log in (
            ("jct", "jct_cdf", "JCT", "job completion time (h)", 1 / 3600, True),
            ("queueing_delay", "queueing_cdf", "Queueing delay", "queueing delay (h)", 1 / 3600, False),
            ("ftf", "fairness_cdf", "Finish-time fairness", "finish-time fairness ρ (≤ 1 is fair)", 1, True)):
        data = {k: v[column].dropna().to_numpy() * scale for k, v in jobs.items() if column in v}
        data = {k: v[np.isfinite(v)] for k, v in data.items()}
        if any(v.size for v in data.values()):
            out.append(_cdf(plt, name, f"{title}: CDF per policy", f"Jobs finished{where}.", data, xlabel, styles,
                            log, fair_line=column == "ftf"))
    per_vc = _per_vc_frame(shown)
    if not per_vc.empty:
        out.append(_vc_bars(plt, per_vc, styles, where))
    over_time = {label: runs[0] for label, runs in shown.items()}
    timelines = {label: (run, run.frame("timeline")) for label, run in over_time.items()}
    if any(not t.empty for _, t in timelines.values()):
        out.append(_timeline(plt, timelines, styles, where))
    ratios = {label: np.array([r.summary.get("deadline_satisfactory_ratio") for r in runs], dtype=float)
              for label, runs in shown.items() if any(r.summary.get("deadline_jobs") for r in runs)}
    if ratios:
        out.append(_bars(plt, ratios, styles, where))
    solves = {label: pd.concat([r.frame("solves") for r in runs], ignore_index=True) for label, runs in shown.items()}
    solves = {k: v["seconds"].dropna().to_numpy() for k, v in solves.items() if "seconds" in v}
    if any(v.size for v in solves.values()):
        out.append(_cdf(plt, "solver_cdf", "Solver time per decision: CDF", f"Every solve{where}.",
                        {k: np.maximum(v, 1e-6) for k, v in solves.items()}, "seconds per decision", styles, True))
    for sweep, param in col.sweeps.items():
        if param is not None:
            out += _against(plt, col, sweep, param, styles)
    return out


def _styles(labels: list[str]) -> dict[str, dict]:
    import matplotlib.pyplot as plt

    colours = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20").colors
    markers = "os^vDP*Xh<>"
    return {label: {"color": colours[i % len(colours)], "marker": markers[i % len(markers)]}
            for i, label in enumerate(labels)}


#: labels a legend holds inside the axes; more go below them, in two columns
INSIDE = 6


def _legend(fig, ax, loc: str) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if len(labels) <= INSIDE:
        ax.legend(loc=loc, frameon=False)
        return
    rows = -(-len(labels) // 2)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + 0.13 * rows)
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.13 * rows / (height + 0.13 * rows) + 0.01, 1, 1))


def _distribution_runs(col: Collection) -> dict[str, list[Run]]:
    """Per label, the runs its distributions show: a sweep's cells at the largest swept value."""
    shown: dict[str, list[Run]] = {}
    top = {}
    for r in col.runs:
        if r.x is not None:
            key = (r.sweep, r.label)
            top[key] = max(top.get(key, r.x), r.x)
    for r in col.runs:
        if r.x is None or r.x == top[(r.sweep, r.label)]:
            shown.setdefault(r.label, []).append(r)
    return shown


def _where(col: Collection) -> str:
    params = [f"{col.x_labels.get(s) or PARAMETERS.get(p, p)} = "
              f"{col.values[s][max(r.x for r in col.runs if r.sweep == s)]}"
              for s, p in col.sweeps.items() if p and any(r.sweep == s for r in col.runs)]
    return f" (sweeps at {', '.join(params)}, seeds pooled)" if params else ""


def _png(plt, fig) -> bytes:
    if not fig.legends:
        fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=DPI, format="png", bbox_inches="tight" if fig.legends else None)
    plt.close(fig)
    return buffer.getvalue()


def _cdf(plt, name, title, caption, data, xlabel, styles, log, fair_line=False) -> Figure:
    fig, ax = plt.subplots(figsize=SIZE)
    for label, values in data.items():
        if values.size:
            v = np.sort(values)
            ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", color=styles[label]["color"], label=label)
    if log and all((v > 0).all() for v in data.values() if v.size):
        ax.set_xscale("log")
    if fair_line:
        ax.axvline(1.0, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of jobs" if "Solver" not in title else "fraction of decisions")
    ax.set_ylim(0, 1.01)
    ax.grid(alpha=0.3)
    _legend(fig, ax, "lower right")
    return Figure(name, title, caption, _png(plt, fig))


def _timeline(plt, runs: dict[str, tuple[Run, pd.DataFrame]], styles, where: str) -> Figure:
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(SIZE[0], SIZE[1] * 1.5), sharex=True)
    for label, (run, t) in runs.items():
        if t.empty:
            continue
        gpus = float(run.summary.get("gpus") or t["busy_gpus"].max() or 1)
        style = {"color": styles[label]["color"], "label": label}
        hours, busy = _binned(t, "busy_gpus")
        top.plot(hours, 100 * busy / gpus, **style)
        bottom.plot(*_binned(t, "running_jobs"), **style)
    top.set_ylabel("GPUs busy (%)")
    top.set_ylim(0, 105)
    bottom.set_ylabel("running jobs")
    bottom.set_xlabel("simulated time (h)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    _legend(fig, top, "lower right")
    return Figure("utilization", "Utilization and running jobs over time",
                  "One run per policy" + (" (a sweep's first cell at its largest swept value)." if where else "."),
                  _png(plt, fig))


def _binned(t: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``column`` of a timeline (piecewise constant on [start, end)) averaged over
    :data:`TIMELINE_POINTS` equal bins of time: bin centres (h) and means."""
    start, end, value = t["start"].to_numpy(float), t["end"].to_numpy(float), t[column].to_numpy(float)
    edges = np.linspace(start.min(), end.max(), TIMELINE_POINTS + 1)
    cumulative = np.concatenate([[0.0], np.cumsum(value * (end - start))])
    area = np.interp(edges, np.concatenate([[start[0]], end]), cumulative)
    return (edges[:-1] + edges[1:]) / 2 / 3600, np.diff(area) / np.diff(edges)


def _per_vc_frame(shown: dict[str, list[Run]]) -> pd.DataFrame:
    """Per label and VC (first-seen order), the mean over its runs of the VC's average and 99.9th
    percentile queueing delay; empty where no run is on VCs."""
    rows = [(label, vc, float(m["queueing_delay_mean"]), float(m["queueing_delay_p999"]))
            for label, runs in shown.items() for r in runs for vc, m in (r.summary.get("per_vc") or {}).items()]
    frame = pd.DataFrame(rows, columns=["label", "vc", "mean", "p999"])
    return frame.groupby(["label", "vc"], sort=False)[["mean", "p999"]].mean().reset_index()


def _vc_bars(plt, frame: pd.DataFrame, styles, where: str) -> Figure:
    labels, vcs = list(dict.fromkeys(frame["label"])), list(dict.fromkeys(frame["vc"]))
    fig, axes = plt.subplots(2, 1, figsize=(SIZE[0], SIZE[1] * 1.5), sharex=True)
    x, width = np.arange(len(vcs)), 0.8 / len(labels)
    for i, label in enumerate(labels):
        part = frame[frame["label"] == label].set_index("vc").reindex(vcs)
        for ax, column in zip(axes, ("mean", "p999"), strict=True):
            ax.bar(x + (i - (len(labels) - 1) / 2) * width, part[column].to_numpy() / 3600, width,
                   color=styles[label]["color"], label=label)
    axes[0].set_ylabel("avg queueing delay (h)")
    axes[1].set_ylabel("p99.9 queueing delay (h)")
    axes[1].set_xticks(x, vcs, rotation=45 if len(vcs) > 4 else 0, ha="right" if len(vcs) > 4 else "center")
    axes[1].set_xlabel("virtual cluster")
    for ax in axes:
        ax.grid(alpha=0.3, axis="y")
    _legend(fig, axes[0], "upper right")
    return Figure("queueing_per_vc", "Queueing delay per virtual cluster",
                  f"Jobs started in each VC{where}; bars: mean over each policy's runs.", _png(plt, fig))


def _bars(plt, ratios: dict[str, np.ndarray], styles, where: str) -> Figure:
    fig, ax = plt.subplots(figsize=SIZE)
    labels = list(ratios)
    means = [100 * np.nanmean(ratios[k]) for k in labels]
    lo = [m - 100 * np.nanmin(ratios[k]) for m, k in zip(means, labels, strict=True)]
    hi = [100 * np.nanmax(ratios[k]) - m for m, k in zip(means, labels, strict=True)]
    ax.bar(range(len(labels)), means, yerr=[lo, hi], color=[styles[k]["color"] for k in labels], capsize=2)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_ylabel("deadline satisfactory ratio (%)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3, axis="y")
    return Figure("deadlines", "Deadline satisfactory ratio per policy",
                  f"Jobs finished by their deadline{where}; bars: mean over runs, whiskers: min-max.", _png(plt, fig))


def _against(plt, col: Collection, sweep: str, param: str, styles) -> list[Figure]:
    runs = [r for r in col.runs if r.sweep == sweep]
    values = col.values[sweep]
    numeric = all(_number(v) is not None for v in values)
    position = [_number(v) if numeric else float(i) for i, v in enumerate(values)]
    frame = pd.DataFrame([{"label": r.label, "x": position[r.x], **{m: r.summary.get(m) for m, _, _ in SWEPT_METRICS}}
                          for r in runs])
    out = []
    for metric, ylabel, scale in SWEPT_METRICS:
        values = pd.to_numeric(frame[metric], errors="coerce") * scale
        if values.isna().all() or (metric == "deadline_satisfactory_ratio" and not (values > 0).any()):
            continue
        fig, ax = plt.subplots(figsize=SIZE)
        for label, group in frame.assign(v=values).groupby("label", sort=False):
            stats = group.groupby("x")["v"].agg(["mean", "min", "max"]).sort_index()
            x = stats.index.to_numpy(dtype=float)
            ax.plot(x, stats["mean"], label=label, color=styles[label]["color"], marker=styles[label]["marker"],
                    markersize=3)
            ax.fill_between(x, stats["min"], stats["max"], color=styles[label]["color"], alpha=0.15, linewidth=0)
        ax.set_xlabel(col.x_labels.get(sweep) or PARAMETERS.get(param, param))
        if not numeric:
            ax.set_xticks(position, [Path(str(v)).stem if "/" in str(v) else str(v) for v in values],
                          rotation=30 if len(values) > 4 else 0)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        _legend(fig, ax, "best")
        name = f"{_slug(sweep)}_{metric}"
        out.append(Figure(name, f"{sweep}: {ylabel} against {param}",
                          f"Mean over seeds (line) and min-max (band), {len(runs)} runs.", _png(plt, fig)))
    return out


def _number(value) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower() or "sweep"
