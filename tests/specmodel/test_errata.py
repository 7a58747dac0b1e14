"""The errata registry covers docs/errata.md and its checks really compute."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specmodel.errata import ERRATA, PAPERS, get_erratum, run_checks

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "errata.md").read_text(encoding="utf-8")
DOC_IDS = re.findall(r"^#{3,4} ((?:LR|CSD|LD|SS)-\d+)\. ", DOC, flags=re.M)


def test_registry_and_document_name_the_same_entries_in_order() -> None:
    assert [e.id for e in ERRATA] == DOC_IDS
    assert len(DOC_IDS) == len(set(DOC_IDS)) == 32


def test_document_names_the_command_and_papers_by_file_name() -> None:
    for eid in DOC_IDS:
        assert f"`specmodel errata {eid}`" in DOC, eid
    assert "/work/" not in DOC and "python -c" not in DOC
    for name in PAPERS.values():
        assert f"`{name}`" in DOC


def test_papers_exist_where_the_shared_folder_is() -> None:
    folder = ROOT.parent / "shared" / "papers"
    if not folder.is_dir():
        pytest.skip("the shared papers folder is not beside the checkout")
    for name in PAPERS.values():
        assert (folder / name).is_file()


@pytest.fixture(scope="module")
def results():
    return {r.erratum.id: r for r in run_checks()}


def test_every_check_confirms_its_truth(results) -> None:
    bad = [i for i, r in results.items() if not r.outcome.truth_holds]
    assert bad == []


def test_verdicts(results) -> None:
    """Errors fail, except LR-11 (the main-text statement without 'M even' holds);
    notation entries verify the corrected formula."""
    for eid, r in results.items():
        if r.erratum.kind == "notation":
            assert r.verdict.startswith("notation"), eid
        elif eid == "LR-11":
            assert r.verdict == "paper's statement holds"
        else:
            assert r.verdict == "paper's statement fails", eid
    assert {e.id for e in ERRATA if e.kind == "notation"} == {"LR-2", "LR-8", "CSD-5", "LD-3"}


def test_checks_compute_the_documented_numbers(results) -> None:
    assert "1.724" in results["LR-1"].outcome.paper  # S1 at ⌊1/c1⌋
    assert "15/8" in results["LR-13"].outcome.truth  # exact tie
    assert "3.092" in results["CSD-7"].outcome.truth and "2.971" in results["CSD-7"].outcome.truth
    assert "[0.7, 0.3, 0.0]" in results["SS-2"].outcome.paper
    d = results["LR-6"].to_dict()
    assert d["paper"] == "000_f21d8f56c51d413c.txt" and d["verdict"].endswith("fails")


def test_get_erratum_rejects_unknown_ids() -> None:
    assert get_erratum("csd-3").id == "CSD-3"
    with pytest.raises(ValueError, match="id must be one of"):
        get_erratum("XX-9")
