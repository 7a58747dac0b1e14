"""SymPy derivations that check the closed forms and document the papers' errata.

``lr``: the Lookahead Reasoning paper's expectations, S1/S2 and lemmas;
``cascade``: the cascade paper's PGFs and corollaries.  Imported only by tests
and the errata checks (SymPy is slow to import).
"""
