"""Space sharing without building every pair column: packed programs by column generation.

A packed program's columns are cells (c, j): combination c (a job, or a pair in
``problem.pairs``) on worker type j. Every program built on :mod:`combinations` reads x
only through the base rows and the throughput map, so a cell's column and cost are

    A_(c,j) = s_c e_cap(j) + sum_{i in c} e_time(i) + sum_{i in c} E_i(c,j) b_ij,
    cost_(c,j) = sum_{i in c} E_i(c,j) o_ij,

with ``E_i(c,j)`` job i's rate in c on j and ``(b_ij, o_ij)`` the rows and cost per unit
of that rate. With row duals y, single (i, j)'s reduced cost
``r_ij = T_ij v_ij - s_i y_cap(j) - y_time(i)`` gives ``v_ij = o_ij - y . b_ij`` for every
runnable single, and every pair p = (a, b) prices at once, as P × n arrays:

    r_pj = R_a(p,j) v_aj + R_b(p,j) v_bj - s_p y_cap(j) - y_time(a) - y_time(b).

A pair with a positive rate where a member cannot run alone cannot be priced this way and
is in the master from the start. Each round adds every job's most improving pair; their
columns come from the formulation's own build over just those pairs, and their exact
reduced costs must equal the priced ones (which checks the structure above). When no pair
cell prices above ``PRICING_TOL`` the duals are feasible for the LP over all pairs: the
master's optimum is the full program's optimum, and that maximum reduced cost is the
certificate reported.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from optim import CanonicalModel, Model, ModelError, Result, SolveOptions, Status, get_backend, solve
from optim.backends.column_masters import NewColumns
from optim.column_generation import PRICING_TOL, generate_columns
from optim.sparse import transpose_times

from .problem import Allocation, AllocationProblem, JobPairs
from .rates import pair_runnable, runnable

#: relative disagreement between priced and exact reduced costs that means the
#: formulation's pair columns do not follow the combination structure
STRUCTURE_TOL = 1e-7


@dataclasses.dataclass(frozen=True)
class PairGeneration:
    """``generated``: indices into ``problem.pairs`` of the pairs in the final master, in
    master order; ``max_reduced_cost``: the largest reduced cost of any pair cell at the
    final duals (the certificate, <= ``PRICING_TOL`` when ``fallback`` is None);
    ``fallback``: why the full LP was solved instead; ``stopped``: why generation ended
    early without it (the time limit: the allocation is feasible, not proven optimal)."""

    rounds: int
    candidates: int
    generated: np.ndarray
    max_reduced_cost: float
    fallback: str | None = None
    stopped: str | None = None

    def note(self) -> str:
        if self.stopped is not None:
            return (f"column generation stopped ({self.stopped}) with {self.generated.size} of {self.candidates} "
                    "pairs generated: the allocation is feasible, not proven optimal")
        if self.fallback is not None:
            return f"column generation stopped ({self.fallback}); solved the LP over all {self.candidates} pairs"
        return (f"column generation: {self.rounds} master LPs, {self.generated.size} of {self.candidates} pairs "
                f"generated; certificate: largest reduced cost of any pair cell {self.max_reduced_cost:.1e} "
                f"(tolerance {PRICING_TOL:.0e})")


def with_pairs(problem: AllocationProblem, which: np.ndarray) -> AllocationProblem:
    """``problem`` with only the pairs ``which`` (indices into ``problem.pairs``)."""
    pairs = problem.job_pairs()
    return dataclasses.replace(problem, pairs=JobPairs(pairs.first[which], pairs.second[which], pairs.rates[which]))


def widen(allocation: Allocation, problem: AllocationProblem, generated: np.ndarray | None) -> Allocation:
    """``allocation`` (over ``with_pairs(problem, generated)``) as an allocation of ``problem``
    (``allocation`` itself when ``generated`` is None: it is over ``problem`` already)."""
    if generated is None:
        return allocation
    pair_x = np.zeros((len(problem.job_pairs()), problem.num_types))
    if allocation.pair_x is not None:
        pair_x[generated] = allocation.pair_x
    return dataclasses.replace(allocation, problem=problem, pair_x=pair_x)


def solve_packed(problem: AllocationProblem, build: Callable[[AllocationProblem], Model], solver: str,
                 options: SolveOptions) -> tuple[AllocationProblem, Model, Result, PairGeneration]:
    """Solve the packed LP ``build(problem)`` generating its pair columns (module doc).

    Returns the problem restricted to the generated pairs, its model and a result optimal
    for the full LP (the model's rows must not depend on which pairs are present). Falls
    back to the full LP, said in the notes, when a master is not optimal (e.g. rows that
    only pairs can satisfy); a license refusal or solver error raises as :func:`optim.solve`.
    """
    pairs = problem.job_pairs()
    m, n, P = problem.num_jobs, problem.num_types, len(pairs)
    backend = get_backend(solver)
    pricer = _PairPricer(problem)
    master = build(with_pairs(problem, pricer.unpriceable)).canonical()
    pricer.attach(master)
    ties = np.random.default_rng(0).random(P)
    in_master = np.zeros((n, P), dtype=bool)
    in_master[:, pricer.unpriceable] = True
    position = np.full(P, -1, dtype=np.int64)
    position[pricer.unpriceable] = np.arange(pricer.unpriceable.size)
    order = [pricer.unpriceable]
    cells: list[np.ndarray] = []
    certificate = [np.inf]

    def price(y: np.ndarray) -> NewColumns | None:
        best, certificate[0] = pricer.best(y, in_master)
        candidates = np.flatnonzero(best > PRICING_TOL)
        if candidates.size == 0:
            return None
        chosen = _best_per_job(candidates, best[candidates], pairs, ties)
        priced = pricer.cells(y, chosen)
        row, typ = np.nonzero((priced > PRICING_TOL) & ~in_master[:, chosen].T)
        columns = _pair_columns(build(with_pairs(problem, chosen)).canonical(), master, m, row * n + typ)
        exact = pricer.sign * (columns.c - columns.A.T @ y)
        if not np.allclose(exact, priced[row, typ], rtol=STRUCTURE_TOL, atol=STRUCTURE_TOL):
            raise ModelError(f"{master.name}: pair columns do not follow the combination structure "
                             "(formulations.pair_generation); column generation cannot price them")
        new = chosen[position[chosen] < 0]
        position[new] = sum(map(len, order)) + np.arange(new.size)
        order.append(new)
        in_master[typ, chosen[row]] = True
        cells.append(position[chosen[row]] * n + typ)
        return columns

    gen = generate_columns(master, price, backend, options)
    if gen.stopped is not None and not gen.timed_out:
        gen.result.raise_for_status()  # a license refusal or solver error: the full LP would meet it too
        model = build(problem)
        result = solve(model, backend, options)
        info = PairGeneration(gen.rounds, P, np.arange(P), np.nan, gen.stopped)
        result.notes.append(info.note())
        return problem, model, result, info
    generated = np.concatenate(order)
    info = PairGeneration(gen.rounds, P, generated, np.nan if gen.timed_out else certificate[0],
                          stopped=gen.stopped)
    final_problem = with_pairs(problem, generated)
    model = build(final_problem)
    final = model.canonical()
    _check_rows(final, master)
    if not gen.result.has_solution:  # the first master reached the time limit without a point
        gen.result.notes.append(info.note())
        return final_problem, model, dataclasses.replace(gen.result, blocks=final.blocks), info
    values = _final_columns(gen.result.x, master, final, m, np.concatenate([np.zeros(0, dtype=np.int64), *cells]))
    result = dataclasses.replace(
        gen.result, x=values, objective=final.objective_value(values), blocks=final.blocks,
        reduced_costs=final.c - transpose_times(final.A, gen.result.row_duals), notes=[*gen.result.notes, info.note()],
    )
    if gen.timed_out:
        result = dataclasses.replace(result, status=Status.TIME_LIMIT, bound=None, row_duals=None, reduced_costs=None)
    return final_problem, model, result, info


class _PairPricer:
    """Improvement per unit (reduced cost, sign-adjusted: > 0 improves) of every pair cell
    from a master's row duals (module doc); ``unpriceable``: pairs it cannot price."""

    def __init__(self, problem: AllocationProblem):
        pairs = problem.job_pairs()
        self.problem, self.first, self.second = problem, pairs.first, pairs.second
        alone = runnable(problem)
        priceable = (((pairs.rates[:, :, 0] == 0) | alone[pairs.first])
                     & ((pairs.rates[:, :, 1] == 0) | alone[pairs.second]))
        usable = pair_runnable(problem)
        self.unpriceable = np.flatnonzero((usable & ~priceable).any(axis=1))
        self.blocked = np.ascontiguousarray((~(usable & priceable)).T)
        self.rate_first = np.ascontiguousarray(pairs.rates[:, :, 0].T)
        self.rate_second = np.ascontiguousarray(pairs.rates[:, :, 1].T)
        self.pair_scale = problem.scale_factors[pairs.first].astype(float)
        self.alone = alone

    def attach(self, master: CanonicalModel) -> None:
        """Read the single cells' columns and the base rows' positions from ``master``."""
        m, n = self.problem.num_jobs, self.problem.num_types
        x = master.blocks["x"]
        singles = np.arange(x.start, x.start + m * n)
        self.single_A, self.single_c = master.A.scipy()[:, singles].T.tocsr(), master.c[singles]
        self.cap, self.time = master.row_blocks["capacity"], master.row_blocks["time_budget"]
        self.sign = 1.0 if master.sense == "max" else -1.0

    def _unit_values(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``v`` transposed (n, m), the capacity duals (n,) and the time-budget duals (m,)."""
        p = self.problem
        y_cap, y_time = y[self.cap], y[self.time]
        r_single = (self.single_c - self.single_A @ y).reshape(p.num_jobs, p.num_types)
        v = np.divide(r_single + p.scale_factors[:, None] * y_cap + y_time[:, None], p.throughputs,
                      out=np.zeros(r_single.shape), where=self.alone)
        return np.ascontiguousarray(v.T), y_cap, y_time

    def best(self, y: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, float]:
        """(P,): each pair's largest improvement over its types outside ``held`` (n, P), and
        the largest improvement of any pair cell (the certificate)."""
        v, y_cap, y_time = self._unit_values(y)
        base = -(y_time.take(self.first) + y_time.take(self.second))
        best = np.full(self.first.shape, -np.inf)
        largest = -np.inf
        for j in range(v.shape[0]):
            r = self.rate_first[j] * v[j].take(self.first)
            r += self.rate_second[j] * v[j].take(self.second)
            r -= self.pair_scale * y_cap[j]
            r += base
            r *= self.sign
            r[self.blocked[j]] = -np.inf
            largest = max(largest, float(r.max(initial=-np.inf)))
            r[held[j]] = -np.inf
            np.maximum(best, r, out=best)
        return best, largest

    def cells(self, y: np.ndarray, which: np.ndarray) -> np.ndarray:
        """(len(which), n): the improvement of every cell of the pairs ``which`` (-inf where
        the pair cannot run)."""
        v, y_cap, y_time = self._unit_values(y)
        a, b = self.first[which], self.second[which]
        r = (self.rate_first[:, which] * v[:, a] + self.rate_second[:, which] * v[:, b]
             - y_cap[:, None] * self.pair_scale[which] - (y_time[a] + y_time[b]))
        return np.where(self.blocked[:, which], -np.inf, self.sign * r).T


def _best_per_job(candidates: np.ndarray, improvement: np.ndarray, pairs: JobPairs, ties: np.ndarray) -> np.ndarray:
    """The candidate pairs (improvement > 0) that are some member job's most improving one.
    Improvements within a relative 1e-9 rank by ``ties`` (random keys per pair): jobs of one
    kind price the same, and a fixed order would pair every job with the same partner."""
    score = improvement * (1.0 + 1e-9 * ties[candidates])
    members = np.concatenate([pairs.first[candidates], pairs.second[candidates]])
    scores = np.concatenate([score, score])
    top = np.full(pairs.first.max(initial=0) + pairs.second.max(initial=0) + 2, -np.inf)
    np.maximum.at(top, members, scores)
    return np.unique(np.concatenate([candidates, candidates])[scores == top[members]])


def _pair_columns(model: CanonicalModel, master: CanonicalModel, m: int, cells: np.ndarray) -> NewColumns:
    """The columns of the pair cells ``cells`` (flat over the pairs after the ``m`` singles of
    ``model``'s block x), checked to live in ``master``'s rows."""
    _check_rows(model, master)
    x = model.blocks["x"]
    columns = x.start + m * x.shape[1] + cells
    return NewColumns(model.A.scipy()[:, columns], model.c[columns], model.col_hi[columns])


def _check_rows(model: CanonicalModel, master: CanonicalModel) -> None:
    if (model.num_rows != master.num_rows or not np.array_equal(model.row_lo, master.row_lo)
            or not np.array_equal(model.row_hi, master.row_hi)):
        raise ModelError(f"{master.name}: its rows change with the pairs present; column generation needs "
                         "rows that do not depend on them")


def _final_columns(master_x: np.ndarray, master: CanonicalModel, final: CanonicalModel, m: int,
                   cells: np.ndarray) -> np.ndarray:
    """The master's solution laid out in ``final``'s columns: every block of the master at
    the start of the same block of ``final`` (whose block x has more pairs), then the
    added columns at pair cells ``cells`` (flat over the pairs after the ``m`` singles)."""
    values = np.zeros(final.num_vars)
    for name, block in master.blocks.items():
        target = final.blocks[name]
        values[target.start:target.start + block.size] = master_x[block.columns]
    x = final.blocks["x"]
    values[x.start + m * x.shape[1] + cells] = master_x[master.num_vars:]
    return values
