"""Pollux's allocation (OSDI'21) as an exact MILP: GPUs per job per node maximizing the p-mean of
the jobs' speedups.

Jobs j, nodes n with C_n GPUs. Job j has options o (rows of :class:`PolluxProblem`): ``r_o`` GPUs
on one node (``spread_o = 0``) or across two or more (``spread_o = 1``), worth speedup ``s_o``
(the caller scales it and applies Pollux's restart penalty), or ``keep_o``: exactly its current
GPUs per node ``b_j``; choosing no option leaves the job without GPUs (s = 0). With y_o ∈ {0,1},
x_jn ∈ ℤ₊ (GPUs of j on n), z_jn ∈ {0,1} (j uses n), w_jn ∈ [0,1] and D_j = Σ_{o∈j, spread} y_o::

    optimize  Σ_o (f(s_o) − f(0)) y_o        f(s) = (s + ε)^p (minimized for p < 0, maximized
                                             for p > 0), log(s + ε) (maximized, p = 0)
    s.t.      Σ_{o∈j} y_o ≤ 1                                  every job
              Σ_n x_jn = Σ_{o∈j} r_o y_o                        every job
              z_jn ≤ x_jn ≤ C_n z_jn                            every job, node
              2 D_j ≤ Σ_n z_jn ≤ 1 + (K − 1) D_j                one node, or two and more when spread
              x_jn ≥ b_jn y_o                                   o: j's keep option
              Σ_j x_jn ≤ C_n                                    every node
              w_jn ≥ z_jn + D_j − 1,   Σ_j w_jn ≤ 1             one spread job per node at most

Empty nodes of full capacity are interchangeable, so they are ordered by load (Σ_j x_jn ≥ Σ_j x_jn'
for consecutive empty n < n'): a symmetry-breaking row that keeps one of every set of equal plans.

The p-mean ((1/J) Σ_j (s_j + ε)^p)^(1/p) is monotone in Σ_j f(s_j) and each job has one option
(or none), so Σ_j f(s_j) = J f(0) + Σ_o (f(s_o) − f(0)) y_o is linear in y: the program is exact.
The last pair of rows is Pollux's interference avoidance.

:func:`solve_allocation` first tries :func:`bound_and_pack`: a dynamic program over the cluster's
totals (GPUs, nodes hosting a spread job, half nodes) gives the best options when node packing is
ignored, an upper bound; when a greedy packs them on the nodes, that plan is optimal without a
solver. Otherwise the MILP above decides. Nothing here knows about time or traces.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from optim import Model, OptimError, SolveOptions, Status, solve

#: Pollux's fairness exponent and offset
P = -1.0
EPSILON = 1e-3

#: relative MIP gap: the objective carries f(0) = ε^p = 1000 per job without GPUs, so the default
#: 1e-4 would accept a plan that gives up differences in speedup of a tenth
MIP_GAP = 1e-9

_SOLVED = (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT)


@dataclass(frozen=True)
class PolluxProblem:
    """One decision (module doc): ``capacity`` (K,); per option ``job``, ``replicas``, ``spread``,
    ``speedup``, ``keep`` (O,); ``current`` (J, K) GPUs per job per node (what keep options keep)."""

    capacity: np.ndarray
    job: np.ndarray
    replicas: np.ndarray
    spread: np.ndarray
    speedup: np.ndarray
    keep: np.ndarray
    current: np.ndarray
    p: float = P
    epsilon: float = EPSILON

    @property
    def num_jobs(self) -> int:
        return self.current.shape[0]

    @property
    def num_nodes(self) -> int:
        return self.capacity.size


def utility(speedup, p: float = P, epsilon: float = EPSILON):
    """f(s) of the module doc, in the direction it is optimized (larger is better)."""
    s = np.asarray(speedup, dtype=float) + epsilon
    if p == 0:
        return np.log(s)
    return -(s ** p) if p < 0 else s ** p


def p_mean(speedups, p: float = P, epsilon: float = EPSILON) -> float:
    """Pollux's fairness: ((1/J) Σ (s_j + ε)^p)^(1/p) (geometric mean for p = 0)."""
    s = np.asarray(speedups, dtype=float) + epsilon
    if p == 0:
        return float(np.exp(np.log(s).mean()))
    return float(np.mean(s ** p) ** (1 / p))


