"""Figures carry the model's numbers."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("plotly")

from specmodel.closedform.lookahead_decoding import step_compression_ratio
from specmodel.closedform.token_level import g_token
from specmodel.figures import (
    async_knee_figure,
    budget_landscape_figure,
    lookahead_scaling_figure,
    make_all,
    predicted_against_measured,
    speedup_vs_draft_length_figure,
    write_figure,
)
from specmodel.optimize.budget import optimize_budget
from specmodel.parameters import Parameters


def test_speedup_curves_are_the_closed_forms() -> None:
    fig = speedup_vs_draft_length_figure(0.6, 0.2, 0.7, 0.05, max_k=10)
    g = next(t for t in fig.data if t.name.startswith("token-level"))
    assert np.allclose(g.y, g_token(0.7, 0.05, np.arange(1, 11)))


def test_landscape_marks_the_optimum() -> None:
    fig = budget_landscape_figure(0.6, 0.2, 0.7, 0.05, 16, "sync")
    res = optimize_budget(Parameters(0.6, 0.2, 0.7, 0.05), 16, "sync")
    star = next(t for t in fig.data if t.name and t.name.startswith("optimum"))
    assert (star.x[0], star.y[0]) == (res.k1, res.k2)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.nanmax(z) == pytest.approx(res.speedup)


def test_knee_line_at_ceil() -> None:
    fig = async_knee_figure(0.6, (0.3,))
    xs = [s.x0 for s in fig.layout.shapes if s.x0 is not None and s.x0 == s.x1]
    assert 4 in xs and 3 in xs  # ⌈1/0.3⌉ and the paper's ⌊1/0.3⌋


def test_lookahead_curve_values() -> None:
    fig = lookahead_scaling_figure(0.425, 3.106, 8, 4)
    tr = next(t for t in fig.data if t.name.endswith("= 8"))
    assert tr.y[-1] == pytest.approx(step_compression_ratio(0.425, 8, 16, 3.106))


def test_write_and_make_all(tmp_path) -> None:
    paths = write_figure(lookahead_scaling_figure(), tmp_path / "x", png=False)
    html = paths[0].read_text(encoding="utf-8")
    assert paths == [tmp_path / "x.html"]
    assert "cdn.plot.ly/plotly" not in html[:5000] and len(html) > 3_000_000  # embedded
    written = make_all(tmp_path, ["async_knee", "cascade_ewif"], png=False)
    assert {p.stem for p in written} == {"async_knee", "cascade_ewif"}
    with pytest.raises(ValueError, match="which"):
        make_all(tmp_path, ["nope"])


def test_shared_js_writes_one_library_beside(tmp_path) -> None:
    make_all(tmp_path, ["async_knee", "cascade_ewif"], png=False, plotlyjs="directory")
    assert (tmp_path / "plotly.min.js").stat().st_size > 3_000_000
    assert (tmp_path / "async_knee.html").stat().st_size < 100_000


def test_default_parameters_are_the_default_calibrations(tmp_path) -> None:
    from specmodel.figures import default_parameters
    from specmodel.formats.calibration import DEFAULT_PRESET, load_preset

    out = make_all(tmp_path, ["budget_landscape"], png=False, label="x")
    assert out.parameters == load_preset(DEFAULT_PRESET).parameters() == default_parameters()


def test_png_written_or_skipped_with_a_reason(tmp_path, monkeypatch) -> None:
    from specmodel import figures

    monkeypatch.setattr(figures, "png_unavailable", lambda: "kaleido is not installed")
    out = make_all(tmp_path, ["cascade_ewif"])
    assert [p.suffix for p in out] == [".html"] and out.png_skipped == "kaleido is not installed"


def test_predicted_against_measured_draws_the_diagonal_and_band() -> None:
    import plotly.graph_objects as go

    fig = predicted_against_measured(go.Figure(), [0.5, 2.0], title="t", measured="m",
                                     predicted="p", band=0.2)
    diag, up, down = fig.data
    assert list(diag.x) == list(diag.y) == [0.45, 2.1]
    assert list(up.y) == pytest.approx([0.45 * 1.2, 2.1 * 1.2])
    assert list(down.y) == pytest.approx([0.45 * 0.8, 2.1 * 0.8])
    assert (up.name, down.name) == ("+20 %", "−20 %")
    assert tuple(fig.layout.xaxis.range) == tuple(fig.layout.yaxis.range) == (0.45, 2.1)
    with pytest.raises(ValueError, match="points"):
        predicted_against_measured(go.Figure(), [], title="", measured="", predicted="")
    with pytest.raises(ValueError, match="points"):
        predicted_against_measured(go.Figure(), [0.0, 1.0], title="", measured="",
                                   predicted="")
    with pytest.raises(ValueError, match="band"):
        predicted_against_measured(go.Figure(), [1.0], title="", measured="",
                                   predicted="", band=1.5)
