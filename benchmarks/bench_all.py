"""Reference sweep: solve time against size for every formulation ``schedopt bench`` can time.

    python -m benchmarks.bench_all --out benchmarks/results/bench_all

Every name of :func:`schedopt.bench.bench_policies` on :data:`BACKENDS`, seed 0, one run
per case, a :data:`TIME_LIMIT` per solve, jobs / 4 GPUs of each worker type, for each set
of :data:`WORKER_TYPES`. Job counts per :data:`GROUPS`: the space-sharing policies stop
earlier, as their co-located pairs grow with the square of the jobs. Writes the
``schedopt bench`` files (:func:`schedopt.bench.write_outputs`) and prints the tables of
``benchmarks/README.md``, one per group (:func:`readme_table`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from schedopt.bench import SOLVED, Sweep, bench_policies, machine, policy_class, run, write_outputs
from simulator import example_table

BACKENDS = ("highs", "clarabel", "cvxpy:CLARABEL", "cvxpy:HIGHS")
WORKER_TYPES = (("v100", "p100", "k80"), ("v100",))
#: (space-sharing policies?, job counts)
GROUPS = ((False, (64, 256, 1024, 4096)), (True, (64, 128)))
TIME_LIMIT = 60.0


def sweeps() -> list[Sweep]:
    """One sweep per group of :data:`GROUPS`."""
    return [Sweep(policies=tuple(p for p in bench_policies() if policy_class(p).uses_pairs == packed), jobs=jobs,
                  backends=BACKENDS, worker_types=WORKER_TYPES, time_limit=TIME_LIMIT)
            for packed, jobs in GROUPS]


def _ms(seconds: float) -> str:
    return "·" if pd.isna(seconds) else f"{1e3 * seconds:,.0f}" if seconds >= 0.01 else f"{1e3 * seconds:.1f}"


def readme_table(frame: pd.DataFrame, worker_types: str = "v100+p100+k80") -> str:
    """Markdown: per solved (policy, backend) on ``worker_types``, the median solve ms (summed
    over the programs solved) at each job count, then the program count and the build /
    translate ms at the policy's largest job count."""
    solved = frame[(frame["worker_types"] == worker_types) & frame["status"].isin(SOLVED)]
    jobs = sorted(solved["jobs"].unique())
    med = solved.groupby(["policy", "backend", "jobs"])[["solve_s", "build_s", "translate_s", "programs"]].median()
    solve = med["solve_s"].unstack("jobs")
    largest = solved.groupby("policy")["jobs"].max()
    head = ["formulation", "backend", *(f"{n:,}" for n in jobs), "programs", "build / translate (largest)"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(jobs) + 2)]
    order = {b: i for i, b in enumerate(BACKENDS)}
    for policy, backend in sorted(solve.index, key=lambda k: (k[0], order.get(k[1], len(order)))):
        at = med.loc[(policy, backend, largest[policy])] if (policy, backend, largest[policy]) in med.index else None
        tail = ["·", "·"] if at is None else [f"{at['programs']:g}",
                                             f"{_ms(at['build_s'])} / {_ms(at['translate_s'])}"]
        cells = [_ms(solve.loc[(policy, backend), n]) for n in jobs]
        lines.append("| " + " | ".join([f"`{policy}`", backend, *cells, *tail]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/bench_all"))
    parser.add_argument("--group", choices=("all", "single", "space-sharing"), default="all",
                        help="re-run one group only; the other group's rows in OUT/bench.csv are kept")
    args = parser.parse_args(argv)
    table = example_table()
    info = machine()

    def progress(row: dict) -> None:
        print(f"{row['policy']} {row['jobs']} {row['worker_types']} {row['backend']}: {row['status']}",
              file=sys.stderr, flush=True)

    suite = sweeps()
    chosen = suite if args.group == "all" else [suite[args.group == "space-sharing"]]
    frame = pd.DataFrame([row for sweep in chosen for row in run(sweep, table, on_row=progress)])
    previous = args.out / "bench.csv"
    if args.group != "all" and previous.exists():
        kept = pd.read_csv(previous)
        frame = pd.concat([kept[~kept["policy"].isin(chosen[0].policies)], frame], ignore_index=True)
    info["load_average_after"] = list(os.getloadavg())
    for path in write_outputs(frame, info, args.out):
        print(f"wrote {path}", file=sys.stderr)
    print("\n\n".join(readme_table(frame[frame["policy"].isin(sweep.policies)]) for sweep in suite))


if __name__ == "__main__":
    main()
