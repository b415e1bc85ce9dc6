"""HiGHS through highspy: the canonical model is passed as arrays, no translation."""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import replace

import numpy as np

from ..basis import Basis
from ..canonical import CanonicalModel
from ..capabilities import Capability
from ..options import SolveOptions
from ..result import Result, Status, Timings
from .base import Backend, LiveModel, stopwatch

#: HiGHS' model status when its LP method stops without a conclusion: dual simplex with presolve
#: does on some zero-objective LPs near the edge of feasibility, where primal simplex decides
UNKNOWN = "Unknown"
#: the heuristics that solve sub-MIPs, whose presolve does not keep to the time limit
STRICT_OFF = ("mip_heuristic_run_rins", "mip_heuristic_run_rens", "mip_heuristic_run_root_reduced_cost")


CAPABILITIES = frozenset({Capability.LP, Capability.MILP, Capability.DUALS, Capability.WARM_START,
                          Capability.INCREMENTAL, Capability.VERTEX})


class HighsBackend(Backend):
    spec = "highs"
    package = "highspy"

    def capabilities(self) -> frozenset[Capability]:
        return CAPABILITIES

    def version(self) -> str:
        import highspy

        quiet_banner()
        return highspy.Highs().version()

    def solve(self, model: CanonicalModel, options: SolveOptions) -> Result:
        timings = Timings()
        start = options.start if model.is_mip else None
        result, reported = self._run(model, options, start, timings)
        if start is not None and result.has_solution and not _same_objective(result.objective, reported):
            returned = result.objective
            result, _ = self._run(model, options, None, timings)
            result.notes.append(f"HiGHS returned a point of objective {returned:.10g} while reporting {reported:.10g} "
                                "(it kept the MIP start it had presolved); re-solved without the start")
        if result.message == UNKNOWN and not model.is_mip and options.method != "primal":
            result, _ = self._run(model, replace(options, method="primal"), None, timings)
            result.notes.append(f"HiGHS ended the LP with status {UNKNOWN} (method {options.method}); "
                                "re-solved by primal simplex without presolve")
        return result

    def _run(self, model: CanonicalModel, options: SolveOptions, start: np.ndarray | None,
             timings: Timings) -> tuple[Result, float]:
        """One HiGHS run: the result and the objective HiGHS reports for it."""
        import highspy

        refused = None
        pooled = not model.is_mip and model.A.nnz <= POOLED_NONZEROS
        with stopwatch(timings, "translate"):
            h = load_highs(model, options, pooled)
            if h is not None and start is not None:
                point = highspy.HighsSolution()
                point.col_value = np.asarray(start, dtype=float).tolist()
                h.setSolution(point)
            if h is not None and options.basis is not None and h.setBasis(highs_basis(options.basis)) \
                    == highspy.HighsStatus.kError:
                refused = "HiGHS refused the starting basis; its simplex started from its own"
        if h is None:
            return Result(Status.ERROR, self.spec, message="HiGHS rejected the model", timings=timings), np.nan
        with stopwatch(timings, "solve"):
            run_highs(h)
        info = h.getInfo()
        result = read_result(h, model, timings, self.spec, info=info)
        if pooled:
            give_back(h)
        if refused:
            result.notes.append(refused)
        return result, float(info.objective_function_value)

    def live(self, options: SolveOptions) -> LiveModel:
        from .highs_live import HighsLive

        return HighsLive(options, self.spec)


#: pure LPs with more columns than this default to interior point (+ crossover): on the
#: max-min LPs it is 2x faster than simplex at 768 columns, 10x at 6,000 and 40x at
#: 30,000 (benchmarks/README.md)
IPM_AUTO_COLUMNS = 500


def highs_lp_method(options: SolveOptions, model: CanonicalModel) -> str | None:
    """HiGHS' "solver" option for ``options.method`` (None = leave HiGHS' default)."""
    if model.is_mip:
        return None
    if options.method == "auto":
        return "ipm" if model.num_vars > IPM_AUTO_COLUMNS else None
    return "simplex" if options.method == "primal" else options.method


#: HiGHS' simplex_strategy value for primal simplex (re-optimizing after added columns or
#: changed bounds keeps the basis primal feasible)
PRIMAL_SIMPLEX = 4


@functools.cache
def quiet_banner() -> None:
    """HiGHS prints its banner to standard output the first time a process creates a
    ``Highs`` object, before any option can be set (later objects, including those of
    cvxpy and Pyomo, never print it). That first object is made here with file
    descriptor 1 pointed at the null device; logs asked for with ``verbose`` still print."""
    import highspy

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output to keep clean
        highspy.Highs()
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


#: idle HiGHS objects, as fresh ones are (:func:`give_back`), for :func:`load_highs` with ``pooled``
#: (lists pop and append atomically, so threads never share one); at most ``POOL_SIZE``
_IDLE: list = []
POOL_SIZE = 4
#: LPs with at most this many nonzeros are solved on a pooled object
POOLED_NONZEROS = 100_000


