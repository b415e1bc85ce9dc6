"""Lucid (ASPLOS '23) and Helios' baselines on the Philly trace, beside the paper's claims.

    python -m benchmarks.lucid --data ../shared/data [--policies fifo-helios sjf qssf tiresias-helios lucid]
        [--scales 1.0 0.25] [--whole]

Each policy replays Philly (``pollux/traces/philly.csv``) on Helios' Philly virtual clusters
(``lucid/philly/vc_config.csv``, 8 GPUs a node), every job on its VC's nodes, each job's profiled
workload drawn (seed 0) from Lucid's measurements (``lucid/``), which only ``lucid`` reads (to share
GPUs at the measured pair speeds; ``lucid`` and ``lucid-exact`` also get the artifact's profiling
VC, 2 nodes of the largest VC; ``+tuner``: with Lucid's system tuner, which the artifact runs on
Venus only). Windows: the artifact's week (2017-10-01 to 10-07) and with ``--whole`` the whole
trace; ``--scales``: every VC at that multiple of its nodes (1.0: Helios' sizes). Writes
``benchmarks/results/lucid.csv``: per (window, scale, policy) the jobs, average JCT, mean and
99.9th-percentile queueing delay, average JCT of large (> 8 GPUs) and small jobs, the utilization,
the share of jobs that shared GPUs, the estimator's error where the policy has one, and the wall
time; rows of runs not repeated are kept.

The paper's claims (Philly): Lucid up to 1.3x lower average JCT than Tiresias; QSSF below SJF-free
baselines (FIFO) and near SJF (oracle durations).
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from pathlib import Path

from simulator.simulate import simulate_job_log

from .rows import write_rows

POLICIES = ("fifo-helios", "sjf", "qssf", "tiresias-helios", "lucid", "lucid-exact", "lucid+tuner",
            "lucid-exact+tuner")
WINDOWS = {"week": ("2017-10-01 00:00:00", "2017-10-07 23:59:00"), "whole": None}
RESULTS = Path(__file__).parent / "results" / "lucid.csv"
KEYS = ("window", "vc_scale", "policy")
#: the nodes Lucid's Philly runs carve out of the cluster for its profiler (its ``profiler_config``)
PROFILING_NODES = 2


def run_one(data: Path, window: str, scale: float, policy: str) -> dict:
    """One row; ``NAME+tuner``: policy NAME with Lucid's system tuner on."""
    tic = time.perf_counter()
    name, _, option = policy.partition("+")
    result = simulate_job_log(data / "pollux" / "traces" / "philly.csv", data / "lucid" / "philly" / "vc_config.csv",
                              policy=name, window=WINDOWS[window], lucid_data=data / "lucid", vc_scale=scale,
                              profiling_nodes=PROFILING_NODES if name.startswith("lucid") else 0,
                              **({"tuner": True} if option == "tuner" else {}))
    s = result.summary
    notes = " ".join(s["notes"])
    print(*[note for note in s["notes"] if "system tuner" in note], sep="\n")
    shared = re.search(r"(\d+) jobs started on another job's GPUs", notes)
    error = re.search(r"mean absolute error of their (?:estimated )?durations (?:against the trace's )?(\d+) s", notes)
    return {"window": window, "vc_scale": scale, "policy": policy, "jobs": s["jobs"], "gpus": s["gpus"],
            "average_jct_s": round(s["average_jct"], 1), "queueing_mean_s": round(s["queueing_delay_mean"], 1),
            "queueing_p999_s": round(s["queueing_delay_p999"], 1),
            "average_jct_large_s": round(s.get("average_jct_large", float("nan")), 1),
            "average_jct_small_s": round(s.get("average_jct_small", float("nan")), 1),
            "utilization": round(s["utilization"], 4),
            "shared_jobs": int(shared.group(1)) if shared else 0,
            "estimate_mae_s": int(error.group(1)) if error else "",
            "wall_s": round(time.perf_counter() - tic, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--scales", nargs="+", type=float, default=[1.0, 0.25])
    parser.add_argument("--whole", action="store_true", help="also the whole trace (82,248 jobs)")
    args = parser.parse_args()
    kept = []
    if RESULTS.exists():
        with RESULTS.open() as handle:
            kept = list(csv.DictReader(handle))
    rows = []
    for window in ("week", "whole") if args.whole else ("week",):
        for scale in args.scales:
            for policy in args.policies:
                row = run_one(args.data, window, scale, policy)
                print(row, flush=True)
                rows.append(row)
                done = {tuple(str(r[k]) for k in KEYS) for r in rows}
                keep = [r for r in kept if tuple(str(r[k]) for k in KEYS) not in done]
                write_rows(keep + rows, RESULTS)


if __name__ == "__main__":
    main()