def build(problem: PolluxProblem) -> Model:
    p = problem
    J, K, n_opt = p.num_jobs, p.num_nodes, p.job.size
    cap = p.capacity.astype(float)
    m = Model("pollux")
    y = m.add_variables("y", n_opt, vtype="binary")
    x = m.add_variables("x", (J, K), vtype="integer", ub=np.broadcast_to(cap, (J, K)))
    z = m.add_variables("z", (J, K), vtype="binary")
    w = m.add_variables("w", (J, K), ub=1.0)
    jk = J * K
    pick = sp.csr_matrix((np.ones(n_opt), (p.job, np.arange(n_opt))), shape=(J, n_opt))
    m.add_rows("one_option", {y: pick}, hi=1.0)
    per_job = sp.kron(sp.eye(J), np.ones((1, K)), format="csr")
    m.add_rows("replicas", {x: per_job, y: -pick.multiply(p.replicas[None, :]).tocsr()}, lo=0.0, hi=0.0)
    eye = sp.eye(jk, format="csr")
    m.add_rows("uses", {z: eye, x: -eye}, hi=0.0)
    m.add_rows("holds", {x: eye, z: -sp.diags(np.tile(cap, J), format="csr")}, hi=0.0)
    spread = pick.multiply(p.spread.astype(float)[None, :]).tocsr()
    m.add_rows("one_node", {z: per_job, y: -(K - 1) * spread}, hi=1.0)
    m.add_rows("spread_nodes", {z: per_job, y: -2.0 * spread}, lo=0.0)
    kept = np.flatnonzero(p.keep)
    if kept.size:
        jobs = p.job[kept]
        rows, nodes = np.nonzero(p.current[jobs] > 0)
        count = rows.size
        m.add_rows("keep", {x: sp.csr_matrix((np.ones(count), (np.arange(count), jobs[rows] * K + nodes)),
                                             shape=(count, jk)),
                            y: sp.csr_matrix((-p.current[jobs[rows], nodes].astype(float), (np.arange(count),
                                                                                            kept[rows])),
                                             shape=(count, n_opt))}, lo=0.0)
    per_node = sp.kron(np.ones((1, J)), sp.eye(K), format="csr")
    m.add_rows("capacity", {x: per_node}, hi=cap)
    empty = np.flatnonzero((p.current.sum(axis=0) == 0) & (cap == cap.max()))
    if empty.size > 1:
        order = sp.csr_matrix((np.tile([1.0, -1.0], empty.size - 1),
                               (np.repeat(np.arange(empty.size - 1), 2),
                                np.column_stack([empty[:-1], empty[1:]]).ravel())), shape=(empty.size - 1, K))
        m.add_rows("empty_nodes_by_load", {x: (order @ per_node).tocsr()}, lo=0.0)
    spread_of = sp.kron(spread, np.ones((K, 1)), format="csr")
    m.add_rows("interference", {w: eye, z: -eye, y: -spread_of}, lo=-1.0)
    m.add_rows("one_spread_job", {w: per_node}, hi=1.0)
    gain = utility(p.speedup, p.p, p.epsilon) - utility(0.0, p.p, p.epsilon)
    m.set_objective({y: gain}, sense="max")
    return m


@dataclass(frozen=True)
class PolluxPlan:
    """GPUs per job per node, the chosen option per job (-1: none), the objective Σ_j f(s_j) (larger
    is better), the solver's status and times, the model's size, and whether :func:`bound_and_pack`
    gave the plan (then no model was built: its size is 0)."""

    gpus: np.ndarray
    option: np.ndarray
    objective: float
    status: Status
    build_seconds: float
    solve_seconds: float
    num_integers: int
    num_rows: int
    by_bound: bool = False


