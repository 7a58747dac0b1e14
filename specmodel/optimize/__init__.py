"""Choosing a configuration: the budget-M problem and what prices it.

``budget``: the exact integer optimum of max f(k1)·g(k2) s.t.
ParallelDim_f(k1)·k2 ≤ M (closed form and Monte-Carlo); ``pricing``: the same
priced by a measured batch cost T(b), and the batch size where speculation
stops paying; ``methods``: every method family under one budget;
``theorems``: the papers' theorem conditions against the true optimum.  Every
entry point takes a :class:`specmodel.parameters.Parameters`.
"""
