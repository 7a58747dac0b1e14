"""Seeded, vectorized Monte-Carlo simulators of every speculative process.

Each simulator runs the process as the papers describe it and returns an
:class:`~specmodel.montecarlo.estimate.Estimate` (mean and standard error); they
are the ground truth the closed forms are tested against.
"""

from specmodel.montecarlo.estimate import Estimate, mean_estimate, ratio_estimate

__all__ = ["Estimate", "mean_estimate", "ratio_estimate"]
