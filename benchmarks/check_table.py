"""``schedopt check`` over every built-in policy with every property: the table of
docs/checks.md (policy x check: holds, fails with the shrunk counterexample's message, or
skipped with the reason), and how long each policy's default checks take.

    python -m benchmarks.check_table --examples 100 --out benchmarks/results/check_table.csv
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from allocators import load
from allocators.base import PROPERTIES
from allocators.registry import BUILT_IN
from schedopt.testing import BASIC_CHECKS, CheckSettings, check_policy
from simulator.files import write_atomically


def _one(ref: str, examples: int, seed: int) -> list[dict]:
    rows = []
    for outcome in check_policy(ref, (*BASIC_CHECKS, *PROPERTIES), CheckSettings(examples=examples, seed=seed)):
        rows.append({"policy": ref, "system": load(ref).system, "check": outcome.check,
                     "claimed": outcome.check in load(ref).claims, "status": outcome.status,
                     "examples": outcome.examples, "seconds": round(outcome.seconds, 2), "why": outcome.message})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--policies", nargs="*", default=sorted(BUILT_IN))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/check_table.csv"))
    args = parser.parse_args()
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        parts = list(pool.map(_one, args.policies, [args.examples] * len(args.policies),
                              [args.seed] * len(args.policies)))
    frame = pd.DataFrame([row for part in parts for row in part])
    write_atomically(args.out, frame.to_csv(index=False))
    wide = frame.pivot(index="policy", columns="check", values="status")[[*BASIC_CHECKS, *PROPERTIES]]
    print(wide.to_string())
    print(f"{len(frame)} checks of {len(args.policies)} policies in {time.perf_counter() - start:.0f} s "
          f"({args.workers} workers); wrote {args.out}")


if __name__ == "__main__":
    main()
