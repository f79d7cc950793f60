"""Text renderings of core results: LaTeX for pen-and-paper lines, a Markdown report of the current analysis (with
the network's collapsed graph as a DOT block)."""

from __future__ import annotations

import re

import core
from core import gpu_model, netviz
from core.cli_text import calibration_line
from core.units import format_bytes

_TOKENS = re.compile(r"[A-Za-z]+_[A-Za-z]+|[A-Za-z]+|\d[\d,]*\d|\d|\s+|.")
_SYMBOLS = {"·": r"\cdot ", "×": r"\times ", "−": "-", "≈": r"\approx ", "{": r"\{", "}": r"\}", "%": r"\%",
            "∏": r"\prod ", "²": "^2", "√": r"\sqrt ", "…": r"\ldots "}


def _tex(s: str) -> str:
    out = []
    for tok in _TOKENS.findall(s):
        if re.fullmatch(r"[A-Za-z]_[A-Za-z]+", tok):             # C_out → C_{out}
            out.append(tok[0] + r"_{\mathrm{" + tok[2:] + "}}")
        elif re.fullmatch(r"[A-Za-z]", tok):                       # N, k: math symbols
            out.append(tok)
        elif re.fullmatch(r"[A-Za-z_]+", tok):                     # words
            out.append(r"\text{" + tok.replace("_", r"\_") + "}")
        elif tok[0].isdigit():
            out.append(tok.replace(",", "{,}"))
        elif tok.isspace():
            out.append(r"\ ")
        else:
            out.append(_SYMBOLS.get(tok, tok))
    return "".join(out)


def formula_latex(line) -> str:
    """A pen-and-paper line ('MACs = N·C_out·… = 1·64·… = 10,616,832') as LaTeX for st.latex."""
    value = f"{line.value:,}".replace(",", "{,}")
    return f"{_tex(line.label)} = {_tex(line.symbolic)} = {_tex(line.substituted)} = " + r"\mathbf{" + value + "}"


def model_label(est) -> str:
    """How a page names an estimate's times: "predicted (±16 % typical)" or "PALEO (PPP 0.5)"."""
    if est.variant == "predicted" and est.launch != "eager":
        return "predicted with CUDA Graphs (untested: the fit saw eager runs only)"
    if est.variant == "predicted":
        return f"predicted (±{est.typical_error['median'] * 100:.0f} % typical)"
    return f"{'PALEO' if est.variant == 'paleo' else est.variant} (PPP {est.ppp:g})"


def estimate_caption(est) -> tuple[str, str]:
    """The Estimates page's caption under its numbers, in one sentence (the network, device, batch, precision and time
    model), and what it says of that time model, for the page's "How is this computed?" expander."""
    report, dev = est.report, est.device
    where = f"{report.name} on {dev.name}, batch {report.batch_size}, {report.dtype}"
    if est.variant == "predicted" and est.launch != "eager":
        return (f"{where}: **{model_label(est)}**.",
                f"**{model_label(est)}**: the fitted model without its per-kernel launch cost; no published timing was "
                "taken with CUDA Graphs, so it has no typical error. Beside it, the PALEO bound: PPP 1 = the datasheet "
                "peak.")
    if est.variant == "predicted":
        e = est.typical_error
        return (f"{where}: **{model_label(est)}**.",
                f"**{model_label(est)}**: {est.variant_reason.split(': ', 1)[-1]}; typically within "
                f"±{e['median'] * 100:.0f} %, 1 in 10 off by more than {e['p90'] * 100:.0f} % ({e['basis']}). Beside "
                "it, the PALEO bound: PPP 1 = the datasheet peak.")
    quality = calibration_line(dev)         # a calibrated device: its thread count and held-out error
    how = (" × the calibrated efficiency of each class of work" if dev.efficiency else
           " (datasheet peak: an optimistic bound)" if est.ppp == 1 else "")
    return (f"{where}, {model_label(est)}{how}.",
            ((f"{est.variant_reason}." if "as asked" not in est.variant_reason else "")
             + (f" **{quality[0].upper()}{quality[1:]}.**" if quality else "")
             + (f" These times are for {est.threads} torch thread(s) only." if est.threads else "")).strip())


def batch_norm_note(est) -> str:
    """The caption's sentence on train-mode batch norm (``gpu_model.narrowest_channel_fill``), with this network's
    narrowest one on this GPU; empty without batch norm or without the GPU's SM count."""
    narrowest = gpu_model.narrowest_channel_fill(est.work.layers, est.device.sm_count)
    if narrowest is None:
        return ""
    c, fill = narrowest
    where = f"here the narrowest, {c} channels, fill {fill:.0%} of the {est.device.sm_count} SMs"
    rate = est.model_params.get("sm_rate")
    if rate is not None and gpu_model.sm_cycles(est.device):
        rule = (f": it takes the slower of its bytes at the bandwidth and its elements at {rate:.3g} per cycle of each "
                f"SM its channels fill (fitted; {where}; docs/benchmarks.md, tried 33 and 39).")
    else:
        rule = (f", so its bytes move at the share of the SMs its channels fill: {where} (measured on an H200: "
                f"docs/benchmarks.md, tried 33).")
    return (" A batch norm in a training step (its forward and its backward) runs one thread block per channel, as "
            "PyTorch's and cuDNN's kernels do" + rule + " An inference pass's batch norm is elementwise.")