def load_highs(model: CanonicalModel, options: SolveOptions, pooled: bool = False):
    """A HiGHS object holding ``model`` with ``options`` applied; None when HiGHS rejects the model.

    It is highspy's core object, without ``highspy.Highs``' Python callbacks (none is used; about
    20 us a model). With ``pooled`` it is an idle one from ``_IDLE`` where there is one: creating
    and destroying a HiGHS object (its option records above all) cost about 0.1 ms around a
    0.15 ms run of a small LP. The caller gives it back (:func:`give_back`) after reading its
    result."""
    import highspy

    quiet_banner()
    try:
        h = _IDLE.pop() if pooled else highspy._Highs()
    except IndexError:
        h = highspy._Highs()
    apply_options(h, options, model)
    A = model.A
    sense = highspy.ObjSense.kMaximize if model.sense == "max" else highspy.ObjSense.kMinimize
    status = h.passModel(
        model.num_vars, model.num_rows, A.nnz, int(highspy.MatrixFormat.kColwise), int(sense), model.offset,
        model.c, model.col_lo, model.col_hi, model.row_lo, model.row_hi,
        A.indptr.astype(np.int32, copy=False), A.indices.astype(np.int32, copy=False), A.data,
        model.integrality.astype(np.int32),
    )
    return None if status == highspy.HighsStatus.kError else h


def give_back(h) -> None:
    """``h`` into the pool (unless it is full) as a fresh object is: HiGHS' default options, and no
    model, solver data or run time (``releaseMemory``; HiGHS measures a time limit from the
    object's total run time, so a reused object that kept its clocks would stop early)."""
    if len(_IDLE) < POOL_SIZE:
        h.resetOptions()
        h.releaseMemory()
        _IDLE.append(h)


def highs_basis(basis: Basis):
    """``basis`` as a ``highspy.HighsBasis`` (the neutral codes are HiGHS' kLower, kBasic, kUpper),
    marked as not alien: it has one basic entry per row (:meth:`Basis.check`), so HiGHS takes it
    as it is and factors it in the run, instead of factoring it in ``setBasis`` first (about 50 us
    on a 141-row LP); a singular one has its rank deficiency repaired there with slacks."""
    import highspy

    codes = _basis_codes()
    out = highspy.HighsBasis()
    out.col_status = codes[basis.columns].tolist()
    out.row_status = codes[basis.rows].tolist()
    out.valid = True
    out.alien = False
    return out


@functools.cache
def _basis_codes() -> np.ndarray:
    """HiGHS' basis statuses indexed by the neutral codes (LOWER, BASIC, UPPER)."""
    import highspy

    status = highspy.HighsBasisStatus
    return np.array([status.kLower, status.kBasic, status.kUpper], dtype=object)


def _same_objective(returned: float, reported: float) -> bool:
    return abs(returned - reported) <= 1e-6 * max(1.0, abs(reported))


def apply_options(h, options: SolveOptions, model: CanonicalModel) -> None:
    """``options`` on ``h``. HiGHS runs on a thread pool per calling thread, sized at that
    thread's first run; a thread count is honoured by resetting that pool (HiGHS refuses the
    run otherwise). Without one, HiGHS' "threads" is pinned (:func:`default_threads`)."""
    h.setOptionValue("output_flag", bool(options.verbose))
    if options.threads is not None:
        h.resetGlobalScheduler(True)
        h.setOptionValue("threads", int(options.threads))
    elif pin := pinned_threads():
        h.setOptionValue("threads", pin)
    if options.node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(options.node_limit))
    if options.time_limit is not None:
        h.setOptionValue("time_limit", float(options.time_limit))
        if options.strict_time_limit:
            for heuristic in STRICT_OFF:
                h.setOptionValue(heuristic, False)
    if options.mip_gap is not None:
        h.setOptionValue("mip_rel_gap", float(options.mip_gap))
    if options.seed is not None:
        h.setOptionValue("random_seed", int(options.seed))
    if options.scaling is False:
        h.setOptionValue("simplex_scale_strategy", 0)
    method = highs_lp_method(options, model)
    if method is not None:
        h.setOptionValue("solver", method)
    if options.method == "primal" and not model.is_mip:
        h.setOptionValue("simplex_strategy", PRIMAL_SIMPLEX)
        h.setOptionValue("presolve", "off")
    if options.feasibility_tol is not None:
        h.setOptionValue("primal_feasibility_tolerance", float(options.feasibility_tol))
        h.setOptionValue("mip_feasibility_tolerance", float(options.feasibility_tol))
    if options.optimality_tol is not None:
        h.setOptionValue("dual_feasibility_tolerance", float(options.optimality_tol))
    for key, value in options.raw.items():
        h.setOptionValue(key, value)


