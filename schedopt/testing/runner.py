"""``schedopt check``: property-based testing of any policy with hypothesis.

A time-share policy (built-in or the user's) is checked on snapshots drawn by
:func:`~schedopt.testing.strategies.problems`: invariants, determinism (two fresh policy objects
give the same shares), solver agreement (the same objective, within each solver's tolerance, on
every installed backend that runs its program; on ``examples / backends`` examples, at least 5,
as each solves it once per backend) and the fair-division properties of
:mod:`~schedopt.testing.properties` it claims or that are asked for. A policy planning GPU counts
(slots) or whole rounds is checked by running it on small drawn workloads on the one engine, which
refuses any decision that breaks the cluster's rules: every decision valid, every job ends (done,
declined or failed with a reason), and the same outcome twice.

A failing check's minimal example (hypothesis shrinks it) is returned as a counterexample: the
problem in the JSON of :mod:`simulator.problem_files`, which ``schedopt solve --problem`` replays.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from allocators import load, make_policy
from allocators.base import PROPERTIES, Policy, ProgramClass
from allocators.round_plans import RoundPlanner
from formulations import Allocation, AllocationProblem
from optim import SolveOptions, Status, backends_with
from simulator.problem_files import problem_to_dict

from . import properties as props
from .strategies import misreports, problems

#: checks every policy gets, before the properties it claims
BASIC_CHECKS = ("invariants", "determinism", "solver_agreement")
#: objective agreement between backends: relative, by accuracy class
EXACT_RTOL, FIRST_ORDER_RTOL = 1e-5, 2e-3
#: backends left out of solver agreement unless named: size-limited licence
LICENSED = ("gurobi",)


class _Failed(Exception):
    """A check failed on the example hypothesis is trying."""


@dataclass
class Outcome:
    """One check of one policy: ``status`` is ``holds``, ``fails`` or ``skipped`` (``message``
    says why); ``counterexample`` is the shrunk failing example as JSON values."""

    policy: str
    check: str
    status: str
    examples: int = 0
    seconds: float = 0.0
    message: str = ""
    counterexample: dict | None = None

    @property
    def failed(self) -> bool:
        return self.status == "fails"


@dataclass
class CheckSettings:
    """How hard to look: ``examples`` per check, hypothesis' ``seed``, the solver of the
    policy under test, and the backends solver agreement compares (None: every installed one
    that can run the program, but the size-limited Gurobi licence)."""

    examples: int = 100
    seed: int = 0
    solver: str = "auto"
    backends: tuple[str, ...] | None = None
    max_jobs: int = 8


def check_policy(ref: str, checks: tuple[str, ...] | None = None, settings_: CheckSettings | None = None,
                 on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run ``checks`` (default: :data:`BASIC_CHECKS` and the properties the policy claims) on the
    policy ``ref`` (a name or any reference :func:`allocators.load` takes)."""
    cfg = settings_ or CheckSettings()
    cls = load(ref)
    wanted = checks if checks is not None else (*BASIC_CHECKS, *sorted(cls.claims))
    unknown = [c for c in wanted if c not in (*BASIC_CHECKS, *PROPERTIES)]
    if unknown:
        raise ValueError(f"unknown check(s) {', '.join(unknown)}; known: {', '.join((*BASIC_CHECKS, *PROPERTIES))}")
    shares = issubclass(cls, Policy) and not issubclass(cls, RoundPlanner)
    out = []
    for check in wanted:
        start = time.perf_counter()
        outcome = (_check_shares if shares else _check_plans)(ref, cls, check, cfg)
        outcome.seconds = time.perf_counter() - start
        out.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return out


def policy_factory(ref: str, cls: type, solver: str, run_seed: int) -> Callable[..., Policy]:
    """Fresh policy objects of ``ref`` on ``solver`` (``auto``: the simulator's default for it),
    seeded where the policy takes a seed."""
    from simulator.simulate import default_solver

    params = {"seed": run_seed} if "seed" in inspect.signature(cls.__init__).parameters else {}

    def make(backend: str | None = None) -> Policy:
        spec = backend or (default_solver(ref) if solver == "auto" else solver)
        return make_policy(ref, spec, SolveOptions(seed=run_seed), **params)

    return make