def predicted_notes(est) -> str:
    """The Estimates breakdown caption's sentences on what the predicted variant charges this network: mixed
    precision's casts, depthwise convolutions' backward kernels, train-mode batch norm (empty where none apply)."""
    mixed = (" Mixed precision runs as PyTorch's autocast: each conv or linear layer also runs cast kernels, its fp32 "
             "weights to fp16 in every forward and its gradients back in the backward (bytes and launches, fitted: "
             "docs/benchmarks.md, tried 25).")
    depthwise = (" A depthwise convolution's backward kernels (PyTorch's own, with no tensor-core path) run at their "
                 "own fitted share of the fp32 CUDA-core peak (docs/benchmarks.md, tried 28). One whose input is "
                 "channels-last (ConvNeXt's, after its permutes) runs cuDNN's kernels instead: in half precision at "
                 "the grouped-convolution rule (tried 38); in fp32 and TF32 cuDNN's channels-last weight gradient is "
                 "slower than PyTorch's and the model keeps the CUDA-core rule, so ConvNeXt's training steps at batch "
                 "128–256 on an H100 or H200 come out 0.55–0.98× of the measured time there (0.66–1.06× in bf16 and "
                 "mixed precision).")
    has_depthwise = "depthwise_backward" in est.model_params and any(
        gpu_model.depthwise(lw.work_class) for lw in est.work.layers)
    stems = [lw.node for lw in est.work.layers if gpu_model.stem_conv(lw.node)] if est.stem_on_cuda_cores else []
    channels = sorted({n.in_shapes[0][0] for n in stems})
    stem = (f" {_names([n.name for n in stems])}, over {' or '.join(map(str, channels))} input channel"
            f"{'' if channels == [1] else 's'}, {'runs' if len(stems) == 1 else 'run'} on CUDA cores (cuDNN's "
            f"tensor-core kernels take channels in multiples of 4 or 8): at the conv efficiency of the fp32 peak, no "
            f"tensor-core factor (docs/benchmarks.md, tried 53).") if stems else ""
    return (mixed if est.precision.master else "") + stem + (depthwise if has_depthwise else "") + \
        batch_norm_note(est)


def _names(names: list[str]) -> str:
    """"The convolution conv1", "The convolutions a, b and c"."""
    if len(names) == 1:
        return f"The convolution {names[0]}"
    return f"The convolutions {', '.join(names[:-1])} and {names[-1]}"

def markdown_report(report: core.Report, est=None) -> str:
    """The current analysis as a Markdown document: settings, totals, PALEO and roofline, the per-layer table."""
    t = report.totals
    lines = [f"# {report.name}", "",
             f"Input {report.batch_size}×{'×'.join(map(str, report.input_shape))}, {report.dtype}, optimizer "
             f"{report.optimizer}. {core.CONVENTION}", "",
             "| total | value |", "|---|---:|",
             f"| parameters | {t['params']:,} |", f"| forward MACs | {t['macs']:,} |",
             f"| forward FLOPs | {t['flops']:,} |", f"| backward FLOPs | {t['backward_flops']:,} |",
             f"| inference memory | {format_bytes(t['inference_bytes'])} |",
             f"| training memory | {format_bytes(t['training_bytes'])} |"]
    if est is not None:
        e, r = est.totals, est.roofline
        lines += [f"| {model_label(est)} forward on {est.device.name} | {e['forward_s'] * 1e3:,.3f} ms |",
                  f"| {model_label(est)} training step | {e['training_step_s'] * 1e3:,.3f} ms |"]
        if est.bound is not None:
            b = est.bound.totals
            lines += [f"| PALEO at PPP 1 (datasheet bound, not a floor) forward | {b['forward_s'] * 1e3:,.3f} ms |",
                      f"| PALEO at PPP 1 (datasheet bound, not a floor) training step | "
                      f"{b['training_step_s'] * 1e3:,.3f} ms |"]
        lines += [
                  f"| ridge / network intensity | {r['ridge_flop_per_byte']:,.2f} / "
                  f"{(r['arithmetic_intensity'] or 0):,.2f} FLOP/byte ({r['bound']}-bound) |"]
    lines += ["", "| layer | op | output | params | MACs | FLOPs fwd | FLOPs bwd |",
              "|---|---|---|---:|---:|---:|---:|"]
    lines += [f"| {l.name} | {l.op} | {'×'.join(map(str, l.output_shape))} | {l.params:,} | {l.macs:,} | "
              f"{l.flops:,} | {l.backward_flops:,} |" for l in report.layers]
    lines += ["", "## Graph", "",
              "Repeated blocks collapsed, coloured by share of FLOPs. Render it with Graphviz (`dot -Tsvg report.dot "
              "> graph.svg`) or any Graphviz viewer; the app's Graph page draws it too.", "",
              "```dot", netviz.dot(report, "flops", collapse=True).rstrip("\n"), "```"]
    return "\n".join(lines) + "\n"