def objective(problem: PolluxProblem, option: np.ndarray) -> float:
    """Σ_j f(s_j) of a choice of one option per job (-1: none)."""
    s = np.where(option >= 0, problem.speedup[np.maximum(option, 0)], 0.0)
    return float(utility(s, problem.p, problem.epsilon).sum())


#: most entries of the bound's dynamic program (jobs × GPUs × spread hosts × half nodes; 4 bytes each)
BOUND_STATES = 25_000_000


def bound_and_pack(problem: PolluxProblem) -> PolluxPlan | None:
    """The program's optimum when its relaxation packs: a dynamic program picks the best option per
    job under three cluster totals alone (an upper bound of the program): GPUs; nodes hosting a
    spread job (a spread option needs max(2, ⌈r / C⌉), C the largest node); and, on nodes of 4 GPUs,
    half nodes (a node holds one single-node job of 3 or 4 GPUs, or two of 2: 2 and 1 halves). If
    the options it picks fit on the nodes (:func:`pack`), that plan is optimal; else None."""
    t0 = time.perf_counter()
    p = problem
    total, K = int(p.capacity.sum()), p.num_nodes
    per_node = int(p.capacity.max())
    halves = 2 * K if per_node == 4 else 0
    if (total + 1) * (K + 1) * (halves + 1) * max(p.num_jobs, 1) > BOUND_STATES:
        return None
    gain = utility(p.speedup, p.p, p.epsilon) - utility(0.0, p.p, p.epsilon)
    hosts, half = _aggregates(p)
    shape = (total + 1, K + 1, halves + 1)
    best = np.zeros(shape)
    picks = np.full((p.num_jobs, *shape), -1, dtype=np.int32)
    for j in range(p.num_jobs):
        new = best.copy()
        for o in np.flatnonzero(p.job == j).tolist():
            r, h, u = int(p.replicas[o]), int(hosts[o]), int(half[o])
            if r > total or h > K or u > halves:
                continue
            cand = best[:total + 1 - r, :K + 1 - h, :halves + 1 - u] + gain[o]
            better = cand > new[r:, h:, u:] + 1e-12
            new[r:, h:, u:][better] = cand[better]
            picks[j, r:, h:, u:][better] = o
        best = new
    option = np.full(p.num_jobs, -1, dtype=np.int64)
    g, h, u = np.unravel_index(int(np.argmax(best)), shape)
    for j in range(p.num_jobs - 1, -1, -1):
        o = int(picks[j, g, h, u])
        option[j] = o
        if o >= 0:
            g, h, u = g - int(p.replicas[o]), h - int(hosts[o]), u - int(half[o])
    gpus = pack(p, option)
    if gpus is None:
        return None
    return PolluxPlan(gpus, option, objective(p, option), Status.OPTIMAL, time.perf_counter() - t0, 0.0, 0, 0,
                      by_bound=True)


