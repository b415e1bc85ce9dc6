"""Our runs beside the published simulators' own results, row by row.

    python -m benchmarks.fidelity --data ../shared/data [--systems gavel elasticflow shockwave]
        [--workers 2] [--out benchmarks/results/fidelity.csv] [--markdown TABLE.md]

- **gavel**: every row of ``oracles/gavel_published_simulator.csv`` (the published simulator on
  Gavel's traces, seed 0, 360 s rounds), run as a new user would: ``simulate(...,
  gavel_compat=True)`` with the solver ``auto`` picks, seed 0; the default mode beside it.
  Average JCT and makespan, relative difference; target: within 1% in compat mode.
- **elasticflow**: every row of ``oracles/elasticflow_published_simulator.csv`` (the published
  simulator in simulation mode; its ``elasticflow`` is the published planner with admission
  control, our ``elasticflow-greedy``), plus the cases of the ElasticFlow paper's Fig. 9 (``ef``,
  ``edf-accessctrl`` and ``elasticflow-greedy`` on ``generated/1000job_1500lam.csv``, 240 s
  slots) against the published simulator's own results there (``FIG9_SIMULATOR``), the paper's
  figures beside them for information. Deadline satisfactory ratio, absolute difference;
  targets: 0.02 (oracle rows), 0.05 (Fig. 9 cases). The
  exact ``elasticflow`` policy runs beside each oracle trace (it must not lose to the
  greedy).
- **shockwave**: the 120-job canonical run against the paper's figures (makespan, average
  JCT, worst FTF, unfair fraction; lower is better), both modes.

Writes one row per (system, case, mode, metric): ours, published, difference, tolerance and
whether it holds ("" where a row is for information), and prints one summary line per system.
Rows of an existing file for the systems not run are kept.
"""

from __future__ import annotations

import argparse
import csv
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from simulator.simulate import simulate, simulate_deadlines

from .rows import write_rows
from .shockwave import CASES as SHOCKWAVE_CASES
from .shockwave import METRICS as SHOCKWAVE_METRICS
from .shockwave import PUBLISHED as SHOCKWAVE_PUBLISHED
from .shockwave import run_case as run_shockwave

SYSTEMS = ("gavel", "elasticflow", "shockwave")
#: the published ElasticFlow simulator's policy names -> ours
ELASTICFLOW_POLICY = {"elasticflow": "elasticflow-greedy", "gandiva": "gandiva-ef"}
#: ElasticFlow paper, Fig. 9: (cluster spec, policy) -> deadline satisfactory ratio on
#: ``generated/1000job_1500lam.csv`` (A100 tables, 240 s slots)
FIG9 = {("n8g8", "ef"): 0.452, ("n16g8", "ef"): 0.835, ("n32g8", "ef"): 0.939, ("n16g8", "edf-accessctrl"): 0.326}
#: the published simulator, unchanged, on the same cases (gudiandian/ElasticFlow-artifact
#: ``scheduler/scheduler.py --simulation=True --scheme=elastic --scheduling_slot=240
#: --gpu_type=A100 --schedule={ef,edf-accessctrl,ef-accessctrl}``, its ``final_result.csv``)
FIG9_SIMULATOR = {
    ("n8g8", "ef"): 0.263, ("n16g8", "ef"): 0.729, ("n32g8", "ef"): 0.899,
    ("n8g8", "edf-accessctrl"): 0.212, ("n16g8", "edf-accessctrl"): 0.324, ("n32g8", "edf-accessctrl"): 0.609,
    ("n8g8", "elasticflow-greedy"): 0.933, ("n16g8", "elasticflow-greedy"): 0.956,
    ("n32g8", "elasticflow-greedy"): 0.962,
}
FIG9_TRACE = "generated/1000job_1500lam.csv"


