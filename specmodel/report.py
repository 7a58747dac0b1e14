"""One self-contained HTML page for a run record (``specmodel report``).

The page holds, for one :class:`~specmodel.formats.run_record.RunRecord` and the
calibration that predicts it (the record's own, or one given):

* predicted against measured speedup per configuration
  (:func:`specmodel.prediction.compare`), with the table of numbers;
* the measured step acceptance per configuration next to the calibration's α1, and
  the calibration's acceptance by draft position (token level, and step level when
  measured) next to α2;
* the calibration's T(b) curve, when it has one;
* the budget landscape h(k1, k2) with the optimizer's choices marked.

plotly.js is embedded once in the page's head, so the file opens offline, alone.
plotly is imported inside the functions only (``import specmodel`` stays light).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specmodel.formats.calibration import Calibration
    from specmodel.formats.run_record import RunRecord
    from specmodel.prediction import ValidationRow

__all__ = ["Report", "build_report", "write_report"]


@dataclass
class Report:
    """A built report: the page and what is in it."""

    html: str
    """The whole page (plotly.js embedded once)."""
    figures: list[str] = field(default_factory=list)
    """The ids of the figure divs, in page order."""
    rows: list[ValidationRow] = field(default_factory=list)
    """Predicted against measured, one row per configuration."""
    calibration_name: str = ""
    """The calibration the predictions come from."""


def _layout(fig: Any, title: str, x: str, y: str) -> Any:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=460,
                      legend={"orientation": "h", "y": -0.25})
    return fig


def speedup_figure(rows: list[ValidationRow]) -> Any:
    """Bars per configuration: measured speedup, the closed form, and the T(b)-priced one."""
    import plotly.graph_objects as go

    labels = [r.config for r in rows]
    fig = go.Figure()
    fig.add_bar(x=labels, y=[r.measured_speedup for r in rows], name="measured")
    fig.add_bar(x=labels, y=[r.predicted_speedup for r in rows],
                name="predicted: closed form f(k1)·g(k2)")
    if any(r.predicted_priced is not None for r in rows):
        fig.add_bar(x=labels, y=[r.predicted_priced for r in rows],
                    name="predicted: priced by the measured T(b)")
    fig.add_hline(y=1.0, line_dash="dash", annotation_text="target alone")
    fig.update_layout(barmode="group")
    return _layout(fig, "Predicted against measured speedup, per configuration",
                   "configuration", "speedup over the target alone")


def step_acceptance_figure(rows: list[ValidationRow], alpha1: float) -> Any:
    """Measured step acceptance (accepted / judged draft steps) per configuration, and α1."""
    import plotly.graph_objects as go

    with_steps = [r for r in rows if r.step_acceptance is not None]
    fig = go.Figure()
    fig.add_bar(x=[r.config for r in with_steps], y=[r.step_acceptance for r in with_steps],
                name="measured step acceptance")
    fig.add_hline(y=alpha1, line_dash="dash", annotation_text=f"calibration α1 = {alpha1:.3g}")
    fig.update_yaxes(range=[0, max([alpha1, *(r.step_acceptance or 0 for r in with_steps)])
                            * 1.2 + 0.01])
    return _layout(fig, "Step acceptance per configuration", "configuration",
                   "accepted / judged draft steps")


def acceptance_by_position_figure(cal: Calibration) -> Any:
    """The calibration's conditional acceptance by draft position (token, and step when
    measured), with the i.i.d. rates α2 and α1 the closed forms assume."""
    import plotly.graph_objects as go

    fig = go.Figure()
    p = cal.parameters()
    for label, by_pos, rate, name in (
        ("token", cal.token.acceptance_by_position, p.alpha2, "α2"),
        ("step", cal.step.acceptance_by_position, p.alpha1, "α1"),
    ):
        if by_pos:
            pos = list(range(1, len(by_pos) + 1))
            fig.add_scatter(x=pos, y=by_pos, mode="lines+markers",
                            name=f"{label} acceptance at position i (measured)")
            fig.add_scatter(x=pos, y=[rate] * len(pos), mode="lines", line_dash="dash",
                            name=f"{label}: i.i.d. {name} = {rate:.3g}")
    if not fig.data:
        fig.add_scatter(x=[1], y=[p.alpha2], mode="markers",
                        name=f"α2 = {p.alpha2:.3g} (no per-position measurement)")
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "Acceptance by draft position (conditional on the previous ones)",
                   "draft position i", "P(accept position i | 1..i−1 accepted)")


def batch_cost_figure(cal: Calibration) -> Any:
    """The measured T(b) (with its standard errors) against T(1)·b and the flat T(1)."""
    import plotly.graph_objects as go

    assert cal.batch_cost is not None
    pts = cal.batch_cost.points
    b = [q.batch for q in pts]
    t1 = pts[0].time / pts[0].batch if pts[0].batch != 1 else pts[0].time
    fig = go.Figure()
    fig.add_scatter(x=b, y=[q.time for q in pts], mode="lines+markers", name="measured T(b)",
                    error_y={"type": "data", "array": [q.stderr or 0.0 for q in pts]})
    fig.add_scatter(x=b, y=[t1] * len(b), mode="lines", line_dash="dash",
                    name="flat budget (the papers): T(1)")
    fig.add_scatter(x=b, y=[t1 * x for x in b], mode="lines", line_dash="dot",
                    name="no parallelism: T(1)·b")
    fig.update_xaxes(type="log", tickvals=b)
    return _layout(fig, f"Cost of a batch of b sequences, T(b) ({cal.batch_cost.unit})",
                   "b = sequences in one forward", f"T(b) [{cal.batch_cost.unit}]")


def landscape_figure(record: RunRecord, cal: Calibration, budget: int, mode: str) -> Any:
    """h(k1, k2) under the budget, the optimizer's choices of the record marked (those
    for ``mode``), with the library's own optimum."""
    from specmodel.figures import budget_landscape_figure

    p = cal.parameters()
    fig = budget_landscape_figure(p.alpha1, p.c1, p.alpha2, p.c2, budget, mode)
    if record.optimizer is not None:
        for label, ch in record.optimizer.choices.items():
            if ch.mode != mode:
                continue
            fig.add_scatter(x=[ch.k1], y=[ch.k2], mode="markers", name=f"chosen: {label}",
                            marker={"symbol": "x", "size": 16, "color": "white",
                                    "line": {"width": 2, "color": "black"}})
    fig.update_layout(height=520, legend={"orientation": "h", "y": -0.2})
    return fig


