"""Plotly figures of the model (``specmodel plot``).

plotly is imported inside the functions only, so ``import specmodel`` stays
fast.  Every figure function returns a ``plotly.graph_objects.Figure``;
:func:`write_figure` writes self-contained HTML always (plotly.js embedded, so a
figure opens on an offline machine) and PNG when a static renderer (kaleido with
a Chrome/Chromium) works; :func:`make_all` writes every figure, the calibrated
ones from the parameters it is given (by default the embedded default calibration's).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from specmodel.closedform.step_level import async_knee, async_s1, async_s2, f_async, f_sync
from specmodel.closedform.token_level import g_token, token_speedup_bound
from specmodel.parameters import Parameters

__all__ = [
    "CALIBRATED_FIGURES",
    "FIGURES",
    "PNG_HINT",
    "FigureFiles",
    "async_knee_figure",
    "budget_landscape_figure",
    "cascade_ewif_figure",
    "default_parameters",
    "find_browser",
    "lookahead_scaling_figure",
    "make_all",
    "png_unavailable",
    "predicted_against_measured",
    "speedup_vs_draft_length_figure",
    "write_figure",
]

def _go() -> Any:
    import plotly.graph_objects as go

    return go


def speedup_vs_draft_length_figure(
    alpha1: float = 0.63,
    c1: float = 0.2,
    alpha2: float = 0.7,
    c2: float = 0.05,
    max_k: int = 24,
) -> Any:
    """Speedup against parallel positions: token-level g, step-level f, and the hybrid.

    The hybrid curve pairs each k2 with the best k1 for the sync algorithm
    (no budget), the LR paper's Figure 2 idea: token speculation plateaus at
    1/(1 − α2), step-level speculation multiplies on top of it.
    """
    go = _go()
    k = np.arange(1, max_k + 1)
    g = np.asarray(g_token(alpha2, c2, k))
    fs = np.asarray(f_sync(alpha1, c1, k))
    fa = np.asarray(f_async(alpha1, c1, k))
    best_f = float(np.max(np.asarray(f_async(alpha1, c1, np.arange(1, 65)))))
    fig = go.Figure()
    fig.add_scatter(x=k, y=g, name="token-level g(k2)", mode="lines+markers")
    fig.add_scatter(x=k, y=fs, name="step-level f_sync(k1)", mode="lines+markers")
    fig.add_scatter(x=k, y=fa, name="step-level f_async(k1)", mode="lines+markers")
    fig.add_scatter(x=k, y=g * best_f, name="hybrid: best f_async × g(k2)", mode="lines+markers")
    fig.add_hline(
        y=token_speedup_bound(alpha2),
        line_dash="dash",
        annotation_text="token-level bound 1/(1 − α2)",
    )
    fig.update_layout(
        title=f"Speedup vs parallel positions (α1={alpha1}, c1={c1}, α2={alpha2}, c2={c2})",
        xaxis_title="k = target positions (token: drafts + 1) or steps in parallel (step)",
        yaxis_title="speedup over target-only decoding",
    )
    return fig


def budget_landscape_figure(
    alpha1: float = 0.63,
    c1: float = 0.2,
    alpha2: float = 0.7,
    c2: float = 0.05,
    budget: int = 16,
    mode: str = "async",
) -> Any:
    """Heatmap of h(k1, k2) over the feasible set, with the optimum and single methods marked."""
    from specmodel.optimize.budget import optimize_budget
    from specmodel.parameters import Parameters

    go = _go()
    res = optimize_budget(Parameters(alpha1, c1, alpha2, c2), budget, mode, landscape=True)
    land = res.landscape
    assert land is not None
    k1max, k2max = int(land.k1.max()), int(land.k2.max())
    z = np.full((k2max, k1max), np.nan)
    z[land.k2 - 1, land.k1 - 1] = land.speedup
    fig = go.Figure(
        go.Heatmap(
            x=np.arange(1, k1max + 1),
            y=np.arange(1, k2max + 1),
            z=z,
            colorscale="Viridis",
            colorbar={"title": "h(k1, k2)"},
            hovertemplate="k1=%{x}, k2=%{y}: %{z:.3f}x<extra></extra>",
        )
    )
    for label, p, symbol in (
        ("optimum", res.best, "star"),
        ("token-only", res.token_only, "circle"),
        ("step-only", res.step_only, "square"),
    ):
        fig.add_scatter(
            x=[p.k1],
            y=[p.k2],
            mode="markers+text",
            name=f"{label} {p.speedup:.3f}x",
            text=[label],
            textposition="top center",
            marker={"symbol": symbol, "size": 14, "color": "red"},
        )
    fig.update_layout(
        title=f"h(k1, k2) under ParallelDim_f(k1)·k2 ≤ {budget} ({mode}; α1={alpha1}, c1={c1}, "
        f"α2={alpha2}, c2={c2})",
        xaxis_title="k1 = target steps in parallel",
        yaxis_title="k2 = positions per step",
    )
    return fig


def async_knee_figure(
    alpha1: float = 0.63, c1_values: tuple[float, ...] = (0.3, 0.15), max_k: int = 14
) -> Any:
    """f_async against k1 with S2 continued past the knee and S1; knee at ⌈1/c1⌉."""
    go = _go()
    fig = go.Figure()
    k = np.arange(1, max_k + 1)
    for c1 in c1_values:
        knee = async_knee(c1)
        fig.add_scatter(
            x=k,
            y=np.asarray(f_async(alpha1, c1, k)),
            mode="lines+markers",
            name=f"f_async, c1={c1}",
        )
        fig.add_scatter(
            x=k,
            y=np.asarray(async_s2(alpha1, c1, k)),
            mode="lines",
            line_dash="dot",
            name=f"S2 formula past the knee, c1={c1}",
        )
        fig.add_hline(y=async_s1(alpha1, c1), line_dash="dash", annotation_text=f"S1, c1={c1}")
        fig.add_vline(x=knee, line_dash="dash", annotation_text=f"⌈1/c1⌉={knee}")
        if abs(1 / c1 - round(1 / c1)) > 1e-9:
            fig.add_vline(
                x=knee - 1,
                line_dash="dot",
                line_color="grey",
                annotation_text=f"⌊1/c1⌋={knee - 1} (paper's other boundary)",
            )
    fig.update_layout(
        title=f"Async Lookahead Reasoning: the knee at ⌈1/c1⌉ (α1={alpha1})",
        xaxis_title="k1 = depth limit (target steps in flight at most)",
        yaxis_title="speedup",
    )
    return fig


def lookahead_scaling_figure(
    alpha: float = 0.425, f: float = 3.106, gamma: int = 60, max_log2_b: int = 12
) -> Any:
    """Lookahead decoding's step compression S against b (log scale), the paper's Fig. 4(b)."""
    from specmodel.closedform.lookahead_decoding import step_compression_ratio

    go = _go()
    b = 2 ** np.arange(0, max_log2_b + 1)
    fig = go.Figure()
    for g in sorted({4, 8, gamma}):
        s = [step_compression_ratio(alpha, g, int(x), f) for x in b]
        fig.add_scatter(x=b, y=s, mode="lines+markers", name=f"γ = N − 1 = {g}")
    fig.update_xaxes(type="log")
    fig.update_layout(
        title=f"Lookahead decoding scaling (α={alpha}, f={f}): S linear in log b",
        xaxis_title="b = G = W speculations per step",
        yaxis_title="step compression ratio S",
    )
    return fig


def cascade_ewif_figure(
    alpha: float = 0.8,
    alpha_prime: float = 0.8,
    c_d1: float = 0.1,
    c_d2: float = 0.01,
    n: int = 3,
    max_k: int = 12,
) -> Any:
    """EWIF of plain SD, the vertical cascade and a horizontal cascade against k."""
    from specmodel.closedform.cascade import ewif_horizontal, ewif_speculative, ewif_vertical

    go = _go()
    k = np.arange(1, max_k + 1)
    fig = go.Figure()
    fig.add_scatter(
        x=k,
        y=np.asarray(ewif_speculative(alpha, c_d1, k)),
        mode="lines+markers",
        name=f"SD with M_d1 (c={c_d1})",
    )
    fig.add_scatter(
        x=k,
        y=np.asarray(ewif_vertical(alpha, alpha_prime, c_d1, c_d2, k, n)),
        mode="lines+markers",
        name=f"vertical cascade (n={n}, α'={alpha_prime})",
    )
    horiz = [
        ewif_horizontal(
            [alpha] * 2 + [alpha * 0.8] * (int(x) - 2) if x > 2 else [alpha] * int(x),
            [c_d1] * min(2, int(x)) + [c_d2] * max(0, int(x) - 2),
        )
        for x in k
    ]
    fig.add_scatter(
        x=k,
        y=horiz,
        mode="lines+markers",
        name="horizontal cascade (first 2 by M_d1, rest by M_d2 at 0.8α)",
    )
    fig.update_layout(
        title=f"Cascade Speculative Drafting: EWIF (α={alpha}, c_d1={c_d1}, c_d2={c_d2})",
        xaxis_title="k = draft tokens per call",
        yaxis_title="EWIF",
    )
    return fig


def predicted_against_measured(fig: Any, points: list[float], *, title: str,
                               measured: str, predicted: str, band: float = 0.10) -> Any:
    """Finish a predicted-against-measured scatter ``fig`` (measured on x, predicted on
    y): the diagonal, the ±``band`` lines, equal axes over ``points`` (every x and y
    drawn, speedups > 0), the title and axis titles.  Returns ``fig``."""
    if not points or min(points) <= 0:
        raise ValueError("points: speedups > 0 are needed to scale the axes, got "
                         f"{'none' if not points else min(points)}")
    if not 0 < band < 1:
        raise ValueError(f"band must be in (0, 1), got {band}")
    go = _go()
    low, top = min(points) * 0.9, max(points) * 1.05
    line = [low, top]
    fig.add_trace(go.Scatter(x=line, y=line, mode="lines", name="predicted = measured",
                             line={"color": "black", "width": 1}))
    pct = f"{100 * band:g} %"
    for f, label in ((1 + band, f"+{pct}"), (1 - band, f"−{pct}")):
        fig.add_trace(go.Scatter(x=line, y=[low * f, top * f], mode="lines", name=label,
                                 line={"color": "grey", "width": 1, "dash": "dot"}))
    fig.update_layout(title=title, xaxis_title=measured, yaxis_title=predicted,
                      template="plotly_white", legend={"orientation": "h", "y": -0.18},
                      xaxis={"range": line}, yaxis={"range": line})
    return fig


FIGURES = {
    "speedup_vs_draft_length": speedup_vs_draft_length_figure,
    "budget_landscape": budget_landscape_figure,
    "async_knee": async_knee_figure,
    "lookahead_scaling": lookahead_scaling_figure,
    "cascade_ewif": cascade_ewif_figure,
}
"""Name -> figure function."""

CALIBRATED_FIGURES = ("speedup_vs_draft_length", "budget_landscape", "async_knee")
"""The figures drawn from α1, c1, α2, c2 (the others illustrate a paper's own numbers)."""

PlotlyJs = Literal["embed", "directory"]
"""How an HTML figure gets plotly.js: ``embed`` puts the library inside the file (one
self-contained file, about 4.8 MB, that opens offline anywhere); ``directory`` writes one
shared ``plotly.min.js`` beside the figures and references it relatively (small files,
offline as long as the folder stays together)."""

PNG_HINT = (
    "to enable PNG: pip install kaleido, and install Chromium "
    "(apt-get install chromium, or set BROWSER_PATH to a Chrome/Chromium binary)"
)
"""One line saying how to enable PNG output."""

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser() -> str | None:
    """The Chrome/Chromium binary kaleido will use: ``BROWSER_PATH`` if set, else the
    first of chromium, chromium-browser, google-chrome… on ``PATH``; None when none."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if Path(env).is_file() else None
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def png_unavailable() -> str | None:
    """Why PNG cannot be written here (kaleido or a browser missing), or None."""
    if importlib.util.find_spec("kaleido") is None:
        return "kaleido is not installed"
    if find_browser() is None:
        return "no Chrome/Chromium found"
    return None


def write_figure(
    fig: Any,
    path_stem: str | Path,
    *,
    png: bool = True,
    plotlyjs: PlotlyJs = "embed",
    problems: list[str] | None = None,
) -> list[Path]:
    """Write ``<stem>.html`` (always) and ``<stem>.png`` (when ``png`` and a renderer works).

    The HTML embeds plotly.js (``plotlyjs="embed"``, the default: the file opens offline,
    alone) or references a ``plotly.min.js`` written beside it (``"directory"``). PNG needs
    kaleido and a Chrome/Chromium (:func:`png_unavailable`); when it cannot be written the
    reason is appended to ``problems`` (when given) and nothing is raised.
    """
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    html = stem.with_suffix(".html")
    fig.write_html(html, include_plotlyjs=True if plotlyjs == "embed" else "directory",
                   full_html=True)
    written = [html]
    if not png:
        return written
    reason = png_unavailable()
    if reason is None:
        browser = find_browser()
        if browser and not os.environ.get("BROWSER_PATH"):
            os.environ["BROWSER_PATH"] = browser  # where kaleido (choreographer) looks
        try:
            out = stem.with_suffix(".png")
            fig.write_image(out, width=1000, height=600)
            written.append(out)
        except Exception as e:  # a renderer failure never fails the figures
            first = str(e).splitlines()[0] if str(e) else ""
            reason = f"rendering failed ({type(e).__name__}: {first})"
    if reason is not None and problems is not None:
        problems.append(reason)
    return written


@dataclass
class FigureFiles:
    """What :func:`make_all` wrote."""

    files: list[Path] = field(default_factory=list)
    """Every file written, HTML and PNG, in order."""
    png_skipped: str | None = None
    """Why PNG was not written (None when it was, or was not asked for)."""
    parameters: Parameters | None = None
    """The α1, c1, α2, c2 the calibrated figures were drawn from."""

    def __iter__(self) -> Iterator[Path]:
        """Iterate over the files written."""
        return iter(self.files)

    def __len__(self) -> int:
        """The number of files written."""
        return len(self.files)


def default_parameters() -> Parameters:
    """α1, c1, α2, c2 of the embedded default calibration (what every command uses
    when no calibration is given)."""
    from specmodel.formats.calibration import DEFAULT_PRESET, load_preset

    return load_preset(DEFAULT_PRESET).parameters()


def make_all(
    out_dir: str | Path = "figures",
    which: list[str] | None = None,
    params: Parameters | None = None,
    *,
    budget: int = 16,
    mode: str = "async",
    label: str | None = None,
    png: bool = True,
    plotlyjs: PlotlyJs = "embed",
) -> FigureFiles:
    """Write the chosen figures (all by default).

    ``params`` (default: the embedded default calibration's) feed the figures of
    :data:`CALIBRATED_FIGURES`, with ``budget`` and ``mode`` for the landscape; ``label``
    (e.g. the calibration's name) is added to their titles.
    """
    names = which or list(FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"which must name figures among {', '.join(FIGURES)}, got {unknown}")
    p = params if params is not None else default_parameters()
    result = FigureFiles(parameters=p)
    problems: list[str] = []
    for name in names:
        if name == "speedup_vs_draft_length":
            fig = speedup_vs_draft_length_figure(p.alpha1, p.c1, p.alpha2, p.c2)
        elif name == "budget_landscape":
            fig = budget_landscape_figure(p.alpha1, p.c1, p.alpha2, p.c2, budget, mode)
        elif name == "async_knee":
            fig = async_knee_figure(p.alpha1, (p.c1,) if p.c1 == 0.15 else (p.c1, 0.15))
        else:
            fig = FIGURES[name]()
        if label and name in CALIBRATED_FIGURES:
            fig.update_layout(title=f"{fig.layout.title.text}<br><sup>calibration: {label}</sup>")
        result.files += write_figure(fig, Path(out_dir) / name, png=png, plotlyjs=plotlyjs,
                                     problems=problems)
        if problems and png:  # the renderer is missing or broken: do not retry per figure
            png = False
    result.png_skipped = problems[0] if problems else None
    return result