#: HiGHS refused a run on the pinned thread count: its default (0) from then on
_unpinned = False


@functools.cache
def default_threads() -> int:
    """HiGHS' own default thread count on Linux (``available_core_count``: the distinct (package,
    core) pairs of the CPUs in this process's affinity mask, read from sysfs; half the logical
    CPUs, rounded up, where those files are missing); 0 (unknown) elsewhere.

    With "threads" 0 every HiGHS run counts the cores again to size its thread pool, which
    exists after the first run: about 12 us a run on a 2-CPU machine (two files a CPU).
    :func:`apply_options` pins this count instead. Where it is not the pool's (a pool sized by
    an explicit thread count, a build with another default), HiGHS refuses the run and
    :func:`run_highs` unpins."""
    if not sys.platform.startswith("linux"):
        return 0
    cores = set()
    try:
        for cpu in os.sched_getaffinity(0):
            topology = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
            with open(topology + "physical_package_id") as package, open(topology + "core_id") as core:
                cores.add((int(package.read()), int(core.read())))
    except (OSError, ValueError):
        return ((os.cpu_count() or 1) + 1) // 2
    return len(cores)


def pinned_threads() -> int:
    """The thread count :func:`apply_options` sets where none is asked for (0: HiGHS' default)."""
    return 0 if _unpinned else default_threads()


def run_highs(h):
    """``h.run()``'s status. A run HiGHS refuses on the pinned thread count
    (:func:`default_threads`; also on an object loaded before the pin was dropped) runs again
    with HiGHS' default, which stays from then on."""
    import highspy

    global _unpinned
    status = h.run()
    pin = default_threads()
    if status == highspy.HighsStatus.kError and pin and h.getOptionValue("threads")[1] == pin:
        _unpinned = True
        h.setOptionValue("threads", 0)
        status = h.run()
    return status


def read_result(h, model: CanonicalModel, timings: Timings, spec: str,
                cols: np.ndarray | None = None, rows: np.ndarray | None = None, info=None) -> Result:
    """The result of ``h``'s last run; ``cols`` / ``rows``: the model's index of each of
    ``h``'s columns / rows (-1: not the model's) when ``h`` holds others or another order
    (a live model); ``info``: ``h.getInfo()`` where the caller has it."""
    import highspy

    ms = highspy.HighsModelStatus
    model_status = h.getModelStatus()
    info = h.getInfo() if info is None else info
    message = h.modelStatusToString(model_status)
    status = _statuses().get(model_status, Status.ERROR)
    result = Result(status, spec, message=message, timings=timings, solver_version=h.version())
    result.blocks = model.blocks
    has_primal = info.primal_solution_status == 2 or model_status == ms.kModelEmpty
    if status is Status.ERROR or not has_primal:
        if status is Status.FEASIBLE:
            result.status = Status.ERROR
        return result
    sol = h.getSolution()
    x = _reordered(sol.col_value, cols)
    if model.num_vars == 0:
        x = np.zeros(0)
    result.x = x
    result.objective = model.objective_value(x)
    if model.is_mip:
        result.bound = float(info.mip_dual_bound)
        result.iterations = int(info.mip_node_count)
    else:
        result.iterations = int(info.simplex_iteration_count + info.ipm_iteration_count)
        if sol.dual_valid:
            result.row_duals = _reordered(sol.row_dual, rows)
            result.reduced_costs = _reordered(sol.col_dual, cols)
        if status is Status.OPTIMAL:
            result.bound = result.objective
    return result


@functools.cache
def _statuses() -> dict:
    """HiGHS' model statuses as :class:`Status` (the others are errors)."""
    import highspy

    ms = highspy.HighsModelStatus
    return {
        ms.kOptimal: Status.OPTIMAL,
        ms.kInfeasible: Status.INFEASIBLE,
        ms.kUnbounded: Status.UNBOUNDED,
        ms.kUnboundedOrInfeasible: Status.INFEASIBLE_OR_UNBOUNDED,
        ms.kTimeLimit: Status.TIME_LIMIT,
        ms.kIterationLimit: Status.FEASIBLE,
        ms.kSolutionLimit: Status.FEASIBLE,
        ms.kInterrupt: Status.FEASIBLE,
        ms.kModelEmpty: Status.OPTIMAL,
    }


def _reordered(values, order: np.ndarray | None) -> np.ndarray:
    """``values`` (in the solver's order) in the model's order: ``out[order[k]] = values[k]``
    (entries with ``order[k] < 0``, rows or columns the model does not have, are left out)."""
    values = np.asarray(values, dtype=float)
    if order is None:
        return values
    held = order >= 0
    out = np.empty(int(held.sum()))
    out[order[held]] = values[held]
    return out
