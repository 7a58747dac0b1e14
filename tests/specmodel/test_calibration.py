"""Calibration files: validation, atomic writes, presets and their derivation."""

from __future__ import annotations

import json

import pytest

from specmodel.calibration import (
    DEFAULT_PRESET,
    Calibration,
    list_presets,
    load_calibration,
    load_preset,
    resolve_calibration,
    save_calibration,
)
from specmodel.paper_presets import PAPER_ROWS, derive_paper_preset
from specmodel.step_level import f_async
from specmodel.token_level import g_token


def _minimal() -> dict:
    return {
        "name": "t",
        "step": {"alpha1": 0.6, "c1": 0.2},
        "token": {"alpha2": 0.7, "c2": 0.05},
        "provenance": {"source": "user", "description": "test"},
    }


def test_round_trip_and_atomic_write(tmp_path) -> None:
    cal = Calibration.model_validate(
        {**_minimal(), "batch_cost": {"points": [{"batch": 1, "time": 0.1},
                                                 {"batch": 4, "time": 0.2}]}}
    )
    path = save_calibration(cal, tmp_path / "sub" / "cal.json")
    assert load_calibration(path) == cal
    assert [p.name for p in path.parent.iterdir()] == ["cal.json"]  # no temp file left
    curve = cal.batch_cost_curve()
    assert curve.relative(1, 4) == pytest.approx(2.0)


@pytest.mark.parametrize(
    "patch,field",
    [
        ({"step": {"alpha1": 1.2, "c1": 0.2}}, "step.alpha1"),
        ({"token": {"alpha2": 0.7, "c2": -0.1}}, "token.c2"),
        ({"token": {"alpha2": 0.7, "c2": 0.1, "method": "lookahead"}}, "token.method"),
        ({"schema_version": 7}, "schema_version"),
        ({"surprise": 1}, "surprise"),
        ({"batch_cost": {"points": [{"batch": 4, "time": 1.0}, {"batch": 2, "time": 1.0}]}},
         "batch_cost.points"),
    ],
)
def test_invalid_files_name_the_field(tmp_path, patch, field) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**_minimal(), **patch}))
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        load_calibration(path)


def test_presets_load_and_default_exists() -> None:
    names = list_presets()
    assert DEFAULT_PRESET in names and len(names) >= 3
    for name in names:
        cal = load_preset(name)
        assert cal.name == name and cal.provenance.source == "paper"
        assert "Table 1" in cal.provenance.description
    assert resolve_calibration().name == DEFAULT_PRESET
    with pytest.raises(ValueError, match="exclusive"):
        resolve_calibration("x.json", DEFAULT_PRESET)


@pytest.mark.parametrize("row", PAPER_ROWS, ids=lambda r: r.name)
def test_paper_presets_reproduce_the_reported_speedups(row) -> None:
    cal = load_preset(row.name)
    assert cal.model_dump(exclude_none=True) == Calibration.model_validate(
        derive_paper_preset(row)
    ).model_dump(exclude_none=True)
    # The fitted values reproduce the two columns they were fitted to.
    assert g_token(cal.token.alpha2, cal.token.c2, 9) == pytest.approx(row.sd_speedup, rel=1e-5)
    assert f_async(cal.step.alpha1, cal.step.c1, 6) == pytest.approx(row.lr_speedup, rel=1e-5)
