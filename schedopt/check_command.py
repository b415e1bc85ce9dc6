"""``schedopt check``: property-based tests of policies (:mod:`schedopt.testing`), as a command."""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from simulator.files import write_atomically

from .output import console, err


def register(app: typer.Typer, user_errors) -> None:
    app.command("check")(user_errors(check))


def check(
    policies: list[str] = typer.Argument(..., help=(
        "Policies: names, package.module:Class, path/to/file.py:Class, plugin names; `all`: every built-in.")),
    properties: str | None = typer.Option(None, help=(
        "Fair-division properties to test besides those the policy claims: comma-separated of sharing_incentive, "
        "pareto_efficiency, envy_freeness, strategy_proofness, or `all`.")),
    examples: int = typer.Option(100, help="Examples hypothesis draws per check."),
    seed: int = typer.Option(0, help="Seed of hypothesis and of the policies."),
    solver: str = typer.Option("auto", help="The solver of the policy under test (auto: the simulator's default)."),
    backend: list[str] = typer.Option([], help=(
        "Backends solver agreement compares (repeat) \\[default: every installed one that runs the program, "
        "Gurobi's size-limited licence aside].")),
    out: Path = typer.Option(Path("counterexamples"), help="Folder for the counterexamples (JSON), if any."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace counterexamples already in --out."),
    workers: int | None = typer.Option(None, help="Processes checking policies side by side \\[default: one per CPU]."),
) -> None:
    """Property-based testing of policies: invariants (shares, capacity, time budgets, gangs), determinism,
    the same objective on every backend, and the fair-division properties each policy claims (or --properties
    asks for). A failure prints the shrunk counterexample and writes it as JSON that `schedopt solve --problem`
    replays; exit 1."""
    from allocators import load
    from allocators.base import PROPERTIES
    from allocators.registry import BUILT_IN
    from schedopt.testing import BASIC_CHECKS, CheckSettings

    if examples < 1:
        raise ValueError(f"--examples {examples}: give 1 or more")
    refs = sorted(BUILT_IN) if policies == ["all"] else list(dict.fromkeys(policies))
    wanted = _properties(properties, PROPERTIES)
    classes = {ref: load(ref) for ref in refs}
    plan = {ref: tuple(dict.fromkeys((*BASIC_CHECKS, *sorted(cls.claims), *wanted))) for ref, cls in classes.items()}
    if out.is_dir() and any(out.glob("*.json")) and not overwrite:
        raise ValueError(f"--out {str(out)!r} holds counterexamples of an earlier check; --overwrite to replace them")
    cfg = CheckSettings(examples=examples, seed=seed, solver=solver, backends=tuple(backend) or None)
    table = Table(title=f"schedopt check: {examples} examples per check, seed {seed}", box=box.SIMPLE)
    for col in ("policy", "check", "result", "examples", "seconds", "why"):
        table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=70 if col == "why" else None)
    failed = []
    for ref, outcomes in _run_all(plan, cfg, workers):
        for o in outcomes:
            style = {"holds": "green", "fails": "red", "skipped": "dim"}[o.status]
            table.add_row(o.policy, o.check, f"[{style}]{o.status}[/]", str(o.examples), f"{o.seconds:.1f}", o.message)
            if o.failed:
                failed.append(o)
    (console if console.is_terminal else Console(width=200, emoji=False)).print(table)
    for o in failed:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{_slug(o.policy)}.{o.check}.json"
        write_atomically(path, json.dumps(o.counterexample, indent=1))
        console.print(f"[red]{o.policy} {o.check}[/]: {o.message}", highlight=False)
        if o.counterexample and "problem" in o.counterexample:
            console.print(f"  replay: schedopt solve --policy {o.counterexample['policy']} --problem {path}",
                          highlight=False, soft_wrap=True)
        else:
            console.print(f"  counterexample: {path}", highlight=False)
    if failed:
        raise typer.Exit(1)


def _properties(text: str | None, known: tuple[str, ...]) -> tuple[str, ...]:
    if text is None:
        return ()
    names = known if text.strip() == "all" else tuple(p.strip() for p in text.split(",") if p.strip())
    unknown = [p for p in names if p not in known]
    if unknown or not names:
        raise ValueError(f"--properties {text!r}: unknown {', '.join(unknown) or '(none given)'}; "
                         f"known: {', '.join(known)} or all")
    return names


def _run_all(plan: dict, cfg, workers: int | None):
    """(ref, outcomes) per policy, in ``plan``'s order; policies in processes when more than one."""
    from schedopt.testing import check_policy

    workers = min(workers or os.cpu_count() or 1, len(plan))
    if workers <= 1:
        for ref, checks in plan.items():
            err.print(f"checking {ref} ...", highlight=False)
            yield ref, check_policy(ref, checks, cfg)
        return
    with ProcessPoolExecutor(workers) as pool:
        futures = {ref: pool.submit(check_policy, ref, checks, cfg) for ref, checks in plan.items()}
        for ref, future in futures.items():
            yield ref, future.result()


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
