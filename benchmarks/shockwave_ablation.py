"""Which published rule makes Shockwave's figures: an ablation on the 120-job canonical run.

    python -m benchmarks.shockwave_ablation --data ../shared/data [--seeds 0 1 2 3 4] [--workers 2]

``--gavel-compat`` turns on two groups of published rules: the simulator's (batch-size rules,
epoch-rounded progress, overhead charged after the round: ``engine``) and the planner's
(:data:`allocators.shockwave.policy.PUBLISHED_RULES`: ``clock``, ``predictor``, ``log``). Each
variant runs the default mode with one group or one planner rule turned on, or compat mode
with one planner rule turned off, over the seeds. Writes one row per (variant, seed) to
``benchmarks/results/shockwave_ablation.csv`` and prints the median of each metric per
variant beside the published figures (lower is better on all four).
"""

from __future__ import annotations

import argparse
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from allocators.shockwave.policy import PUBLISHED_RULES

from .rows import write_rows
from .shockwave import CASES, METRICS, PUBLISHED, run_case

#: name -> (engine compat, planner rules)
VARIANTS = {
    "default": (False, ()),
    "+engine": (True, ()),
    **{f"+{rule}": (False, (rule,)) for rule in PUBLISHED_RULES},
    "+planner": (False, PUBLISHED_RULES),
    **{f"compat -{rule}": (True, tuple(r for r in PUBLISHED_RULES if r != rule)) for rule in PUBLISHED_RULES},
    "compat": (True, PUBLISHED_RULES),
}


def run_variant(data: Path, name: str, seed: int) -> dict:
    engine, rules = VARIANTS[name]
    row = run_case(data, CASES[0], "shockwave", engine, seed, rules)
    return {"variant": name, "engine": engine, "rules": " ".join(rules), "seed": seed,
            **{metric: row[metric] for metric, _ in METRICS}, "wall_s": row["wall_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/shockwave_ablation.csv"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    jobs = [(name, seed) for name in args.variants for seed in args.seeds]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        rows = list(pool.map(run_variant, [args.data] * len(jobs), *zip(*jobs)))
    write_rows(rows, args.out)
    published = dict(zip((m for m, _ in METRICS), PUBLISHED[(CASES[0].jobs, "shockwave")]))
    print("published: " + ", ".join(f"{m} {v:,.4g}" for m, v in published.items()))
    for name in args.variants:
        group = [r for r in rows if r["variant"] == name]
        medians = {m: statistics.median(r[m] for r in group) for m, _ in METRICS}
        wins = sum(medians[m] <= published[m] for m in medians)
        print(f"{name:>18}: " + ", ".join(f"{m} {v:,.4g}" for m, v in medians.items())
              + f"  ({wins} of 4 at least as good as published)", flush=True)


if __name__ == "__main__":
    main()