@dataclass(frozen=True)
class Run:
    """One simulation and the published figures to set beside its metrics."""

    system: str
    source: str
    trace: str
    cluster: str
    policy: str
    mode: str
    published: dict[str, float]
    tolerance: float | None
    relative: bool
    args: tuple = field(default=())
    #: further figures for the same metrics, for information: (source, {metric: value})
    beside: tuple[tuple[str, dict[str, float]], ...] = ()

    def compare(self, ours: dict[str, float], wall: float) -> list[dict]:
        rows = []
        for source, figures, tolerance in ((self.source, self.published, self.tolerance),
                                           *((src, figs, None) for src, figs in self.beside)):
            for metric, theirs in figures.items():
                value = ours[metric]
                diff = value / theirs - 1.0 if self.relative else value - theirs
                if tolerance is None:
                    within = ""
                elif tolerance == 0.0:
                    within = value <= theirs
                else:
                    within = abs(diff) <= tolerance
                rows.append({"system": self.system, "source": source, "trace": self.trace,
                             "cluster": self.cluster, "policy": self.policy, "mode": self.mode, "metric": metric,
                             "ours": round(value, 4), "published": theirs,
                             "diff": f"{diff:+.2%}" if self.relative else f"{diff:+.3f}",
                             "tolerance": _tolerance_text(tolerance, self.relative), "within": within,
                             "wall_s": round(wall, 2)})
        return rows


def _tolerance_text(tolerance: float | None, relative: bool) -> str:
    if tolerance is None:
        return ""
    if tolerance == 0.0:
        return "<= published"
    return f"{tolerance:.0%}" if relative else f"{tolerance:.2f}"