def _aggregates(problem: PolluxProblem) -> tuple[np.ndarray, np.ndarray]:
    """Per option, the nodes hosting it if spread (a keep option: the nodes it holds now; else
    max(2, ⌈r / C⌉), C the largest node) and, on nodes of 4 GPUs, the half nodes it takes if
    single-node (2 for 3 or 4 GPUs, 1 for 2)."""
    p = problem
    per_node = int(p.capacity.max())
    held = (p.current[p.job] > 0).sum(axis=1)
    hosts = np.where(p.spread, np.where(p.keep, held, np.maximum(2, -(-p.replicas // per_node))), 0)
    half = np.where(p.spread | (per_node != 4), 0, np.select([p.replicas >= 3, p.replicas == 2], [2, 1], 0))
    return hosts, half


def pack(problem: PolluxProblem, option: np.ndarray) -> np.ndarray | None:
    """GPUs per job per node realizing one option per job, or None where this greedy finds none:
    kept jobs keep their GPUs; then single-node jobs of 2 GPUs and more, largest first, each on the
    fullest node it fits on; then spread jobs, largest first, on the nodes with the most free GPUs
    that host no other spread job (two at least); then 1-GPU jobs on the fullest nodes."""
    p = problem
    gpus = np.zeros((p.num_jobs, p.num_nodes), dtype=np.int64)
    chosen = np.flatnonzero(option >= 0)
    kept = chosen[p.keep[option[chosen]]]
    gpus[kept] = p.current[kept]
    free = p.capacity - gpus.sum(axis=0)
    hosts = (gpus[kept[p.spread[option[kept]]]] > 0).any(axis=0) if kept.size else np.zeros(p.num_nodes, bool)
    moving = chosen[~p.keep[option[chosen]]]
    size = p.replicas[option[moving]]
    spread = p.spread[option[moving]]
    for group in (moving[~spread & (size >= 2)], moving[spread], moving[~spread & (size == 1)]):
        for j in group[np.argsort(-p.replicas[option[group]], kind="stable")].tolist():
            need = int(p.replicas[option[j]])
            if p.spread[option[j]]:
                nodes = np.flatnonzero(~hosts & (free > 0))
                nodes = nodes[np.argsort(-free[nodes], kind="stable")]
                if nodes.size < 2 or free[nodes].sum() < need:
                    return None
                for k, n in enumerate(nodes.tolist()):
                    take = min(int(free[n]), need - (1 if k == 0 else 0))
                    gpus[j, n], free[n], need, hosts[n] = take, free[n] - take, need - take, True
                    if need == 0:
                        break
            else:
                fits = np.flatnonzero(free >= need)
                if not fits.size:
                    return None
                n = fits[np.argmin(free[fits])]
                gpus[j, n], free[n] = need, free[n] - need
    return gpus


def solve_allocation(problem: PolluxProblem, solver: str = "highs", options: SolveOptions | None = None,
                     start: np.ndarray | None = None) -> PolluxPlan:
    """Solve the program: :func:`bound_and_pack` where its relaxation packs (then optimal without a
    solver), else the MILP (relative gap :data:`MIP_GAP` unless ``options`` sets one); ``start`` (J, K):
    a feasible allocation handed to the solver as a MIP start where it is one of the options.
    Raises :class:`~optim.OptimError` when the solver finds none."""
    packed = bound_and_pack(problem)
    if packed is not None:
        return packed
    t0 = time.perf_counter()
    canon = build(problem).canonical()
    built = time.perf_counter() - t0
    opts = options or SolveOptions()
    if opts.mip_gap is None:
        opts = SolveOptions(**{**vars(opts), "mip_gap": MIP_GAP})
    if start is not None:
        opts = SolveOptions(**{**vars(opts), "start": _start_vector(problem, start)})
    result = solve(canon, solver, opts, check=False)
    if not (result.status in _SOLVED and result.has_solution):
        raise OptimError(f"pollux allocation: {solver} returned {result.status.value} without a solution")
    y = result.value("y") > 0.5
    option = np.full(problem.num_jobs, -1, dtype=np.int64)
    option[problem.job[y]] = np.flatnonzero(y)
    gpus = np.rint(result.value("x")).astype(np.int64).reshape(problem.num_jobs, problem.num_nodes)
    return PolluxPlan(gpus, option, objective(problem, option), result.status, built,
                      result.timings.translate + result.timings.solve, canon.num_integers, canon.num_rows)


def _start_vector(problem: PolluxProblem, gpus: np.ndarray) -> np.ndarray | None:
    """The MIP start of the keep options (every job with GPUs keeps them), or None."""
    p = problem
    n_opt = p.job.size
    y = np.zeros(n_opt)
    holds = gpus.sum(axis=1) > 0
    keep = np.flatnonzero(p.keep)
    if (np.asarray(gpus) != p.current).any() or not set(np.flatnonzero(holds)) <= set(p.job[keep].tolist()):
        return None
    y[keep[holds[p.job[keep]]]] = 1.0
    z = (gpus > 0).astype(float)
    spread = z.sum(axis=1) > 1
    w = z * spread[:, None]
    return np.concatenate([y, gpus.ravel().astype(float), z.ravel(), w.ravel()])
