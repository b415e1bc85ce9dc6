"""Deadline-aware and elastic scheduling on the published ElasticFlow traces.

    python -m benchmarks.deadlines --data ../shared/data [--cases elastic_vs_pollux itp]
        [--policies elasticflow edf] [--workers 2] [--out benchmarks/results/deadlines.csv]

Cases (ElasticFlow's published settings, the published overhead model):

- ``elastic_vs_pollux``: ``traces/elasticVpollux_e.csv`` on ``n16g4``, T4 tables, 60 s slots;
- ``195job``: ``itp/195job.csv`` on ``n16g8``, A100 tables, 240 s slots;
- ``itp``: ``itp/cluster01..10.csv`` on their published clusters (n64g8: 01, 02, 03, 05, 06;
  n128g8: 04, 07, 08, 09; n32g8: 10), A100 tables, 60 s slots.

Writes one row per (trace, policy): the deadline satisfactory ratio beside the published one,
accepted / declined / late / unfinished counts, decisions, the run's wall time (one process
per run; ``--workers`` runs that many at once, each timed alone on its core), and for
policies that solve programs their count, build and solve seconds and the largest program's
binaries. ``chronus`` only runs on ``elastic_vs_pollux`` (as published). The file is rewritten
after each finished run; rows of an existing file for runs not repeated are kept.
"""

from __future__ import annotations

import argparse
import csv
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.simulate import simulate_deadlines

from .rows import write_rows


@dataclass(frozen=True)
class Case:
    group: str
    trace: str
    spec: str
    tables: str
    slot: float


ITP_CLUSTERS = {"01": "n64g8", "02": "n64g8", "03": "n64g8", "04": "n128g8", "05": "n64g8", "06": "n64g8",
                "07": "n128g8", "08": "n128g8", "09": "n128g8", "10": "n32g8"}
CASES = (
    Case("elastic_vs_pollux", "traces/elasticVpollux_e.csv", "n16g4", "throughputs_T4", 60.0),
    Case("195job", "itp/195job.csv", "n16g8", "throughputs_A100", 240.0),
    *(Case("itp", f"itp/cluster{c}.csv", spec, "throughputs_A100", 60.0) for c, spec in ITP_CLUSTERS.items()),
)
POLICIES = ("elasticflow", "elasticflow-greedy", "ef", "edf", "edf-accessctrl", "gandiva-ef", "dlas-gpu", "themis",
            "chronus")
#: policy run on one case group only
ONLY = {"chronus": "elastic_vs_pollux"}
#: the published ElasticFlow simulator's policy names -> ours (its ``elasticflow`` is ef-accessctrl; its
#: Gandiva baseline is ``gandiva-ef``, ``gandiva`` being Gavel's)
ORACLE_POLICY = {"elasticflow": "elasticflow-greedy", "gandiva": "gandiva-ef"}
#: (trace, policy) -> a published ratio the oracle file lacks (ElasticFlow artifact's README)
README_FIGURES = {("traces/elasticVpollux_e.csv", "themis"): 0.312}


def published_ratios(data: Path) -> dict[tuple[str, str], float]:
    """(trace, our policy) -> the published simulator's deadline satisfactory ratio, from
    ``oracles/elasticflow_published_simulator.csv`` (empty without it) and the README figures."""
    path = data / "oracles" / "elasticflow_published_simulator.csv"
    ratios = dict(README_FIGURES)
    if path.exists():
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                key = (r["trace"], ORACLE_POLICY.get(r["policy"], r["policy"]))
                ratios[key] = float(r["deadline_satisfactory_ratio"])
    return ratios


def run_one(data: Path, case: Case, policy: str) -> dict:
    """One simulation; its row."""
    root = data / "elasticflow"
    tic = time.perf_counter()
    result = simulate_deadlines(root / case.trace, root / "cluster_specs" / f"{case.spec}.csv", root / case.tables,
                                policy=policy, slot=case.slot)
    wall = time.perf_counter() - tic
    s, solves = result.summary, result.solves
    ratio = s["deadline_satisfactory_ratio"]
    published = published_ratios(data).get((case.trace, policy))
    binaries = solves.get("binaries", np.zeros(0))
    return {
        "case": case.group, "trace": case.trace, "cluster": case.spec, "gpus": s["gpus"], "slot_s": case.slot,
        "jobs": s["jobs"], "policy": policy, "ratio": round(ratio, 4),
        "published": "" if published is None else published,
        "diff": "" if published is None else round(ratio - published, 4),
        "accepted": s["accepted"], "declined": s["declined"], "late": s["finished_late"],
        "unfinished": s["unfinished"], "decisions": s["decisions"], "wall_s": round(wall, 2),
        "programs": s["programs_solved"],
        "build_s": round(float(np.nansum(solves.get("build_seconds", 0.0))), 3),
        "solve_s": round(float(np.nansum(solves.get("solve_seconds", 0.0))), 3),
        "max_binaries": int(np.nanmax(binaries)) if binaries.size else "",
        "notes": " | ".join(s["notes"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deadlines", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cases", nargs="+", default=sorted({c.group for c in CASES}),
                        choices=sorted({c.group for c in CASES}))
    parser.add_argument("--traces", nargs="+", help="only these traces (paths as in the case list)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/deadlines.csv"))
    args = parser.parse_args(argv)
    runs = [(case, policy) for case in CASES if case.group in args.cases
            and (not args.traces or case.trace in args.traces)
            for policy in args.policies if ONLY.get(policy, case.group) == case.group]
    order = {(case.trace, policy): i for i, (case, policy) in enumerate(
        (case, policy) for case in CASES for policy in POLICIES)}
    rows: dict[tuple, dict] = {}
    if args.out.exists():
        with args.out.open(newline="") as f:
            rows = {(r["trace"], r["policy"]): r for r in csv.DictReader(f)}
    ran = []
    tic = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(run_one, args.data, case, policy): (case, policy) for case, policy in runs}
        for future in as_completed(futures):
            case, policy = futures[future]
            row = future.result()
            rows[(case.trace, policy)] = row
            ran.append(row)
            print(f"{case.trace} {policy}: ratio {row['ratio']} ({row['published'] or 'no published figure'}), "
                  f"{row['wall_s']} s", flush=True)
            write_rows([rows[r] for r in sorted(rows, key=lambda r: order.get(r, len(order)))], args.out)
    print(f"{len(ran)} runs, {sum(r['wall_s'] for r in ran):.0f} s of run time, "
          f"{time.perf_counter() - tic:.0f} s elapsed with {args.workers} worker(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
