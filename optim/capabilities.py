"""What a backend can solve natively."""

from enum import Enum


class Capability(str, Enum):
    """A class of constraint or feature a backend handles without reformulation."""

    LP = "lp"
    MILP = "milp"
    LOG = "log"  # concave log terms (exponential cone or native nonlinear)
    SOC = "soc"  # rotated second-order cones k <= u v, u, v >= 0 (hyperbolic constraints)
    DUALS = "duals"  # row duals of an LP
    WARM_START = "warm_start"  # starts a MIP from a given point (SolveOptions.start)
    INCREMENTAL = "incremental"  # keeps an LP live, updates it by a delta and re-solves from its basis
    VERTEX = "vertex"  # an LP's answer is a vertex (basic solution), not the centre of the optimal face

    def __str__(self) -> str:
        return self.value
