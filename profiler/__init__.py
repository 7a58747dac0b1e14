"""The live side of specmodel: model packs, engines, verifiers and the measurements
that produce a calibration.  Imports torch / vLLM / transformers only inside the
functions that need them."""
