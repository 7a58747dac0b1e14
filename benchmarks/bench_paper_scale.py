"""The Lookahead Reasoning paper's scale, predicted without hardware.

DeepSeek-R1-Distill-Qwen-1.5B drafting steps for DeepSeek-R1-Distill-Qwen-32B, n-gram
token drafting (c2 = 0), a Qwen2.5-7B judge (one prefill of 256 tokens per step), the
paper's defaults (6 speculative steps: async k1 = 6; 8 speculative tokens: k2 = 9),
acceptance from the GSM8K and AIME presets, priced by the H100 cost-model preset
(``h100-sxm-graph``) at L in {1024, 4096, 16384}; AIME also on an H200 (the preset
transferred).  Beside: the paper's Table 1 (8x H100, target TP=2, vLLM 0.8.3) and the
LR repository's AIME reproduction on 4x H200.

Beside the closed forms priced by the cost model, the decoder model — the project's own
decoder's schedule, every call priced by hardware profiles the cost model predicts
(:func:`specmodel.hardware.whatif.decoder_costs`; an engine with prefix caching whose
batch returns with its longest member; draft and target on two devices; the judge one
256-token prefill per judged pair) — for the same SD, LR and LR+SD configurations and
its own best under M = 16 (async with the target as one call at a time, and also weighing
continuous target batching: each target step joining the engine's running batch as soon
as its prefix exists), with steps of a constant 24 tokens and with steps drawn from
a geometric law of the same mean capped at 48 (what the synthetic engine draws), 12
steps per answer.
Usage: ``python -m benchmarks.bench_paper_scale``; ``--figure STEM`` draws the committed
results (``benchmarks/results/paper_scale.json``, nothing recomputed) as a plotly figure:
the decoder model's LR and LR+SD against the context, one call at a time and with
continuous target batching, beside the reported speedups.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import Any

from benchmarks.harness import RESULTS, print_table, write_json
from specmodel.hardware.whatif import decoder_costs, what_if

TARGET, DRAFT, JUDGE = ("deepseek-r1-distill-qwen-32b", "deepseek-r1-distill-qwen-1.5b",
                        "qwen2.5-7b")
CONTEXTS = (1024, 4096, 16384)
REPORTED = {
    ("gsm8k", "h100-sxm"): {"SD": 1.39, "LR": 1.71, "LR+SD": 2.11,
                            "source": "paper Table 1 (8x H100, vLLM 0.8.3)"},
    ("aime", "h100-sxm"): {"SD": 1.53, "LR": 1.36, "LR+SD": 1.82,
                           "source": "paper Table 1 (8x H100, vLLM 0.8.3)"},
    ("aime", "h200"): {"SD": None, "LR": 1.19, "LR+SD": 1.58,
                       "source": "LR repository's AIME reproduction on 4x H200"},
}
PRESETS = {"gsm8k": "lr-paper-gsm8k-deepseek", "aime": "lr-paper-aime-deepseek"}
FIXED = {"SD": ("sync", 1, 9, 1, "call"), "LR": ("async", 6, 1, 1, "call"),
         "LR+SD": ("async", 6, 9, 1, "call"), "LR cont.": ("async", 6, 1, 1, "continuous"),
         "LR+SD cont.": ("async", 6, 9, 1, "continuous")}
"""The paper's configurations as the decoder runs them (mode, k1, k2, W, target batching):
async with the target as one call at a time, and as a running batch (continuous)."""
STEP_TOKENS = 24
"""Mean step length of the decoder-model rows (the synthetic engine's default)."""


def decoder_model(task: str, device: str, L: int, law: str) -> dict[str, Any]:
    """The decoder model's SD, LR, LR+SD and best (M = 16) at one point, steps ``law``
    (constant or geometric) of mean :data:`STEP_TOKENS`."""
    from profiler.engines.synthetic import step_law_histogram
    from specmodel.decodermodel import AcceptanceModel, Workload, predict
    from specmodel.decodermodel.search import optimize_decoder
    from specmodel.formats.calibration import load_preset

    cal = load_preset(PRESETS[task])
    step = cal.step.model_copy(update={"step_tokens_mean": float(STEP_TOKENS)})
    if law == "geometric":
        hist = step_law_histogram(step)
        assert hist is not None
        step = step.model_copy(update={"step_tokens_histogram": {str(k): v for k, v in
                                                                 hist.items()}})
    cal = cal.model_copy(update={"step": step})
    dc = decoder_costs(cal, TARGET, DRAFT, device=device, context=L, token_drafter="ngram",
                       judge=JUDGE, placement="two-devices", budget=16,
                       configs=[c[:4] for c in FIXED.values()])
    acc = AcceptanceModel.from_calibration(dc.calibration)
    out: dict[str, Any] = {}
    for name, (mode, k1, k2, w, batching) in FIXED.items():
        cfg = dc.base.replace(mode=mode, k1=k1, k2=k2, width=w, target_batching=batching)
        p = predict(cfg, acc, dc.costs, Workload.of(cfg, L), problems=100, draws=4, seed=0)
        out[name] = {"speedup": p.speedup, "interval": list(p.interval or ())}
    for key, batchings in (("best", ("call",)), ("best, either batching",
                                                 ("call", "continuous"))):
        out[key] = optimize_decoder(dc.calibration, 16, base=dc.base, prompt_tokens=L,
                                    costs=dc.costs, batchings=batchings).best.to_dict()
    return out


def preset_alphas(name: str) -> tuple[float, float]:
    data = json.loads((resources.files("specmodel") / "presets" / f"{name}.json")
                      .read_text(encoding="utf-8"))
    return data["step"]["alpha1"], data["token"]["alpha2"]


def figure(results: dict[str, Any], stem: str) -> list[Path]:
    """The decoder model's LR and LR+SD (constant and geometric steps) against the
    context, the target one call at a time and with continuous batching, per task and
    device, with the reported speedups as horizontal lines."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from specmodel.figures import write_figure

    panels = list(REPORTED)
    fig = make_subplots(rows=1, cols=len(panels), shared_yaxes=True,
                        subplot_titles=[f"{t.upper()} on {d}" for t, d in panels])
    colors = {"LR": "#1f77b4", "LR+SD": "#d62728"}
    for col, (task, device) in enumerate(panels, start=1):
        rows = [r for r in results["decoder_model"]
                if r["task"] == task and r["device"] == device]
        for name in ("LR", "LR+SD"):
            for suffix, dash, label in (("", "dot", "one call at a time"),
                                        (" cont.", "solid", "continuous batching")):
                for law, width in (("constant", 2.5), ("geometric", 1.2)):
                    pts = sorted((r["context"], r[name + suffix]["speedup"])
                                 for r in rows if r["step_lengths"] == law)
                    fig.add_trace(go.Scatter(
                        x=[x for x, _ in pts], y=[y for _, y in pts], mode="lines+markers",
                        name=f"{name}, {label}, {law} steps", legendgroup=name + suffix + law,
                        showlegend=col == 1,
                        line={"color": colors[name], "dash": dash, "width": width}),
                        row=1, col=col)
            rep = REPORTED[(task, device)][name]
            if rep is not None:
                fig.add_hline(y=rep, line={"color": colors[name], "width": 1},
                              annotation_text=f"reported {name} {rep}",
                              annotation_position="top left", row=1, col=col)
        fig.update_xaxes(type="log", title_text="context L (tokens)", row=1, col=col)
    fig.add_hline(y=1.0, line={"color": "black", "width": 1, "dash": "dash"})
    fig.update_yaxes(title_text="predicted speedup (decoder model)", row=1, col=1)
    fig.update_layout(
        title="Lookahead Reasoning at the paper's scale as this project's decoder runs it"
              "<br><sup>1.5B drafting for 32B, n-gram SD, 7B judge, two devices; the "
              "decoder model on predicted profiles (bench_paper_scale); thick: constant "
              "steps of 24 tokens, thin: geometric</sup>",
        template="plotly_white", legend={"orientation": "h", "y": -0.25},
        height=520, width=1250)
    return write_figure(fig, stem, plotlyjs="directory")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--figure", default=None, metavar="STEM",
                    help="draw the committed results as STEM.html (and STEM.png); "
                         "nothing is recomputed")
    a = ap.parse_args(argv)
    if a.figure:
        results = json.loads((RESULTS / "paper_scale.json").read_text(encoding="utf-8"))
        for path in figure(results, a.figure):
            print(f"wrote {path}")
        return
    out: list[dict[str, Any]] = []
    rows = []
    for (task, device), rep in REPORTED.items():
        a1, a2 = preset_alphas(PRESETS[task])
        for L in CONTEXTS:
            for shared in (True, False):
                r = what_if(TARGET, DRAFT, alpha1=a1, alpha2=a2, device=device, context=L,
                            token_drafter="ngram", judge=JUDGE, placement="two-devices",
                            shared_prefix=shared, k1=6, k2=9, budget=16)
                p = r.predictions
                rows.append([task, device, L, "yes" if shared else "no",
                             round(r.costs["c1"], 4),
                             round(r.costs["batch_cost"]["T(8)/T(1)"], 3),
                             round(r.costs["verify_cost"]["V(8)/T(1)"], 3),
                             round(p["SD"].speedup, 3), rep["SD"],
                             round(p["LR async"].speedup, 3), rep["LR"],
                             round(p["LR+SD async"].speedup, 3), rep["LR+SD"],
                             f"{p['best'].mode} {p['best'].k1},{p['best'].k2} "
                             f"{p['best'].speedup:.3f}",
                             round(p["LR+SD async"].flat_speedup, 3)])
                out.append({"task": task, "device": device, "context": L,
                            "shared_prefix": shared, "reported": rep, **r.to_dict()})
    print_table("Paper scale: 1.5B -> 32B, n-gram SD, 7B judge, async LR k1=6, k2=9 "
                "(priced by the h100-sxm-graph cost model; flat = closed form f·g)",
                ["task", "device", "L", "shared", "c1", "T(8)/T(1)", "V(8)/T(1)",
                 "SD", "SD rep.", "LR", "LR rep.", "LR+SD", "LR+SD rep.",
                 "best (M=16)", "LR+SD flat"], rows)
    dec_rows, dec_out = [], []
    for (task, device), rep in REPORTED.items():
        for L in CONTEXTS:
            for law in ("constant", "geometric"):
                d = decoder_model(task, device, L, law)
                b, e = d["best"], d["best, either batching"]
                dec_rows.append([task, device, L, law,
                                 *(round(d[k]["speedup"], 3) for k in FIXED),
                                 f"{b['label']} {b['speedup']:.3f}",
                                 f"{e['label']} {e['speedup']:.3f}",
                                 *(rep[k] for k in ("SD", "LR", "LR+SD"))])
                dec_out.append({"task": task, "device": device, "context": L,
                                "step_lengths": law, "step_tokens_mean": STEP_TOKENS,
                                "reported": rep, **d})
    print_table("Paper scale, the decoder model (the decoder's own schedule priced by "
                "predicted profiles; two devices; steps of mean 24 tokens)",
                ["task", "device", "L", "steps", *FIXED, "best (M=16), call",
                 "best (M=16), either", "SD rep.", "LR rep.", "LR+SD rep."], dec_rows)
    write_json("paper_scale", {"target": TARGET, "draft": DRAFT, "judge": JUDGE,
                               "runs": out, "decoder_model": dec_out})


if __name__ == "__main__":
    main()
