"""`specmodel report`: one self-contained page with the run's figures and numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("plotly")

from specmodel.formats.calibration import DEFAULT_PRESET, load_preset
from specmodel.formats.run_record import load_run_record
from specmodel.prediction import compare
from specmodel.report import build_report, landscape_figure, speedup_figure, write_report

RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "decoder_run.json"


@pytest.fixture(scope="module")
def record():
    return load_run_record(RUN)


def test_page_is_self_contained_with_every_figure(record) -> None:
    rep = build_report(record)
    page = rep.html
    head, body = page.split("</head>")
    assert head.count("<script") == 1  # plotly.js, inline
    assert "<script src=" not in body and not re.search(r'(src|href)="https?://', body)
    assert page.count("Plotly.newPlot") == len(rep.figures) == 5  # batch cost included
    assert page.count("plotly.js v") >= 1 and len(page) > 3_000_000  # the library, once
    assert page.count('"use strict";var Plotly') <= 1
    for div in rep.figures:
        assert f'id="{div}"' in page
    assert len(re.findall(r"<tr><td>", page)) == len(record.configs)


def test_speedup_figure_is_compare(record) -> None:
    rows = compare(record)
    fig = speedup_figure(rows)
    measured = next(t for t in fig.data if t.name == "measured")
    assert list(measured.y) == pytest.approx([r.measured_speedup for r in rows])
    assert measured.y[[r.config for r in rows].index(record.baseline)] == pytest.approx(1.0)


def test_landscape_marks_the_optimizers_choices(record) -> None:
    fig = landscape_figure(record, record.calibration, 16, "async")
    chosen = {(t.x[0], t.y[0]) for t in fig.data if t.name and t.name.startswith("chosen")}
    want = {(c.k1, c.k2) for c in record.optimizer.choices.values() if c.mode == "async"}
    assert chosen == want


def test_other_calibration_and_atomic_write(record, tmp_path) -> None:
    cal = load_preset(DEFAULT_PRESET)  # no T(b): one figure fewer
    out = tmp_path / "sub" / "r.html"
    rep = write_report(record, out, cal)
    assert rep.calibration_name == cal.name and "batch-cost" not in rep.figures
    assert out.read_text(encoding="utf-8") == rep.html
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]  # no temp file left
    with pytest.raises(ValueError, match="mode"):
        build_report(record, mode="both")