def _rows_table(rows: list[ValidationRow]) -> str:
    def num(v: float | None, fmt: str = "{:.3f}") -> str:
        return "—" if v is None else fmt.format(v)

    head = ("configuration", "mode", "k1", "k2", "measured", "predicted", "error",
            "priced", "priced error", "step acceptance", "accuracy")
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in (
            r.config, r.mode, str(r.k1), str(r.k2), num(r.measured_speedup),
            num(r.predicted_speedup), num(r.error, "{:+.1%}"), num(r.predicted_priced),
            num(r.priced_error, "{:+.1%}"), num(r.step_acceptance), num(r.accuracy, "{:.0%}"),
        )) + "</tr>"
        for r in rows
    )
    return ("<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
            + f"</tr></thead><tbody>{body}</tbody></table>")


_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.note { color: #555; }
.warn { color: #a40; }
.figure { margin: 1.5em 0; }
"""


def build_report(
    record: RunRecord,
    calibration: Calibration | None = None,
    *,
    calibration_note: str | None = None,
    budget: int | None = None,
    mode: str = "async",
    title: str | None = None,
) -> Report:
    """The page for ``record``, predicted from ``calibration`` (default: the record's own).

    ``budget`` (default: the record's optimizer budget, else its settings', else 16) and
    ``mode`` pick the landscape; ``calibration_note`` says where the calibration came from.
    """
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    from specmodel.prediction import calibration_mismatches, compare

    cal = calibration or record.calibration
    if cal is None:
        raise ValueError("calibration must be given: the run record carries none")
    if mode not in ("sync", "async"):
        raise ValueError(f"mode must be 'sync' or 'async', got {mode!r}")
    rows = compare(record, cal)
    m = budget or (record.optimizer.budget if record.optimizer else None) \
        or record.settings.budget or 16
    params = cal.parameters()
    figs: list[tuple[str, str, Any]] = [
        ("speedup", "Predicted against measured", speedup_figure(rows)),
        ("step-acceptance", "Step acceptance", step_acceptance_figure(rows, params.alpha1)),
        ("acceptance-by-position", "Acceptance by position", acceptance_by_position_figure(cal)),
    ]
    if cal.batch_cost is not None:
        figs.append(("batch-cost", "T(b)", batch_cost_figure(cal)))
    figs.append(("landscape", f"Budget landscape (M = {m}, {mode})",
                 landscape_figure(record, cal, m, mode)))
    parts = []
    for div_id, heading, fig in figs:
        div = pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id,
                          config={"displaylogo": False})
        parts.append(f'<section class="figure"><h2>{html.escape(heading)}</h2>{div}</section>')
    mismatches = calibration_mismatches(record, cal)
    warn = "".join(f'<p class="warn">Warning: {html.escape(w)}</p>' for w in mismatches)
    models = ", ".join(f"{k}: {v}" for k, v in record.models.items()) or "—"
    note = calibration_note or f"calibration '{cal.name}'"
    page_title = title or f"specmodel report: {record.engine} run of {record.created}"
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(page_title)}</title>
<style>{_STYLE}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head>
<body>
<h1>{html.escape(page_title)}</h1>
<p class="note">Engine {html.escape(record.engine)}; models {html.escape(models)};
baseline '{html.escape(record.baseline)}'. Predictions from {html.escape(note)}:
{html.escape(params.describe())}.</p>
{warn}
{_rows_table(rows)}
{"".join(parts)}
</body>
</html>
"""
    return Report(html=page, figures=[f[0] for f in figs], rows=rows, calibration_name=cal.name)


def write_report(record: RunRecord, path: str | Path, calibration: Calibration | None = None,
                 **kwargs: Any) -> Report:
    """Build the page (:func:`build_report`, ``kwargs`` passed on) and write it atomically."""
    report = build_report(record, calibration, **kwargs)
    from specmodel.formats.jsonio import write_text_atomic

    write_text_atomic(report.html, path)
    return report
