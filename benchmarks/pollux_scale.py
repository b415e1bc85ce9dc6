"""Pollux's allocation program at 64, 256 and 1,024 GPUs, on real decisions.

    python -m benchmarks.pollux_scale --data ../shared/data [--workload workload-6] [--sample 12]
                                      [--scales 1 4 16]

``pollux`` runs on the workload on Pollux's cluster (16 nodes × 4 GPUs) and keeps ``--sample``
of its decisions, evenly spread over the run and holding 3 jobs or more. Each kept decision is
scaled by k (``--scales``): its jobs and nodes k times over (the i-th copy of a job holds its GPUs
on the i-th copy of their nodes), so the jobs grow in proportion to the GPUs and every job keeps its
speedups (the fair share ⌈G / J⌉ and the scaling K / G are unchanged). Each scaled program is
solved as the policy solves it (:func:`formulations.pollux.solve_allocation` with the policy's
node and time limits, its jobs' current GPUs as the MIP start). Writes
``benchmarks/results/pollux_scale.csv``: per decision and scale the GPUs, jobs, options, the path
(``bound``: the dynamic program's plan packed, optimal without a solver; ``milp``), the status,
the objective Σ_j f(s_j) and ``over_copies``, its excess over k copies of the 64-GPU plan (a plan
of the scaled program, so < 0 only where a limit stopped the solver), build and solve seconds; and
prints per scale the median, p90 and largest seconds per decision.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from allocators.pollux.pollux import Pollux
from formulations.pollux import PolluxProblem, solve_allocation
from simulator.engine import Engine, SlotConfig
from simulator.engine.presets import get_preset
from simulator.simulate import pollux_workload
from simulator.views import slot_view

from .rows import write_rows


class _Keeping(Pollux):
    """``pollux`` keeping the program of each decision with 3 jobs or more."""

    def __init__(self):
        super().__init__()
        self.kept: list[PolluxProblem] = []

    def choose(self, view, terms):
        if terms.jobs.size >= 3:
            self.kept.append(terms.problem())
        return super().choose(view, terms)


def scaled(problem: PolluxProblem, k: int) -> PolluxProblem:
    """``problem`` with its jobs and nodes ``k`` times over (module doc)."""
    p = problem
    J, K = p.num_jobs, p.num_nodes
    copies = np.repeat(np.arange(k), p.job.size)
    current = np.zeros((k * J, k * K), dtype=p.current.dtype)
    for i in range(k):
        current[i * J:(i + 1) * J, i * K:(i + 1) * K] = p.current
    return PolluxProblem(np.tile(p.capacity, k), np.tile(p.job, k) + copies * J, np.tile(p.replicas, k),
                         np.tile(p.spread, k), np.tile(p.speedup, k), np.tile(p.keep, k), current, p.p, p.epsilon)


def sample_decisions(data: Path, workload: str, sample: int) -> list[PolluxProblem]:
    """``sample`` programs of ``pollux`` on ``workload``, evenly spread over its run."""
    work = pollux_workload(data / "pollux" / "workloads" / f"{workload}.csv")
    preset = get_preset("pollux")
    config = SlotConfig(slot=preset.slot, preset="pollux", grid=preset.grid)
    probe = _Keeping()
    Engine(slot_view(work, None, "pollux"), probe, config).run()
    picks = np.linspace(0, len(probe.kept) - 1, sample).round().astype(int)
    return [probe.kept[i] for i in picks]


def measure(problem: PolluxProblem, index: int, k: int) -> dict:
    """One scaled program solved as the policy solves it; ``objective`` is Σ_j f(s_j)."""
    options = Pollux().solve_options()
    tic = time.perf_counter()
    plan = solve_allocation(problem, "highs", options, start=problem.current)
    total = time.perf_counter() - tic
    return {"decision": index, "scale": k, "gpus": int(problem.capacity.sum()), "jobs": problem.num_jobs,
            "options": int(problem.job.size), "path": "bound" if plan.by_bound else "milp",
            "status": plan.status.value,
            "objective": plan.objective, "build_s": round(plan.build_seconds, 4),
            "solve_s": round(plan.solve_seconds, 4), "total_s": round(total, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pollux_scale", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--workload", default="workload-6")
    parser.add_argument("--sample", type=int, default=12)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "pollux_scale.csv")
    args = parser.parse_args(argv)
    problems = sample_decisions(args.data, args.workload, args.sample)
    rows, single = [], {}
    for k in args.scales:
        for i, problem in enumerate(problems):
            row = measure(scaled(problem, k), i, k)
            single.setdefault(i, measure(problem, i, 1)["objective"] if k != 1 else row["objective"])
            # k copies of the 64-GPU plan are a plan of the scaled program: the solver should do no worse
            row["over_copies"] = round(row["objective"] - k * single[i], 6)
            rows.append(row)
            print(row, flush=True)
    write_rows(rows, args.out)
    for k in args.scales:
        mine = [r for r in rows if r["scale"] == k]
        seconds = np.array([r["total_s"] for r in mine])
        q = np.quantile(seconds, [0.5, 0.9, 1.0])
        paths = {p: sum(r["path"] == p for r in mine) for p in ("bound", "milp")}
        unproven = sum(r["status"] != "optimal" for r in mine)
        print(f"{mine[0]['gpus']} GPUs, {min(r['jobs'] for r in mine)}-{max(r['jobs'] for r in mine)} jobs: "
              f"seconds per decision median {q[0]:.3f}, p90 {q[1]:.3f}, max {q[2]:.3f}; bound {paths['bound']}, "
              f"milp {paths['milp']}, unproven {unproven} of {len(mine)}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
