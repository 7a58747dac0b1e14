"""specmodel: predict, optimize and realize the speedup of speculative decoding.

The package is pure Python + NumPy/SciPy (SymPy only in the symbolic modules);
it never imports torch, vLLM or transformers.
"""

__version__ = "0.1.0"
