"""Closed forms of the papers' processes, in the library's conventions.

Token-level speculation (``token_level``: g in the parallel convention k and in
Leviathan's γ), step-level Lookahead Reasoning (``step_level``: f_sync, f_async
and the multi-branch model), their hybrid h = f·g and Theorem 3/4 conditions
(``hybrid``), Cascade Speculative Drafting (``cascade``), Lookahead Decoding
(``lookahead_decoding``), SemanticSpec (``semantic_speculation``), and the
geometric run-length expectations and root finder they share (``geometric``,
``solve``).  Pure NumPy/SciPy; each has a Monte-Carlo twin in
:mod:`specmodel.montecarlo` and a symbolic check in :mod:`specmodel.symbolic`.
"""
