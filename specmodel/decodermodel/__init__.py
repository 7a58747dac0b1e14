"""A cost-and-acceptance model of the decoder that plays its own algorithms.

* :mod:`~specmodel.decodermodel.costs` — :class:`CostModel`: what each engine and
  verifier call costs (T(b, L), prefill, overhead, verifier, draft, contention), every
  field with where it came from;
* :mod:`~specmodel.decodermodel.acceptance` — :class:`AcceptanceModel`: step acceptance by
  depth, best-of-W, step lengths, token acceptance by position;
* :mod:`~specmodel.decodermodel.simulate` — the Monte-Carlo of the baseline, sync
  Algorithm 1 and async as :mod:`profiler.decoder` runs them (:func:`predict`), and the
  closed forms where they hold (:func:`exact_speedup`).

Pure (NumPy only).
"""

from specmodel.decodermodel.acceptance import AcceptanceModel, StepLengths
from specmodel.decodermodel.costs import CostModel, EngineBehaviour, Surface
from specmodel.decodermodel.draws import DrawnProblem, DrawnSample
from specmodel.decodermodel.simulate import (
    MODEL_NAME,
    DecoderPrediction,
    Workload,
    exact_speedup,
    predict,
    predict_calibrated,
    simulate,
)

__all__ = [
    "MODEL_NAME",
    "AcceptanceModel",
    "CostModel",
    "DecoderPrediction",
    "DrawnProblem",
    "DrawnSample",
    "EngineBehaviour",
    "StepLengths",
    "Surface",
    "Workload",
    "exact_speedup",
    "predict",
    "predict_calibrated",
    "simulate",
]
