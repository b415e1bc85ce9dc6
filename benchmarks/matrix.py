"""Every published policy family on the same workloads, cluster and metrics.

    python -m benchmarks.matrix --data ../shared/data [--workers 2] [--markdown T.md]

Ten policies (Gavel's ``max_min_fairness_perf``, ``finish_time_fairness_perf``, ``gandiva``,
``fifo``; ``shockwave``; ElasticFlow's ``elasticflow``, ``edf``, ``dlas-gpu``, ``themis``;
``chronus``) on three workloads, each on one homogeneous cluster:

- ``gavel``: Gavel's ``max_min_fairness.trace`` on v100=32 (4-GPU servers), its simulation table;
  no deadlines in the trace: ElasticFlow's rule ``uniform:0.5:1.5`` draws them (seed 0);
- ``shockwave``: the 120-job Shockwave trace on v100=32 with its table (Shockwave's settings for
  round policies; batch-size adaptation only where a policy models it); deadlines as above;
- ``elasticflow``: ``traces/elasticVpollux_e.csv`` on n16g4 with the T4 tables (its deadlines).

Round policies run 360 s rounds (Shockwave's 120 s on its trace), slot policies 60 s slots. Every
job must end finished or declined; the row has every metric of :mod:`simulator.outcomes`. Writes
``benchmarks/results/matrix.csv``.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from allocators.registry import SLOT_POLICIES
from allocators.shockwave.config import read_shockwave_config
from simulator.engine import SimulationConfig
from simulator.outcomes import SUMMARY_KEYS
from simulator.simulate import default_solver, simulate, simulate_deadlines

from .rows import write_rows

POLICIES = ("max_min_fairness_perf", "finish_time_fairness_perf", "shockwave", "elasticflow", "chronus", "edf",
            "dlas-gpu", "themis", "gandiva", "fifo")
SHOCKWAVE_TRACE = "120_0.2_5_100_40_25_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_dynamic.trace"
DEADLINES = "uniform:0.5:1.5"
#: the metrics of the README table: (summary key, label, better)
SHOWN = (("average_jct", "avg JCT (h)", min), ("p99_jct", "p99 JCT (h)", min), ("makespan", "makespan (h)", min),
         ("ftf_worst", "worst FTF", min), ("deadline_satisfactory_ratio", "deadline ratio", max),
         ("utilization", "utilization", max))


@dataclass(frozen=True)
class Workload:
    name: str
    description: str


WORKLOADS = (Workload("gavel", "Gavel max_min_fairness.trace, v100=32"),
             Workload("shockwave", "Shockwave 120 jobs, v100=32"),
             Workload("elasticflow", "ElasticFlow elasticVpollux_e, 64 T4"))


def run_one(data: Path, workload: str, policy: str) -> dict:
    """One run's row: the summary's common metrics and the job outcome counts."""
    tic = time.perf_counter()
    slot = policy in SLOT_POLICIES
    solver = "highs" if slot or policy == "shockwave" else default_solver(policy)
    if workload == "elasticflow":
        root = data / "elasticflow"
        result = simulate_deadlines(root / "traces" / "elasticVpollux_e.csv", root / "cluster_specs" / "n16g4.csv",
                                    root / "throughputs_T4", policy=policy, solver=solver, slot=60.0)
    elif workload == "gavel":
        result = simulate(data / "gavel" / "traces" / "max_min_fairness.trace", policy=policy, solver=solver,
                          cluster="v100=32", throughputs=data / "gavel" / "simulation_throughputs.json",
                          gpus_per_server=4, deadlines=DEADLINES)
    else:
        root = data / "shockwave"
        params = {"config": read_shockwave_config(root / "configurations" / "tacc_32gpus.json")} \
            if policy == "shockwave" else {}
        config = SimulationConfig(gpus_per_server=4) if slot else SimulationConfig.shockwave(gpus_per_server=4)
        result = simulate(root / "traces" / SHOCKWAVE_TRACE, policy=policy, solver=solver, cluster="v100=32",
                          throughputs=root / "tacc_throughputs.json", config=config, policy_params=params,
                          deadlines=DEADLINES)
    s = result.summary
    states = result.jobs["state"]
    row = {"workload": workload, "policy": policy, "engine": "slots" if slot else "rounds"}
    row.update({k: _round(s[k]) for k in SUMMARY_KEYS})
    row.update(finished=int((states == "finished").sum()), declined_jobs=int((states == "declined").sum()),
               failed=int((states == "failed").sum()), other=int(((states != "finished") & (states != "declined")
                                                                   & (states != "failed")).sum()),
               wall_s=round(time.perf_counter() - tic, 2))
    return row


def _round(value):
    if isinstance(value, float):
        return "" if math.isnan(value) else round(value, 4)
    return value


#: measured over finished jobs only: a policy that declines jobs is not ranked on them
FINISHED_ONLY = ("average_jct", "p99_jct", "makespan", "ftf_worst")


def markdown(rows: list[dict]) -> str:
    """Per workload: policies × the shown metrics and the jobs declined; the best of each column
    in bold (for the metrics over finished jobs, among the policies that run every job)."""
    out = []
    for w in WORKLOADS:
        mine = [r for r in rows if r["workload"] == w.name]
        if not mine:
            continue
        best = {}
        for key, _, better in SHOWN:
            values = [r[key] for r in mine if r[key] != "" and not (key in FINISHED_ONLY and r["declined_jobs"])]
            best[key] = better(values) if values else None
        out.append(f"**{w.description}**\n")
        out.append("| policy | " + " | ".join(label for _, label, _ in SHOWN) + " | declined |")
        out.append("|---|" + "---:|" * (len(SHOWN) + 1))
        for r in mine:
            cells = []
            for key, _, _ in SHOWN:
                v = r[key]
                text = "-" if v == "" else f"{v / 3600:,.1f}" if key in ("average_jct", "p99_jct", "makespan") \
                    else f"{v:.3f}"
                ranked = not (key in FINISHED_ONLY and r["declined_jobs"])
                cells.append(f"**{text}**" if v != "" and ranked and v == best[key] else text)
            out.append(f"| `{r['policy']}` | " + " | ".join(cells) + f" | {r['declined_jobs']} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.matrix", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--workloads", nargs="+", default=[w.name for w in WORKLOADS],
                        choices=[w.name for w in WORKLOADS])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/matrix.csv"))
    parser.add_argument("--markdown", type=Path, help="also write the README table here")
    args = parser.parse_args(argv)
    runs = [(w, p) for w in args.workloads for p in args.policies]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_one, [args.data] * len(runs), *zip(*runs)))
    write_rows(rows, args.out)
    for r in rows:
        print(f"{r['workload']:12s} {r['policy']:26s} JCT {r['average_jct']} ratio "
              f"{r['deadline_satisfactory_ratio']} finished {r['finished']} declined {r['declined_jobs']} "
              f"other {r['other']} ({r['wall_s']} s)", flush=True)
    if args.markdown:
        args.markdown.write_text(markdown(rows) + "\n")


def read_rows(path: Path) -> list[dict]:
    """Rows of a written matrix CSV, numbers as numbers (for :func:`markdown`)."""
    with path.open(newline="") as f:
        return [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
