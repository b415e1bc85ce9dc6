"""Wall and CPU time of whole `schedopt simulate` runs (imports included), as a user runs them.

    python -m benchmarks.simulator_speed --data ../shared/data [--repeat 3]

Runs Gavel's generated continuous traces on 36:36:36 under max_min_fairness_perf and
writes ``benchmarks/results/simulator_speed.csv`` with the fastest of ``--repeat`` runs
(CPU time of the child process, user + system). The project's bytecode is compiled first,
as any install or earlier run leaves it (an environment with PYTHONDONTWRITEBYTECODE would
otherwise recompile every module on every run). The published simulator needs about
20 s (single_lam900, window 100:400) and 12 s (multi_lam1800, window 100:300) of CPU.
"""

from __future__ import annotations

import argparse
import compileall
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .rows import write_rows

CASES = (("single_lam900.trace", "100:400", 20.0), ("multi_lam1800.trace", "100:300", 12.0))


def run_case(data: Path, trace: str, window: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "schedopt", "simulate", "--trace", str(data / "gavel_generated" / trace),
               "--throughputs", str(data / "gavel" / "simulation_throughputs.json"),
               "--cluster", "v100=36,p100=36,k80=36", "--policy", "max_min_fairness_perf", "--window", window,
               "--no-progress", "--out", out]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        tic = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        wall = time.perf_counter() - tic
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        summary = json.loads((Path(out) / "summary.json").read_text())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"trace": trace, "window": window, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "average_jct_window_s": round(summary["average_jct_window"], 1), "rounds": summary["rounds"],
            "solves": summary["solves"], "solver_total_s": round(summary["solver_seconds_total"], 3)}


def compile_project() -> None:
    root = Path(__file__).resolve().parents[1]
    for package in ("schedopt", "optim", "formulations", "allocators", "simulator"):
        compileall.compile_dir(root / package, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/simulator_speed.csv"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    compile_project()
    rows = []
    for trace, window, published in CASES:
        row = min((run_case(args.data, trace, window) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
        row["published_cpu_s"] = published
        row["speedup_cpu"] = round(published / row["cpu_s"], 1)
        rows.append(row)
        print(row)
    write_rows(rows, args.out)


if __name__ == "__main__":
    main()
