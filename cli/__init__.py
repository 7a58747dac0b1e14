"""The ``specmodel`` command line (:mod:`cli.main`): parse, call the library, print.

numpy's OpenBLAS starts one thread per core as it loads, which costs a command line
about 50 ms of its start-up on this 2-core machine (more when the cores are busy; the
command's arrays are far too small for a threaded BLAS to matter). Unless the user set
``OPENBLAS_NUM_THREADS`` themselves, numpy is loaded here with one BLAS thread, and the
variable is removed again so that processes the command starts (a ``vllm serve``, a
profiler's engines) see the environment as it was.
"""

import os

if "OPENBLAS_NUM_THREADS" not in os.environ:
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401  (loaded now, with the setting above)
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]
