"""Heuristic baselines (no solver), under Gavel's and Shockwave's policy names."""

from .allox import AlloX
from .fifo import Fifo, FifoPacked, FifoPerf
from .gandiva import Gandiva
from .gandiva_fair import GandivaFair
from .isolated import Isolated
from .proportional import Proportional

HEURISTICS = (Isolated, Proportional, Fifo, FifoPerf, FifoPacked, Gandiva, GandivaFair, AlloX)

__all__ = ["HEURISTICS", "AlloX", "Fifo", "FifoPacked", "FifoPerf", "Gandiva", "GandivaFair", "Isolated",
           "Proportional"]
