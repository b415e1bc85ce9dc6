"""Checks of policies that plan GPU counts (slots) or whole rounds: each drawn example is a
small workload run on the one engine, which refuses a decision that breaks the cluster's rules
(GPUs beyond the cluster or a job's cap, GPUs to a job not admitted or not arrived, a plan of the
wrong shape).

:func:`workloads` draws 1-6 jobs from Gavel's generator (its job mix, 1-8 GPUs each), scaled to
a hundredth of their steps so a run takes milliseconds, arriving together or over minutes to an
hour, on one GPU type of 1-16 GPUs (at least the largest job's), with deadlines drawn by ElasticFlow's rule
(arrival + uniform(lo, hi) x isolated duration).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from simulator.example_table import example_table
from simulator.generator import generate_trace
from simulator.simulate import simulate

#: a drawn workload's steps are this fraction of the generated jobs'
STEP_FRACTION = 0.01


@st.composite
def workloads(draw) -> dict:
    """Keyword arguments of :func:`simulator.simulate.simulate` for one small workload."""
    trace = generate_trace(example_table(), draw(st.integers(1, 6)), seed=draw(st.integers(0, 10_000)),
                           lam=draw(st.sampled_from((0.0, 60.0, 600.0, 3600.0))), multi_gpu=True)
    trace = dataclasses.replace(trace, total_steps=np.maximum(1, (trace.total_steps * STEP_FRACTION).astype(np.int64)),
                                durations=trace.durations * STEP_FRACTION)
    lo = draw(st.sampled_from((0.5, 1.0, 2.0)))
    gpus = draw(st.sampled_from([g for g in (1, 2, 4, 8, 16) if g >= trace.scale_factors.max()]))
    return {"trace": trace, "cluster": f"v100={gpus}",
            "deadlines": f"uniform:{lo}:{lo + draw(st.sampled_from((0.5, 1.0, 2.0)))}"}


def describe(example: dict) -> dict:
    """A drawn workload as JSON values: the cluster, deadline rule and each job."""
    trace = example["trace"]
    return {"cluster": example["cluster"], "deadlines": example["deadlines"], "jobs": [
        {"job_type": t, "scale_factor": int(s), "total_steps": int(n), "arrival": float(a)}
        for t, s, n, a in zip(trace.job_types, trace.scale_factors, trace.total_steps, trace.arrival_times)]}


def plans_check(ref: str, cls: type, check: str, cfg, run: Callable):
    """One check of a slot or round policy (see the module docstring)."""
    from .runner import Outcome

    name = cls.name
    if getattr(cls, "needs_goodput", False):
        return Outcome(name, check, "skipped", message="runs on Pollux workloads only (goodput models), which "
                                                       "check does not draw")
    if check == "solver_agreement":
        return Outcome(name, check, "skipped", message="GPU-count plans are compared by their runs, not by an "
                                                       "objective: solver agreement is a check of time-share programs")
    if check not in ("invariants", "determinism"):
        return Outcome(name, check, "skipped", message="a fair-division property of time shares; this policy plans "
                                                       "GPU counts")
    solver = "highs" if cfg.solver == "auto" else cfg.solver

    def once(example: dict):
        return simulate(example["trace"], policy=ref, solver=solver, cluster=example["cluster"],
                        deadlines=example["deadlines"], seed=cfg.seed)

    def body(example: dict):
        first = once(example)
        state = first.jobs.get("state")
        if state is not None:
            lost = [i for i, s in enumerate(state) if s not in ("finished", "declined", "failed")]
            if lost:
                return (f"job {lost[0]} ended the run {state[lost[0]]!r} (neither finished, declined nor failed)",
                        {}, describe(example))
        if check == "determinism":
            second = once(example)
            a, b = first.jobs.get("finish"), second.jobs.get("finish")
            if not np.array_equal(a, b, equal_nan=True):
                return ("two runs of the same workload finished jobs at different times", {
                    "first_finish": np.asarray(a).tolist(), "second_finish": np.asarray(b).tolist()},
                    describe(example))
        return None

    count, record = run(cfg, workloads(), lambda example: _described(body, example))
    if record is None:
        return Outcome(name, check, "holds", count)
    return Outcome(name, check, "fails", count, message=record["message"],
                   counterexample={"policy": ref, "check": check, "message": record["message"],
                                   **record["details"], **record["example"]})


def _described(body: Callable, example: dict):
    """``body(example)``, a raise turned into a failure that describes the workload."""
    try:
        return body(example)
    except Exception as exc:  # the engine refused a decision, or the policy raised: a finding
        return f"raised {type(exc).__name__}: {' '.join(str(exc).split())}", {}, describe(example)
