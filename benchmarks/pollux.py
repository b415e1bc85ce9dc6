"""Pollux's artifact: its policies on its eight workloads, against the published simulator's results.

    python -m benchmarks.pollux --data ../shared/data [--policies tiresias optimus pollux] [--load 1.0]
                                [--workers 2]

Each workload (``pollux/workloads*/workload-N.csv``, 160 jobs at load 1.0) runs on Pollux's
cluster (16 nodes × 4 GPUs) with its settings (60 s scheduling interval, 30 s restart delay), the
jobs following Pollux's co-adaptive model of the measured applications (``pollux/traces``). The
published average JCT per workload is ``results-jobload/<policy>-<load>/summary.json`` (the
artifact's runs; Optimus+Oracle and Tiresias with the workload's tuned jobs). Writes
``benchmarks/results/pollux.csv``: per (policy, workload) the average JCT, the published one and
their relative difference, the makespan, decisions and wall time, and per policy a ``mean`` row
(the mean over the workloads, as the published summary's ``mean``). Rows of runs not repeated are
kept. ``pollux`` (the exact program; ``unproven`` counts the programs that stopped at the policy's
node limit, or its time limit, before proving their plan optimal) takes minutes per workload; the
baselines seconds.

``--ga-gap WORKLOAD`` instead runs ``pollux-ga`` (the published genetic algorithm, seed 0) on that
workload and, at each of its decisions, the exact program on the same terms, and writes
``benchmarks/results/pollux_ga_gap.csv``: per decision the jobs, both p-means, their relative gap
(program / GA − 1; ≥ 0 unless the program stopped at a limit) and the program's status.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from simulator.simulate import simulate_pollux

from .rows import write_rows

POLICIES = ("tiresias", "optimus", "pollux")
LOADS = {"1.0": "workloads", "0.5": "workloads-0.5", "1.5": "workloads-1.5", "2.0": "workloads-2.0"}
#: what the published results call each policy
PUBLISHED_NAME = {"tiresias": "tiresias", "optimus": "optimus", "pollux": "pollux"}


def run_one(data: Path, load: str, policy: str, workload: str) -> dict:
    tic = time.perf_counter()
    result = simulate_pollux(data / "pollux" / LOADS[load] / f"{workload}.csv", policy=policy)
    s = result.summary
    published = _published(data, policy, load).get(workload)
    stopped = sum(status != "optimal" for status in result.solves.get("status", ()))
    return {"load": load, "workload": workload, "policy": policy, "jobs": s["jobs"],
            "completed": s["jobs_completed"], "average_jct": round(s["average_jct"], 4),
            "published": "" if published is None else round(published, 4),
            "diff": "" if published is None else round(s["average_jct"] / published - 1, 5),
            "makespan": round(s["makespan"], 1), "decisions": s["decisions"], "programs": s["programs_solved"],
            "unproven": stopped, "wall_s": round(time.perf_counter() - tic, 2)}


def _published(data: Path, policy: str, load: str) -> dict:
    path = data / "pollux" / "results-jobload" / f"{PUBLISHED_NAME[policy]}-{load}" / "summary.json"
    return json.loads(path.read_text())["avgs"] if path.exists() else {}


def mean_rows(rows: list[dict]) -> list[dict]:
    """One ``mean`` row per (load, policy): the mean average JCT over its workloads and the published mean."""
    out = []
    for key in dict.fromkeys((r["load"], r["policy"]) for r in rows):
        group = [r for r in rows if (r["load"], r["policy"]) == key]
        ours = sum(r["average_jct"] for r in group) / len(group)
        published = [r["published"] for r in group if r["published"] != ""]
        pub = sum(published) / len(published) if len(published) == len(group) else None
        out.append({**{k: "" for k in group[0]}, "load": key[0], "workload": "mean", "policy": key[1],
                    "jobs": sum(r["jobs"] for r in group), "completed": sum(r["completed"] for r in group),
                    "average_jct": round(ours, 4), "published": "" if pub is None else round(pub, 4),
                    "diff": "" if pub is None else round(ours / pub - 1, 5),
                    "wall_s": round(sum(r["wall_s"] for r in group), 2)})
    return out


def _merged(path: Path, rows: list[dict]) -> list[dict]:
    """The rows already in ``path`` (but its mean rows), the new ones replacing equal runs, in
    policy then workload order."""
    key = lambda r: (r["load"], r["policy"], r["workload"])  # noqa: E731
    merged: dict[tuple, dict] = {}
    if path.exists():
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                if r["workload"] != "mean":
                    merged[key(r)] = {k: v if k in ("load", "workload", "policy") else _number(v)
                                      for k, v in r.items()}
    merged.update({key(r): r for r in rows})
    order = {p: i for i, p in enumerate(POLICIES)}
    return sorted(merged.values(), key=lambda r: (r["load"], order.get(r["policy"], 99),
                                                  int(str(r["workload"]).rsplit("-", 1)[-1])))


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def ga_gap(data: Path, workload: str, out: Path) -> None:
    result = simulate_pollux(data / "pollux" / "workloads" / f"{workload}.csv", policy="pollux-ga", compare=True)
    log = result.solves
    gap = log["program_p_mean"] / log["p_mean"] - 1
    rows = [{"time": t, "jobs": int(j), "ga_p_mean": round(float(a), 6), "program_p_mean": round(float(b), 6),
             "gap": round(float(g), 6), "program_status": st}
            for t, j, a, b, g, st in zip(log["time"], log["jobs"], log["p_mean"], log["program_p_mean"], gap,
                                         log["program_status"], strict=True)]
    write_rows(rows, out)
    q = np.quantile(gap, [0, 0.5, 0.9, 0.99, 1])
    print(f"{workload}: pollux-ga average JCT {result.summary['average_jct']:,.1f} s; program / GA - 1 over "
          f"{gap.size} decisions: min {q[0]:.4f}, median {q[1]:.4f}, p90 {q[2]:.4f}, p99 {q[3]:.4f}, max {q[4]:.4f}; "
          f"GA ahead in {int((gap < -1e-9).sum())} (program stopped at a limit in "
          f"{int(((gap < -1e-9) & (log['program_status'] != 'optimal')).sum())} of them)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pollux", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--load", default="1.0", choices=sorted(LOADS))
    parser.add_argument("--workloads", nargs="+", default=[f"workload-{i}" for i in range(1, 9)])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--ga-gap", metavar="WORKLOAD", help="compare pollux-ga with the program on WORKLOAD")
    args = parser.parse_args(argv)
    if args.ga_gap:
        ga_gap(args.data, args.ga_gap, args.out or Path("benchmarks/results/pollux_ga_gap.csv"))
        return 0
    args.out = args.out or Path("benchmarks/results/pollux.csv")
    runs = [(p, w) for p in args.policies for w in args.workloads]
    tic = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_one, *zip(*[(args.data, args.load, p, w) for p, w in runs], strict=True)))
    ran = rows
    for r in rows:
        print(f"{r['policy']} {r['workload']}: average JCT {r['average_jct']:,.1f} s (published "
              f"{r['published'] or '-'}), {r['wall_s']} s", flush=True)
    rows = _merged(args.out, rows)
    means = mean_rows(rows)
    for m in means:
        print(f"{m['policy']} mean over its workloads: {m['average_jct']:,.1f} s "
              f"(published {m['published'] or '-'}, {'-' if m['diff'] == '' else m['diff']})")
    write_rows(rows + means, args.out)
    print(f"{len(ran)} runs, {time.perf_counter() - tic:.0f} s elapsed with {args.workers} worker(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
