"""Pollux's allocation (OSDI'21) as an exact MILP: GPUs per job per node maximizing the p-mean of
the jobs' speedups.

Jobs j, nodes n with C_n GPUs. Job j has options o (rows of :class:`PolluxProblem`): ``r_o`` GPUs
on one node (``spread_o = 0``) or across two or more (``spread_o = 1``), worth speedup ``s_o``
(the caller scales it and applies Pollux's restart penalty), or ``keep_o``: exactly its current
GPUs per node ``b_j``; choosing no option leaves the job without GPUs (s = 0). A node hosts at most
one spread job (Pollux's interference avoidance).

Within a node only its total counts, and single-node jobs of equal size are interchangeable, as are
the nodes spread jobs take a portion of. So the program places *patterns*, not jobs: a pattern π
of a node of C GPUs is a spread portion q_π ∈ {0..C} and a count c_πs of single-node jobs of each
size s, with q_π + Σ_s s c_πs ≤ C. Nodes holding GPUs now are groups of one; the other nodes of
equal capacity are one group g of m_g nodes. With y_o ∈ {0,1} (moving options: not keep), v_gπ ∈
ℤ₊ (nodes of g given π) and t_jq ∈ ℤ₊ (nodes on which spread job j takes q GPUs)::

    optimize  Σ_o (f(s_o) − f(0)) y_o        f(s) = (s + ε)^p (minimized for p < 0, maximized
                                             for p > 0), log(s + ε) (maximized, p = 0)
    s.t.      Σ_{o∈j} y_o ≤ 1                                   every job
              Σ_π v_gπ ≤ m_g                                    every group
              Σ_gπ c_πs v_gπ = Σ_{o moving, single, r_o = s} y_o  every size s
              Σ_gπ [q_π = q] v_gπ = Σ_j t_jq                     every portion q
              Σ_q q t_jq = Σ_{o∈j moving, spread} r_o y_o        every job
              Σ_q t_jq ≥ 2 Σ_{o∈j moving, spread} y_o            two nodes and more when spread
              Σ_π (q_π + Σ_s s c_πs) v_nπ + Σ_{o keep} b_jn y_o ≤ C_n      every node n holding GPUs
              Σ_π [q_π > 0] v_nπ + Σ_{o keep, spread, b_jn > 0} y_o ≤ 1     every node n holding GPUs

Any solution is a plan (:func:`_decode` gives each pattern's slots and portions to the jobs), and
every plan gives a solution, so the program is exact; it has no job-per-node variables and none of
the symmetry between equal jobs and between empty nodes that a job-per-node program has.

The p-mean ((1/J) Σ_j (s_j + ε)^p)^(1/p) is monotone in Σ_j f(s_j) and each job has one option
(or none), so Σ_j f(s_j) = J f(0) + Σ_o (f(s_o) − f(0)) y_o is linear in y.

:func:`solve_allocation` first tries :func:`bound_and_pack`: a dynamic program over the cluster's
totals (GPUs, nodes hosting a spread job, half nodes) gives the best options when node packing is
ignored, an upper bound; when a greedy packs them on the nodes, that plan is optimal without a
solver. Otherwise the MILP above decides. Nothing here knows about time or traces.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from optim import Model, OptimError, SolveOptions, Status, solve
from optim.sparse import scipy_sparse as sp

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


@functools.lru_cache(maxsize=64)
def node_patterns(capacity: int, sizes: tuple[int, ...], portions: bool) -> tuple[np.ndarray, np.ndarray]:
    """Every non-empty content of a node of ``capacity`` GPUs: a spread portion (0: none; 1 to
    capacity when ``portions``) and a count of single-node jobs of each of ``sizes``, together at
    most ``capacity`` GPUs. Returns portion (P,) and counts (P, len(sizes))."""
    rows = []

    def extend(prefix: tuple[int, ...], room: int) -> None:
        k = len(prefix) - 1
        if k == len(sizes):
            rows.append(prefix)
            return
        for c in range(room // sizes[k] + 1):
            extend((*prefix, c), room - c * sizes[k])

    for portion in range(capacity + 1 if portions else 1):
        extend((portion,), capacity - portion)
    table = np.array([r for r in rows if any(r)], dtype=np.int64).reshape(-1, len(sizes) + 1)
    return table[:, 0], table[:, 1:]


@dataclass(frozen=True)
class _Layout:
    """The pattern program's index sets: node groups (one per node holding GPUs now, one per
    capacity for the others), each group's patterns (``group``, ``portion``, ``counts``), the
    single sizes, and the jobs with a moving spread option (``spread_jobs``)."""

    groups: list[np.ndarray]
    group: np.ndarray
    portion: np.ndarray
    counts: np.ndarray
    sizes: np.ndarray
    spread_jobs: np.ndarray


def _layout(problem: PolluxProblem) -> _Layout:
    p = problem
    moving = ~p.keep
    sizes = np.unique(p.replicas[moving & ~p.spread])
    spread_jobs = np.unique(p.job[moving & p.spread])
    held = p.current.sum(axis=0) > 0
    groups = [np.array([n]) for n in np.flatnonzero(held).tolist()]
    groups += [np.flatnonzero(~held & (p.capacity == c)) for c in np.unique(p.capacity[~held]).tolist()]
    group, portion, counts = [], [], []
    for g, nodes in enumerate(groups):
        pr, ct = node_patterns(int(p.capacity[nodes[0]]), tuple(sizes.tolist()), bool(spread_jobs.size))
        group.append(np.full(pr.size, g)), portion.append(pr), counts.append(ct)
    return _Layout(groups, np.concatenate(group), np.concatenate(portion), np.concatenate(counts), sizes,
                   spread_jobs)


def build(problem: PolluxProblem, layout: _Layout | None = None) -> Model:
    """The pattern MILP of the module doc (``layout``: the problem's :func:`_layout`, if known)."""
    p, lay = problem, layout or _layout(problem)
    J, n_opt, V = p.num_jobs, p.job.size, lay.group.size
    m = Model("pollux")
    y = m.add_variables("y", n_opt, vtype="binary")
    members = np.array([nodes.size for nodes in lay.groups], dtype=float)
    v = m.add_variables("v", V, vtype="integer", ub=members[lay.group])
    pick = sp.csr_matrix((np.ones(n_opt), (p.job, np.arange(n_opt))), shape=(J, n_opt))
    m.add_rows("one_option", {y: pick}, hi=1.0)
    in_group = sp.csr_matrix((np.ones(V), (lay.group, np.arange(V))), shape=(len(lay.groups), V))
    m.add_rows("group_nodes", {v: in_group}, hi=members)
    moving = ~p.keep
    single = sp.csr_matrix((np.ones(int((moving & ~p.spread).sum())),
                            (np.searchsorted(lay.sizes, p.replicas[moving & ~p.spread]),
                             np.flatnonzero(moving & ~p.spread))), shape=(lay.sizes.size, n_opt))
    m.add_rows("singles", {v: sp.csr_matrix(lay.counts.T), y: -single}, lo=0.0, hi=0.0)
    nodes = np.flatnonzero(p.current.sum(axis=0) > 0)
    held = nodes.size
    kept = np.flatnonzero(p.keep)
    if held:
        load = sp.csr_matrix(p.current[p.job[kept]][:, nodes].T.astype(float))
        used = sp.csr_matrix(((lay.portion + lay.counts @ lay.sizes).astype(float),
                              (lay.group, np.arange(V))), shape=(len(lay.groups), V))[:held]
        m.add_rows("node_capacity", {v: used, y: _columns(load, kept, n_opt)}, hi=p.capacity[nodes].astype(float))
        wide = kept[p.spread[kept]]
        hosts = sp.csr_matrix((p.current[p.job[wide]][:, nodes].T > 0).astype(float))
        hosting = sp.csr_matrix(((lay.portion > 0).astype(float), (lay.group, np.arange(V))),
                                shape=(len(lay.groups), V))[:held]
        m.add_rows("one_spread_job", {v: hosting, y: _columns(hosts, wide, n_opt)}, hi=1.0)
    if lay.spread_jobs.size:
        S, top = lay.spread_jobs.size, int(p.capacity.max())
        t = m.add_variables("t", (S, top), vtype="integer")
        each = np.arange(1, top + 1, dtype=float)
        portion = sp.csr_matrix((np.ones(int((lay.portion > 0).sum())),
                                 (lay.portion[lay.portion > 0] - 1, np.flatnonzero(lay.portion > 0))), shape=(top, V))
        m.add_rows("portions", {v: portion, t: -sp.kron(np.ones((1, S)), sp.eye(top), format="csr")}, lo=0.0, hi=0.0)
        wide = np.flatnonzero(moving & p.spread)
        of_job = sp.csr_matrix((np.ones(wide.size), (np.searchsorted(lay.spread_jobs, p.job[wide]), wide)),
                               shape=(S, n_opt))
        m.add_rows("spread_size", {t: sp.kron(sp.eye(S), each[None, :], format="csr"),
                                   y: -of_job.multiply(p.replicas[None, :]).tocsr()}, lo=0.0, hi=0.0)
        m.add_rows("spread_hosts", {t: sp.kron(sp.eye(S), np.ones((1, top)), format="csr"), y: -2.0 * of_job},
                   lo=0.0)
    gain = utility(p.speedup, p.p, p.epsilon) - utility(0.0, p.p, p.epsilon)
    m.set_objective({y: gain}, sense="max")
    return m


def _columns(per_option: sp.csr_matrix, options: np.ndarray, n_opt: int) -> sp.csr_matrix:
    """``per_option`` (rows × options.size) as a matrix over all ``n_opt`` options."""
    return (per_option @ sp.csr_matrix((np.ones(options.size), (np.arange(options.size), options)),
                                       shape=(options.size, n_opt))).tocsr()


def _decode(problem: PolluxProblem, lay: _Layout, option: np.ndarray, v: np.ndarray, t: np.ndarray | None
            ) -> np.ndarray:
    """GPUs per job per node of the pattern program's solution: kept jobs keep their GPUs; each
    group's patterns go to its nodes in order; single-node jobs of each size take the slots of that
    size, spread jobs their portions (``t``), in node order."""
    p = problem
    gpus = np.zeros((p.num_jobs, p.num_nodes), dtype=np.int64)
    chosen = np.flatnonzero(option >= 0)
    kept = chosen[p.keep[option[chosen]]]
    gpus[kept] = p.current[kept]
    slots: dict[int, list[int]] = {int(s): [] for s in lay.sizes.tolist()}
    portions: dict[int, list[int]] = {}
    filled = {g: 0 for g in range(len(lay.groups))}
    for k in np.flatnonzero(v > 0).tolist():
        g = int(lay.group[k])
        for _ in range(int(v[k])):
            n = int(lay.groups[g][filled[g]])
            filled[g] += 1
            for s, c in zip(lay.sizes.tolist(), lay.counts[k].tolist(), strict=True):
                slots[s] += [n] * c
            if lay.portion[k]:
                portions.setdefault(int(lay.portion[k]), []).append(n)
    moving = chosen[~p.keep[option[chosen]]]
    for j in moving[~p.spread[option[moving]]].tolist():
        gpus[j, slots[int(p.replicas[option[j]])].pop(0)] = p.replicas[option[j]]
    for row, j in enumerate(lay.spread_jobs.tolist()):
        for q in np.flatnonzero(t[row] > 0).tolist() if t is not None else []:
            for _ in range(int(t[row, q])):
                gpus[j, portions[q + 1].pop(0)] = q + 1
    return gpus


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
    layout = _layout(problem)
    canon = build(problem, layout).canonical()
    built = time.perf_counter() - t0
    opts = options or SolveOptions()
    if opts.mip_gap is None:
        opts = SolveOptions(**{**vars(opts), "mip_gap": MIP_GAP})
    if start is not None:
        opts = SolveOptions(**{**vars(opts), "start": _start_vector(problem, layout, start)})
    result = solve(canon, solver, opts, check=False)
    if not (result.status in _SOLVED and result.has_solution):
        raise OptimError(f"pollux allocation: {solver} returned {result.status.value} without a solution")
    y = result.value("y") > 0.5
    option = np.full(problem.num_jobs, -1, dtype=np.int64)
    option[problem.job[y]] = np.flatnonzero(y)
    t = np.rint(result.value("t")).astype(np.int64) if "t" in result.blocks else None
    gpus = _decode(problem, layout, option, np.rint(result.value("v")).astype(np.int64), t)
    return PolluxPlan(gpus, option, objective(problem, option), result.status, built,
                      result.timings.translate + result.timings.solve, canon.num_integers, canon.num_rows)


def _start_vector(problem: PolluxProblem, lay: _Layout, gpus: np.ndarray) -> np.ndarray | None:
    """The MIP start of the keep options (every job with GPUs keeps them, no other job moves in),
    or None."""
    p = problem
    holds = gpus.sum(axis=1) > 0
    keep = np.flatnonzero(p.keep)
    if (np.asarray(gpus) != p.current).any() or not set(np.flatnonzero(holds)) <= set(p.job[keep].tolist()):
        return None
    y = np.zeros(p.job.size)
    y[keep[holds[p.job[keep]]]] = 1.0
    return np.concatenate([y, np.zeros(lay.group.size + lay.spread_jobs.size * int(p.capacity.max()))])
