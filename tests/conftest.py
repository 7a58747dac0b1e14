"""Shared test configuration: the hypothesis profiles, optional imports, the live tests'
shared pack folder under pytest-xdist, and the fixtures that shorten what no assertion
reads (profiling burn-in, the decoder model's simulation size, cost probes)."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def require(module: str):
    """Import an optional dependency: skip locally when missing, fail under CI.

    ``.ci/run`` sets ``SPECMODEL_STRICT=1`` so that a test of a real engine never
    passes by being skipped there.
    """
    import importlib

    import pytest

    if os.environ.get("SPECMODEL_STRICT") == "1":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def shared_pack_root(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Under pytest-xdist, the folder that holds every worker's temp folder, where the
    live tests' model packs are fetched once for all workers (tests/live/conftest.py);
    None in a run without workers."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    return tmp_path_factory.getbasetemp().parent


def _defaults(monkeypatch: pytest.MonkeyPatch, module: object, name: str,
              **defaults: object) -> None:
    """Replace ``module.name`` for one test by the same function with other defaults:
    a keyword the caller leaves out takes the value given here."""
    import functools

    full = getattr(module, name)

    @functools.wraps(full)
    def wrapped(*args, **kwargs):
        return full(*args, **{**defaults, **kwargs})

    monkeypatch.setattr(module, name, wrapped)


@pytest.fixture
def quick_profiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shorten the untimed parts of a profiling pass for one test
    (``pytest.mark.usefixtures("quick_profiling")``): each ``measure``'s burn-in (0.5 s
    by default) to 0.02 s unless the test names one, and each contention phase (1 s;
    three rounds of three phases) to 0.1 s at the most.  Every forward still runs on the
    real decoders and is timed; only how long the machine is warmed first and how long
    a contention phase lasts change, which no assertion reads."""
    import functools

    import profiler.engines.synthetic as synthetic
    import profiler.hardware as hardware

    _defaults(monkeypatch, hardware, "measure", burn_in=0.02)
    contention = synthetic.measure_contention

    @functools.wraps(contention)
    def quick_contention(*args, seconds: float = 1.0, **kwargs):
        return contention(*args, seconds=min(seconds, 0.1), **kwargs)

    monkeypatch.setattr(synthetic, "measure_contention", quick_contention)


@pytest.fixture
def quick_decoder_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulate fewer problems in the decoder model's predictions for one test
    (``pytest.mark.usefixtures("quick_decoder_model")``): where a call of
    :func:`specmodel.prediction.decoder_prediction` leaves them to their defaults (200
    problems, 16 calibration draws of 50), 60 problems and 4 draws of 20 — about a
    seventh of the simulation; :func:`specmodel.prediction.at_run_acceptance`'s
    simulations 500 problems instead of 2000.  For tests that check what ``validate``
    and ``compare`` print, take and refuse, or how two predictions from the same seed
    order: none of their assertions reads the simulation's precision.  Calls that name
    their sizes (registrations, benchmarks) keep them."""
    import specmodel.prediction as prediction

    _defaults(monkeypatch, prediction, "decoder_prediction", problems=60, draws=4,
              draw_problems=20)
    _defaults(monkeypatch, prediction, "at_run_acceptance", problems=500)


@pytest.fixture
def quick_cost_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shorter cost probes for one test (``pytest.mark.usefixtures("quick_cost_probe")``):
    where a caller of :func:`profiler.engine_costs.probe_costs` leaves them to their
    defaults (calls of 4 and 32 tokens, two repeats), calls of 2 and 6 tokens, one
    repeat.  Every cell still runs on the real engines and is timed; the tests read the
    probe's shape and that it is stored, priced and printed, not its precision."""
    import profiler.engine_costs as engine_costs

    _defaults(monkeypatch, engine_costs, "probe_costs", tokens=(2, 6), repeats=1)