def gavel_runs(data: Path) -> list[Run]:
    runs = []
    with (data / "oracles" / "gavel_published_simulator.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            published = {"average_jct": float(row["average_jct_s"]), "makespan": float(row["makespan_s"])}
            cluster = row["cluster"].replace(";", ",")
            for compat in (True, False):
                runs.append(Run("gavel", "oracle", row["trace"], cluster, row["policy"],
                                "compat" if compat else "default", published, 0.01 if compat else None, True,
                                (compat,)))
    return runs


def elasticflow_runs(data: Path) -> list[Run]:
    runs, traces = [], {}
    with (data / "oracles" / "elasticflow_published_simulator.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            policy = ELASTICFLOW_POLICY.get(row["policy"], row["policy"])
            case = (row["trace"], row["cluster_spec"], row["throughputs"], float(row["slot_s"]))
            published = {"deadline_satisfactory_ratio": float(row["deadline_satisfactory_ratio"])}
            runs.append(Run("elasticflow", "oracle", row["trace"], row["cluster_spec"], policy, "default",
                            published, 0.02, False, case))
            if policy == "elasticflow-greedy":
                traces[case] = published
    for case, published in traces.items():
        runs.append(Run("elasticflow", "oracle", case[0], case[1], "elasticflow", "default", published, None,
                        False, case))
    for (spec, policy), ratio in FIG9_SIMULATOR.items():
        paper = ((("paper Fig. 9", {"deadline_satisfactory_ratio": FIG9[spec, policy]}),)
                 if (spec, policy) in FIG9 else ())
        runs.append(Run("elasticflow", "published simulator, Fig. 9 cases", FIG9_TRACE, spec, policy, "default",
                        {"deadline_satisfactory_ratio": ratio}, 0.05, False,
                        (FIG9_TRACE, spec, "throughputs_A100", 240.0), paper))
    return runs


def shockwave_runs(data: Path) -> list[Run]:
    case = SHOCKWAVE_CASES[0]
    published = dict(zip((name for name, _ in SHOCKWAVE_METRICS), SHOCKWAVE_PUBLISHED[(case.jobs, "shockwave")]))
    return [Run("shockwave", "paper", case.trace, f"v100={case.gpus}", "shockwave",
                "compat" if compat else "default", published, 0.0, True, (compat,)) for compat in (True, False)]


def execute(data: Path, run: Run) -> list[dict]:
    """The run's comparison rows."""
    tic = time.perf_counter()
    ours = RUNNERS[run.system](data, run)
    return run.compare(ours, time.perf_counter() - tic)


def _gavel(data: Path, run: Run) -> dict[str, float]:
    (compat,) = run.args
    summary = simulate(data / "gavel" / "traces" / run.trace, policy=run.policy, cluster=run.cluster,
                       throughputs=data / "gavel" / "simulation_throughputs.json", gavel_compat=compat).summary
    return {"average_jct": summary["average_jct"], "makespan": summary["makespan"]}


def _elasticflow(data: Path, run: Run) -> dict[str, float]:
    trace, spec, tables, slot = run.args
    root = data / "elasticflow"
    summary = simulate_deadlines(root / trace, root / "cluster_specs" / f"{spec}.csv", root / tables,
                                 policy=run.policy, slot=slot).summary
    return {"deadline_satisfactory_ratio": summary["deadline_satisfactory_ratio"]}


def _shockwave(data: Path, run: Run) -> dict[str, float]:
    (compat,) = run.args
    row = run_shockwave(data, SHOCKWAVE_CASES[0], "shockwave", compat)
    return {name: float(row[name]) for name, _ in SHOCKWAVE_METRICS}


RUNNERS: dict[str, Callable[[Path, Run], dict[str, float]]] = {
    "gavel": _gavel, "elasticflow": _elasticflow, "shockwave": _shockwave}
PLANS: dict[str, Callable[[Path], list[Run]]] = {
    "gavel": gavel_runs, "elasticflow": elasticflow_runs, "shockwave": shockwave_runs}


def summary_line(system: str, rows: list[dict]) -> str:
    """How many checked rows hold, and the largest difference among them."""
    checked = [r for r in rows if r["system"] == system and r["within"] != ""]
    held = [r for r in checked if r["within"]]
    worst = max(checked, key=lambda r: abs(float(r["diff"].rstrip("%"))), default=None)
    text = f"{system}: {len(held)} of {len(checked)} checked rows hold"
    if worst is not None:
        text += (f"; largest difference {worst['diff']} ({worst['trace']}, {worst['cluster']}, {worst['policy']}, "
                 f"{worst['mode']}, {worst['metric']})")
    missed = [f"{r['trace']} {r['cluster']} {r['policy']} {r['mode']} {r['metric']} {r['diff']}"
              for r in checked if not r["within"]]
    return text + ("; missed: " + "; ".join(missed) if missed else "")


def markdown_table(rows: list[dict]) -> str:
    """The rows as a Markdown table (the one in ``benchmarks/README.md``)."""
    cols = ("system", "source", "trace", "cluster", "policy", "mode", "metric", "ours", "published", "diff",
            "tolerance", "within")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [str(r[c]).replace("|", "/") for c in cols]
        cells[cols.index("within")] = {"True": "yes", "False": "**no**", "": ""}[str(r["within"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _with_other_systems(rows: list[dict], path: Path, systems: list[str]) -> list[dict]:
    """``rows``, with the rows of an existing file for the systems not run kept in place."""
    if not path.exists():
        return rows
    with path.open(newline="") as f:
        kept = list(csv.DictReader(f))
    order = list(dict.fromkeys([row["system"] for row in kept] + [row["system"] for row in rows]))
    by_system = {system: [row for row in kept if row["system"] == system] for system in order}
    by_system.update({system: [row for row in rows if row["system"] == system] for system in systems})
    return [row for system in order for row in by_system[system]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fidelity.csv"))
    parser.add_argument("--markdown", type=Path, help="also write the rows as a Markdown table here")
    args = parser.parse_args(argv)
    runs = [run for system in args.systems for run in PLANS[system](args.data)]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = [row for result in pool.map(execute, [args.data] * len(runs), runs) for row in result]
    write_rows(_with_other_systems(rows, args.out, args.systems), args.out)
    if args.markdown:
        args.markdown.write_text(markdown_table(rows) + "\n")
    for system in args.systems:
        print(summary_line(system, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