def _run(cfg: CheckSettings, strategy, body: Callable) -> tuple[int, dict | None]:
    """Run ``body(example)`` on up to ``cfg.examples`` drawn examples; (examples run, the shrunk
    failure's record or None). ``body`` returns None or (message, details, {"problem": ...})."""
    record: dict = {}
    count = [0]

    @seed(cfg.seed)
    @settings(max_examples=cfg.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(strategy)
    def test(example):
        count[0] += 1
        try:
            with warnings.catch_warnings():  # solvers' accuracy warnings: their status says it, once per solve
                warnings.simplefilter("ignore")
                failure = body(example)
        except Exception as exc:  # the policy raised: that is a finding, shrunk like any other
            problem = example[0] if isinstance(example, tuple) else example
            failure = (f"raised {type(exc).__name__}: {' '.join(str(exc).split())}", {}, {"problem": problem})
        if failure is not None:
            record.update(message=failure[0], details=failure[1], example=failure[2])
            raise _Failed(failure[0])

    try:
        test()
    except _Failed:
        return count[0], record
    return count[0], None


def _check_shares(ref: str, cls: type, check: str, cfg: CheckSettings) -> Outcome:
    make = policy_factory(ref, cls, cfg.solver, cfg.seed)
    name = make().name
    pairs = bool(cls.uses_pairs)
    strategy = problems(max_jobs=cfg.max_jobs, pairs=pairs, multi_gpu=cls.multi_gpu_jobs)
    if check == "solver_agreement":
        backends = _agreement_backends(cls, cfg)
        if cls.program is ProgramClass.HEURISTIC:
            return Outcome(name, check, "skipped", message="a heuristic solves no program")
        if len(backends) < 2:
            return Outcome(name, check, "skipped", message=f"fewer than two backends run it ({', '.join(backends)})")

        compared = list(backends)

        def body(problem):
            failure = _agreement(make, compared, problem)
            if failure is not None:  # shrink on the pair that disagreed: a sixth of the solves
                compared[:] = failure[1]["pair"]
            return failure

        cfg = replace(cfg, examples=agreement_examples(cfg.examples, len(backends)))
    elif check == "invariants":
        def body(problem):
            allocation = make().allocate(problem)
            found = props.invariants(allocation)
            return _failure(found, problem, allocation)
    elif check == "determinism":
        def body(problem):
            a, b = make().allocate(problem), make().allocate(problem)
            same = np.array_equal(a.x, b.x) and (a.pair_x is None) == (b.pair_x is None) and (
                a.pair_x is None or np.array_equal(a.pair_x, b.pair_x))
            if same:
                return None
            diff = float(np.abs(a.x - b.x).max())
            return _failure(props.Violation(f"two fresh policy objects gave different shares (largest difference "
                                            f"{diff:.3g})", {"second_allocation": b.x.tolist()}), problem, a)
    elif check == "strategy_proofness":
        strategy = st.tuples(strategy, st.data())

        def body(drawn):
            problem, data = drawn
            job, factors = data.draw(misreports(problem))
            allocation = make().allocate(problem)
            found = props.strategy_proofness(lambda p: make().allocate(p), allocation, job, factors)
            return _failure(found, problem, allocation)
    else:
        check_one = props.PROPERTY_CHECKS[check]

        def body(problem):
            allocation = make().allocate(problem)
            return _failure(check_one(allocation), problem, allocation)

    count, record = _run(cfg, strategy, body)
    if record is None:
        return Outcome(name, check, "holds", count)
    return Outcome(name, check, "fails", count, message=record["message"],
                   counterexample={"solver": make().solver, **_counterexample(ref, check, record)})


def agreement_examples(examples: int, backends: int) -> int:
    """Examples solver agreement draws: each solves the program on every backend, so it draws
    ``examples / backends`` (at least 5), keeping its solves near the other checks' count."""
    return max(5, -(-examples // backends))


def _agreement_backends(cls: type, cfg: CheckSettings) -> list[str]:
    if cfg.backends is not None:
        return list(cfg.backends)
    return [b for b in backends_with(cls.program.needs) if not any(name in b.lower() for name in LICENSED)]


def _agreement(make, backends: list[str], problem: AllocationProblem):
    from optim import get_backend

    values = {}
    for spec in backends:
        allocation = make(spec).allocate(problem)
        if allocation.result is not None and allocation.result.status is not Status.OPTIMAL:
            continue  # a backend stopped short (an iteration or time limit): its value is no optimum to compare
        values[spec] = allocation.objective
    if len(values) < 2 or any(v is None for v in values.values()):
        return None  # the policy reports no objective, or one backend alone finished: nothing to compare
    first = next(iter(values))
    reference = values[first]
    for spec, value in values.items():
        loose = get_backend(spec).first_order or get_backend(first).first_order
        rtol = FIRST_ORDER_RTOL if loose else EXACT_RTOL
        if abs(value - reference) > rtol * max(1.0, abs(reference)):
            return (f"objective {value:.9g} on {spec} against {reference:.9g} on {first}",
                    {"objectives": values, "pair": [first, spec]}, {"problem": problem})
    return None


def _failure(found: props.Violation | None, problem: AllocationProblem, allocation: Allocation):
    if found is None:
        return None
    details = {"allocation": allocation.x.tolist(), **found.details}
    if allocation.pair_x is not None:
        details["pair_allocation"] = allocation.pair_x.tolist()
    return found.message, details, {"problem": problem}


def _counterexample(ref: str, check: str, record: dict) -> dict:
    example = record["example"]
    doc = {"policy": ref, "check": check, "message": record["message"], **record["details"]}
    problem = example.get("problem")
    if isinstance(problem, AllocationProblem):
        doc["problem"] = problem_to_dict(problem)
    else:
        doc.update(example)
    return doc


def _check_plans(ref: str, cls: type, check: str, cfg: CheckSettings) -> Outcome:
    from .workloads import plans_check

    return plans_check(ref, cls, check, cfg, _run)


__all__ = ["BASIC_CHECKS", "CheckSettings", "Outcome", "check_policy", "policy_factory"]
