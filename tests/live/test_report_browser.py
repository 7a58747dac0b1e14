"""The report opens in a real headless Chromium: every figure renders, no console error,
and the screenshot is not blank."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

pytestmark = pytest.mark.live

RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "decoder_run.json"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--virtual-time-budget=15000"]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("SPECMODEL_STRICT") == "1":
        pytest.fail("Chromium is not installed (apt-get install -y chromium)")
    pytest.skip("Chromium is not installed")


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and raw rows of an 8-bit RGB(A) non-interlaced PNG (unfiltered)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    w = h = depth = ctype = 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6)
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def test_report_renders_in_headless_chromium(tmp_path) -> None:
    pytest.importorskip("plotly")
    from specmodel.formats.run_record import load_run_record
    from specmodel.report import write_report

    browser = _chromium()
    page = tmp_path / "report.html"
    rep = write_report(load_run_record(RUN), page)
    url = page.as_uri()
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [browser, *FLAGS, "--window-size=1200,4200", f"--screenshot={shot}",
         "--enable-logging=stderr", "--v=0", url],
        capture_output=True, text=True, timeout=180, check=False)
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert console == [], console
    assert shot.is_file(), proc.stderr[-2000:]
    w, h, rows = _png_pixels(shot.read_bytes())
    assert (w, h) == (1200, 4200)
    sample = [px for row in rows[::20] for px in row[::60]]
    mean = sum(sample) / len(sample)
    variance = sum((v - mean) ** 2 for v in sample) / len(sample)
    assert variance > 100, variance  # a blank (white) page has ~0
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", url], capture_output=True,
                         text=True, timeout=180, check=False).stdout
    assert dom.count('class="plot-container plotly"') == len(rep.figures) == 5
    assert dom.count('class="main-svg"') >= 2 * len(rep.figures)
    for div in rep.figures:  # each figure div got Plotly's class and an SVG
        assert f'id="{div}" class="plotly-graph-div js-plotly-plot"' in dom, div
