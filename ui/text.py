"""Text renderings of core results: LaTeX for pen-and-paper lines, a Markdown report of the current analysis."""

from __future__ import annotations

import re

import core
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
    """How a page names an estimate's times: "predicted (±18 % typical)" or "PALEO (PPP 0.5)"."""
    if est.variant == "predicted" and est.launch != "eager":
        return "predicted with CUDA Graphs (untested: the fit saw eager runs only)"
    if est.variant == "predicted":
        return f"predicted (±{est.typical_error['median'] * 100:.0f} % typical)"
    return f"{'PALEO' if est.variant == 'paleo' else est.variant} (PPP {est.ppp:g})"


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
    return "\n".join(lines) + "\n"
