"""``schedopt report``: the figures as PNG files and one self-contained HTML page (figures
embedded, no network), with a summary table per label (for a sweep, per label and swept value:
the mean over its seeds)."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

import pandas as pd

from simulator.files import check_out_dir, write_atomically

from .collect import Collection, collect
from .figures import PARAMETERS, Figure, figures

#: summary columns of the page's table: (metric, heading, scale, format)
COLUMNS = (("jobs_completed", "jobs done", 1, "{:,.0f}"), ("average_jct", "avg JCT (h)", 1 / 3600, "{:,.2f}"),
           ("p99_jct", "p99 JCT (h)", 1 / 3600, "{:,.2f}"),
           ("queueing_delay_mean", "avg queueing (h)", 1 / 3600, "{:,.2f}"),
           ("queueing_delay_p999", "p99.9 queueing (h)", 1 / 3600, "{:,.2f}"),
           ("average_jct_large", "avg JCT > 8 GPUs (h)", 1 / 3600, "{:,.2f}"),
           ("average_jct_small", "avg JCT ≤ 8 GPUs (h)", 1 / 3600, "{:,.2f}"),
           ("makespan", "makespan (h)", 1 / 3600, "{:,.1f}"),
           ("utilization", "utilization", 100, "{:.1f} %"), ("ftf_mean", "mean FTF ρ", 1, "{:.3f}"),
           ("ftf_worst", "worst FTF ρ", 1, "{:.3f}"),
           ("deadline_satisfactory_ratio", "deadline ratio", 100, "{:.1f} %"),
           ("solver_seconds_total", "solver (s)", 1, "{:,.2f}"))


def write_report(folders: list[Path], out: Path, overwrite: bool = False) -> list[Path]:
    """Write the report of ``folders`` (run or sweep folders) into ``out``: one PNG per figure and
    ``report.html``; returns the paths written."""
    check_out_dir(out, overwrite)
    col = collect([Path(f) for f in folders])
    figs = figures(col)
    paths = []
    for fig in figs:
        paths.append(out / f"{fig.name}.png")
        write_atomically(paths[-1], fig.png)
    paths.append(out / "report.html")
    write_atomically(paths[-1], page(col, figs))
    return paths


def summary_table(col: Collection) -> pd.DataFrame:
    """Per label (and sweep, swept value): runs and the mean of each :data:`COLUMNS` metric."""
    frame = col.table()
    rank = {label: i for i, label in enumerate(col.labels())}
    frame["order"] = [(rank[r.label], r.sweep or "", -1 if r.x is None else r.x) for r in col.runs]
    frame = frame.sort_values("order", kind="stable").drop(columns="order")
    keys = ["label"] + (["sweep"] if len(col.sweeps) > 1 else []) + (["x"] if frame["x"].notna().any() else [])
    metrics = [m for m, *_ in COLUMNS if m in frame and pd.to_numeric(frame[m], errors="coerce").notna().any()]
    if "deadline_satisfactory_ratio" in metrics and not (frame.get("deadline_jobs", 0) > 0).any():
        metrics.remove("deadline_satisfactory_ratio")
    if not (frame.get("large_jobs", 0) > 0).any():  # Lucid's split, where some job is large
        metrics = [m for m in metrics if m not in ("average_jct_large", "average_jct_small")]
    grouped = frame.assign(runs=1).groupby(keys, sort=False, dropna=False)
    table = grouped[metrics].agg(lambda s: pd.to_numeric(s, errors="coerce").mean())
    table.insert(0, "runs", grouped["runs"].sum())
    return table.reset_index()


def page(col: Collection, figs: list[Figure]) -> str:
    """The self-contained HTML page."""
    table = summary_table(col)
    fmt = {m: (scale, f) for m, _, scale, f in COLUMNS}
    heads = {m: h for m, h, *_ in COLUMNS}
    cols = [c for c in table.columns]
    head = "".join(f"<th>{html.escape(_heading(c, col, heads))}</th>" for c in cols)
    body = []
    for row in table.itertuples(index=False):
        cells = []
        for c, v in zip(cols, row, strict=True):
            if c in fmt and pd.notna(v):
                scale, f = fmt[c]
                cells.append(f"<td class=n>{html.escape(f.format(v * scale))}</td>")
            else:
                cells.append(f"<td>{html.escape('' if pd.isna(v) else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    sources = ", ".join(html.escape(os.fspath(f)) for f in col.folders)
    blocks = "\n".join(
        f'<figure id="{f.name}"><img alt="{html.escape(f.title)}" src="data:image/png;base64,'
        f'{base64.b64encode(f.png).decode()}"><figcaption><b>{html.escape(f.title)}.</b> '
        f'{html.escape(f.caption)} <code>{f.name}.png</code></figcaption></figure>' for f in figs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>schedopt report</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ padding: 3px 10px; border-bottom: 1px solid #ddd; text-align: left; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
figure {{ display: inline-block; width: 520px; margin: 0 12px 18px 0; vertical-align: top; }}
figure img {{ width: 100%; }}
figcaption {{ font-size: 12px; color: #444; }}
</style></head><body>
<h1>schedopt report</h1>
<p>{len(col.runs)} runs from {sources}.</p>
<h2>Summary</h2>
<table><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(body)}
</tbody></table>
<h2>Figures</h2>
{blocks}
</body></html>
"""


def _heading(column: str, col: Collection, heads: dict) -> str:
    if column == "label":
        return "policy"
    if column == "x":
        names = {col.x_labels.get(s) or PARAMETERS.get(p, p) for s, p in col.sweeps.items() if p}
        return " / ".join(sorted(names)) or "swept value"
    return heads.get(column, column)
