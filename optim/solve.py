"""The one entry point: ``solve(model, backend, options) -> Result``."""

from __future__ import annotations

from .backends import Backend, available_backends, get_backend
from .canonical import CanonicalModel
from .capabilities import Capability
from .errors import CapabilityError, LicenseLimitError
from .model import Model
from .options import SolveOptions
from .reformulations import solve_log_by_tangent_cuts, solve_without_columns
from .result import Result, Status
from .tally import add_solve


def backends_with(needs: frozenset[Capability], *, exact_log: bool = False) -> list[str]:
    """Installed backends that can solve a model needing ``needs``.

    Log terms are solvable everywhere (tangent cuts) unless ``exact_log`` asks for a
    native log cone. MILP and SOC have no bridge: the backend must have them, and one
    with both solves mixed-integer SOC programs.
    """
    names = []
    for backend in available_backends():
        have = backend.capabilities() | ({Capability.LOG} if not exact_log else frozenset())
        if needs <= have:
            names.append(backend.spec)
    return names


def solve(
    model: Model | CanonicalModel,
    backend: str | Backend = "highs",
    options: SolveOptions | None = None,
    *,
    check: bool = True,
) -> Result:
    """Solve ``model`` with ``backend``.

    Log terms go to the backend's log cone when it has one and through tangent cuts
    otherwise (reported in ``Result.notes``). A model needing MILP or SOC that the
    backend lacks raises :class:`CapabilityError`. With ``check`` a license refusal or a
    solver error raises (:class:`LicenseLimitError`, :class:`SolverFailedError`);
    infeasible / unbounded / time-limit outcomes are always returned, never raised.
    """
    canon = model.canonical() if isinstance(model, Model) else model
    options = options or SolveOptions()
    be = get_backend(backend) if isinstance(backend, str) else backend
    caps = be.capabilities()
    needs = canon.required_capabilities()
    missing = [cap for cap in (Capability.MILP, Capability.SOC) if cap in needs and cap not in caps]
    if missing:
        unbridged = {
            Capability.MILP: f"{canon.num_integers} integer variables",
            Capability.SOC: f"{canon.num_cones} rotated second-order cones",
        }
        others = ", ".join(backends_with(needs)) or "none installed"
        what = " and ".join(f"{cap.name} ({unbridged[cap]})" for cap in missing)
        lacks = "/".join(cap.name for cap in missing)
        raise CapabilityError(
            f"{be.spec} cannot solve {canon.name!r}: it needs {what}; {be.spec} has no "
            f"{lacks} support; backends with it: {others}"
        )
    if options.basis is not None:
        if Capability.VERTEX not in caps or needs != {Capability.LP}:
            vertex = ", ".join(backends_with(frozenset({Capability.VERTEX})))
            raise CapabilityError(f"{be.spec} cannot start {canon.name!r} from a basis: a basis starts an LP's "
                                  f"simplex method; backends with one: {vertex}")
        options.basis.check(canon)
    if canon.num_vars == 0:
        result = solve_without_columns(canon, be.spec)
    elif Capability.LOG in needs and Capability.LOG not in caps:
        result = solve_log_by_tangent_cuts(canon, be, options)
    else:
        result = be.solve(canon, options)
    return finished(result, canon, be, check)


def finished(result: Result, model: CanonicalModel, backend: Backend, check: bool) -> Result:
    """``result`` of ``model`` by ``backend`` with the model's build time, blocks and the
    backend's accuracy class filled in, its translate and solve time added to the open
    tallies (:mod:`optim.tally`); :func:`checked` when ``check``."""
    result.timings.build = model.build_seconds
    add_solve(result.timings)
    result.blocks = model.blocks
    result.first_order = backend.first_order
    return checked(result, model) if check else result


def checked(result: Result, model: CanonicalModel) -> Result:
    """``result`` of ``model``, raising for a license refusal (naming a free backend that
    can solve it) or a solver error."""
    if result.status is Status.LICENSE_LIMIT:
        free = [b for b in backends_with(model.required_capabilities()) if "gurobi" not in b.lower()]
        raise LicenseLimitError(
            f"{result.message}. Solve it with {free[0] if free else 'highs'} (free) instead."
        )
    return result.raise_for_status()
