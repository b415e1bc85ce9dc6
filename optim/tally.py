"""Timings summed over a block of code, however many models it builds and solves.

>>> with tally() as spent:
...     ...  # any number of Model builds and solves, e.g. a policy's allocate
>>> spent.build, spent.translate, spent.solve  # doctest: +SKIP

``build`` adds each :class:`optim.Model`'s build time once, from ``Model()`` to its last
:meth:`~optim.Model.canonical` assembly (a model changed and assembled again adds the time
since its last assembly); ``translate`` and ``solve`` add each finished solve once, cold
or warm (a column-generation master, a bisection step; a tangent-cut loop's rounds are one
solve). Derived models (``relaxed()``, ``replace(canon, ...)``) add no build of their own.
Tallies nest: a solve counts in every open one. Each thread (context) has its own; work done
in other processes joins through :func:`add_spent`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .result import Timings

_OPEN: ContextVar[tuple[Timings, ...]] = ContextVar("optim_open_tallies", default=())


@contextmanager
def tally() -> Iterator[Timings]:
    """The :class:`Timings` spent inside the ``with`` block (module doc), filled as it runs."""
    spent = Timings()
    token = _OPEN.set(_OPEN.get() + (spent,))
    try:
        yield spent
    finally:
        _OPEN.reset(token)


def add_build(seconds: float) -> None:
    """One model assembly's build time, into every open tally."""
    for spent in _OPEN.get():
        spent.build += seconds


def add_solve(timings: Timings) -> None:
    """One finished solve's translate and solve time, into every open tally."""
    for spent in _OPEN.get():
        spent.translate += timings.translate
        spent.solve += timings.solve


def add_spent(timings: Timings) -> None:
    """A tally taken elsewhere (another process), build included, into every open tally."""
    add_build(timings.build)
    add_solve(timings)
