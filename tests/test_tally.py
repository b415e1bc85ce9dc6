"""optim.tally: the build / translate / solve time of everything inside a block, each model
assembly and each finished solve counted once."""

import threading

import numpy as np
import pytest

from optim import Model, Session, solve, tally
from optim.column_generation import solve_by_column_generation


def knapsack(n: int = 4, budget: float = 2.0) -> Model:
    m = Model("knapsack")
    x = m.add_variables("x", n, ub=1.0)
    m.add_rows("budget", {x: np.arange(1.0, n + 1.0)[None, :]}, hi=budget)
    m.set_objective({x: np.ones(n)}, sense="max")
    return m


def test_each_assembly_and_each_solve_count_once():
    with tally() as spent:
        a, b = knapsack(), knapsack(6)
        ra = solve(a, "highs")
        a.canonical()  # cached: no second build
        rb = solve(b.canonical(), "highs")
        rb2 = solve(b, "highs")  # the same assembly solved twice: one build, two solves
    assert spent.build == pytest.approx(ra.timings.build + rb.timings.build, rel=1e-12)
    assert spent.translate == pytest.approx(ra.timings.translate + rb.timings.translate + rb2.timings.translate)
    assert spent.solve == pytest.approx(ra.timings.solve + rb.timings.solve + rb2.timings.solve)
    assert min(spent.build, spent.solve) > 0
    assert spent.total == pytest.approx(spent.build + spent.translate + spent.solve)


def test_a_model_changed_after_assembly_adds_only_the_time_since():
    m = knapsack()
    with tally() as spent:
        first = m.canonical().build_seconds
        y = m.add_variables("y", 1, ub=1.0)
        m.add_rows("more", {y: [[1.0]]}, hi=1.0)
        second = m.canonical().build_seconds
    assert second > first and spent.build == pytest.approx(second, rel=1e-12)


def test_tallies_nest_and_stop_at_the_end_of_their_block():
    with tally() as outer:
        r1 = solve(knapsack(), "highs")
        with tally() as inner:
            r2 = solve(knapsack(5), "highs")
        after = inner.solve
        solve(knapsack(3), "highs")
    assert inner.solve == pytest.approx(r2.timings.solve) and inner.solve == after
    assert outer.solve > r1.timings.solve + r2.timings.solve
    assert outer.build > inner.build > 0


def test_warm_session_solves_and_column_generation_masters_are_counted():
    session = Session("highs")
    with tally() as spent:
        cold = session.solve(knapsack(4, 2.0))
        warm = session.solve(knapsack(4, 3.0))
    assert session.warm
    assert spent.solve == pytest.approx(cold.timings.solve + warm.timings.solve)
    assert spent.translate == pytest.approx(cold.timings.translate + warm.timings.translate)
    with tally() as spent:
        m = knapsack(8, 3.0)
        res = solve_by_column_generation(m, "highs", block="x", initial=np.eye(8, dtype=bool)[0])
    assert "column generation: " in " ".join(res.notes)
    # the result sums its masters' times; the tally holds each master once and nothing more
    assert spent.solve == pytest.approx(res.timings.solve) and spent.translate == pytest.approx(res.timings.translate)


def test_a_tally_sees_only_its_own_thread():
    with tally() as spent:
        worker = threading.Thread(target=lambda: solve(knapsack(), "highs"))
        worker.start()
        worker.join()
    assert spent.build == spent.translate == spent.solve == 0.0
