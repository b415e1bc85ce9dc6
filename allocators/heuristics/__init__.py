"""Heuristic baselines (no solver), under Gavel's policy names."""

from .allox import AlloX
from .fifo import Fifo, FifoPacked, FifoPerf
from .gandiva import Gandiva
from .isolated import Isolated
from .proportional import Proportional

HEURISTICS = (Isolated, Proportional, Fifo, FifoPerf, FifoPacked, Gandiva, AlloX)

__all__ = ["HEURISTICS", "AlloX", "Fifo", "FifoPacked", "FifoPerf", "Gandiva", "Isolated", "Proportional"]
