"""Reductions: parametrize explosions cut to a covering set, CI matrices cut to what matters."""

from analysis.reduce.covering import build_covering
from analysis.reduce.matrix_reduce import reduce_matrix
from analysis.reduce.parametrize import find_explosions, propose_covering

__all__ = ["build_covering", "find_explosions", "propose_covering", "reduce_matrix"]
