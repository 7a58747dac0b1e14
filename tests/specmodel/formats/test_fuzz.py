"""Fuzzing the two file readers: whatever a file holds — deep nesting, NaN and
Infinity, wrong types, huge numbers, any unicode, random bytes — loading it either
succeeds or raises one one-line ``ValueError`` (``SpecmodelError``), never anything
else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specmodel.formats.calibration import load_calibration, load_preset
from specmodel.formats.run_record import load_run_record

_FUZZ = settings(max_examples=120, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])

_leaf = (st.none() | st.booleans() | st.integers() | st.integers(min_value=10**30)
         | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20)
         | st.sampled_from(["0.5", "1", "NaN", "target", "sync", "async", "\n", "é☃\U0001f600"]))
_json = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)


def _calibration() -> dict[str, Any]:
    return json.loads(load_preset("measured-qwen2.5-coder-0.5b-smollm2-135m")
                      .model_dump_json(exclude_none=True))


def _run_record() -> dict[str, Any]:
    return {
        "schema_version": 2,
        "kind": "specmodel-run",
        "created": "2026-11-22T00:00:00+00:00",
        "engine": "transformers",
        "calibration": _calibration(),
        "baseline": "target",
        "configs": [{
            "label": "target",
            "config": {"mode": "sync", "k1": 1, "k2": 1},
            "totals": {"problems": 1, "output_tokens": 10, "seconds": 2.0,
                       "tokens_per_second": 5.0, "accuracy": 1.0},
            "problems": [],
        }],
    }


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside ``node``."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutated(base: dict[str, Any], data: st.DataObject) -> Any:
    """``base`` with one value somewhere replaced by arbitrary JSON."""
    paths = [p for p in _paths(base) if p]
    path = data.draw(st.sampled_from(paths))
    value = data.draw(_json)
    node = base
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return base


def _assert_one_line(loader: Any, path: Path) -> None:
    try:
        loader(path)
    except ValueError as e:  # SpecmodelError is a ValueError
        msg = str(e)
        assert msg and "\n" not in msg, repr(msg)
        assert type(e).__name__ in ("SpecmodelError", "ValueError")


_texts = st.one_of(
    _json.map(json.dumps),
    st.integers(1, 100_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 100_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.text(max_size=200),
    st.sampled_from(["NaN", "[Infinity]", '{"schema_version": 1e400}', "9" * 5000, "",
                     '"\\ud800"', '{"name": "\\u0000"}']),
)


@_FUZZ
@given(text=_texts)
def test_any_text_loads_or_fails_in_one_line(tmp_path_factory, text) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _assert_one_line(load_calibration, path)
    _assert_one_line(load_run_record, path)


@_FUZZ
@given(raw=st.binary(max_size=200))
def test_any_bytes_load_or_fail_in_one_line(tmp_path_factory, raw) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.json"
    path.write_bytes(raw)
    _assert_one_line(load_calibration, path)
    _assert_one_line(load_run_record, path)


@_FUZZ
@given(data=st.data())
def test_a_mutated_calibration_loads_or_fails_in_one_line(tmp_path_factory, data) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "cal.json"
    path.write_text(json.dumps(_mutated(_calibration(), data)))
    _assert_one_line(load_calibration, path)


@_FUZZ
@given(data=st.data())
def test_a_mutated_run_record_loads_or_fails_in_one_line(tmp_path_factory, data) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "run.json"
    record = _run_record()
    if data.draw(st.booleans()):
        record["schema_version"] = 1
        record["configs"][0]["config"] = {"k1": 1, "k2": 1}
    path.write_text(json.dumps(_mutated(record, data)))
    _assert_one_line(load_run_record, path)


def test_the_unmutated_bases_load(tmp_path) -> None:
    cal, run = tmp_path / "cal.json", tmp_path / "run.json"
    cal.write_text(json.dumps(_calibration()))
    run.write_text(json.dumps(_run_record()))
    assert load_calibration(cal).name.startswith("measured")
    assert load_run_record(run).configs[0].label == "target"
