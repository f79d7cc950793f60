"""Which time model an estimate uses, and how far to trust it.

``auto`` is the fitted GPU model (``predicted``) on one GPU whose architecture generation has fitted parameters, at
a precision it was fitted on, unless a PPP or a convolution algorithm was set or the device is calibrated; else
classic PALEO (``auto_variant``; ``outside_model`` says why the model has nothing to stand on, ``predicted_asked``
refuses the variant by name there). ``fitted_on`` says in words what a prediction stands on, and ``typical_error``
quotes the model's held-out error (leave one source out) over the most specific rows there are enough of. The
evidence: docs/benchmarks.md (gpu section) and docs/gpu-model-history.md.
"""

from __future__ import annotations

from . import gpu_model
from .choices import FITTED_PRECISIONS
from .devices import Device
from .errors import CalcError


def outside_model(device: Device, compute: str) -> str | None:
    """Why the fitted GPU model has nothing to stand on for ``device`` at ``compute`` (None: it has): ``auto``
    gives PALEO there, and ``predicted`` asked for by name is refused."""
    if device.kind != "GPU":
        return f"the time model is for GPUs; {device.name} is a {device.kind}"
    if device.gpus_per_board > 1:
        return f"{device.name} is a board of {device.gpus_per_board} GPUs; the time model predicts one GPU"
    if compute not in FITTED_PRECISIONS:
        return f"the time model was not fitted on {compute} (only {', '.join(FITTED_PRECISIONS)})"
    return None


def calibrated(device: Device) -> bool:
    return bool(device.efficiency or device.layer_overhead or device.alloc_bandwidth)


def auto_variant(device: Device, compute: str, ppp: float = 1.0, ppp_memory: float | None = None,
                 conv_algorithm: str = "direct") -> tuple[str, str]:
    """The variant "auto" stands for, and why: the fitted GPU model (``predicted``) on one GPU whose architecture
    generation has fitted parameters, at a precision it was fitted on, unless the user asked for classic PALEO (a
    PPP other than 1, a convolution algorithm) or calibrated the device (its measured efficiencies win); else
    ``paleo``."""
    outside = outside_model(device, compute)
    if outside:
        return "paleo", f"PALEO: {outside}"
    if calibrated(device):
        return "paleo", f"PALEO with the figures measured on {device.name} (calibrated)"
    if ppp != 1 or (ppp_memory is not None and ppp_memory != 1):
        return "paleo", "PALEO: a PPP was set (PPP 1 is the predicted model)"
    if conv_algorithm != "direct":
        return "paleo", f"PALEO: the convolution algorithm was set ({conv_algorithm})"
    if not gpu_model.has_params(device):
        return "paleo", f"PALEO: the time model has no fitted parameters for {device.architecture or 'unknown'} GPUs"
    return "predicted", "predicted: " + fitted_on(device, compute)


def fitted_on(device: Device, compute: str) -> str:
    """What a prediction for ``device`` at ``compute`` stands on, in words: how many measured timings (published, or
    measured by this project) of its generation were fitted, and at this precision (the fit's ``coverage``:
    generation → precision → rows)."""
    arch = device.architecture
    cover = gpu_model.load_params().get("coverage", {}).get(arch)
    if cover is None:
        return f"the time model fitted on measured timings of {arch} GPUs"
    rows, here = sum(cover.values()), cover.get(compute, 0)
    text = f"the time model fitted on {rows} measured timings of {arch} GPUs"
    if not here:
        text += (f", none of them at {compute}: extrapolated from "
                 f"{', '.join(sorted(k for k, v in cover.items() if v))}")
    return text


def predicted_asked(device: Device, compute: str) -> str:
    """The reason for a prediction asked for by name, or a CalcError where the model has nothing to stand on
    (``outside_model``)."""
    outside = outside_model(device, compute)
    if outside:
        raise CalcError(f"{outside}: choose auto or paleo", node=device.id, field="variant", value="predicted")
    asked = " (as asked: the device's calibrated figures are not used)" if calibrated(device) else " (as asked)"
    return f"predicted{asked}: {fitted_on(device, compute)}"


MIN_GENERATION_ROWS = 20       # fewer held-out rows than this: a generation's own error is too thin to quote


# batch ≤ this: a GPU pass is mostly the host's per-kernel cost, and the rows scatter most there (this project's
# measured rows: a quarter of the batch-1 passes took > 10 % longer than the same pass at batch 8), so the error
# quoted for an estimate at such a batch is the small-batch rows' own
SMALL_BATCH = 8


def typical_error(device: Device, batch: int | None = None) -> dict:
    """The predicted model's held-out error (leave-one-source-out: each row predicted by a fit that did not see its
    source), over the most specific rows there are at least ``MIN_GENERATION_ROWS`` of: with ``batch``, the device
    generation's in its band (batch ≤ ``SMALL_BATCH`` or above, where the file has bands); then the generation's
    at every batch; then all GPUs' in the band; then all rows."""
    doc = gpu_model.load_params()
    arch = device.architecture or ""
    band = None if batch is None else "small" if batch <= SMALL_BATCH else "large"
    by_band = (doc.get("errors_by_batch") or {}).get(band) or {} if band else {}
    at = f" at batch 1–{SMALL_BATCH}" if band == "small" else f" at batch ≥ {SMALL_BATCH + 1}"
    # the most specific figure with enough rows: the generation in the band, the generation at every batch, all
    # GPUs in the band, all GPUs
    candidates = ((by_band.get(arch), f"{arch} GPUs", at),
                  ((doc.get("errors_by_generation") or {}).get(arch), f"{arch} GPUs", ""),
                  (by_band.get("all"), "all GPUs", at))
    e, who, where = next((c for c in candidates if c[0] and c[0].get("rows", 0) >= MIN_GENERATION_ROWS),
                         (doc["errors"]["loso"], "all GPUs", ""))
    return {"median": e["median"], "p90": e["p90"], "rows": e["rows"],
            "basis": f"leave-one-source-out over {who}, {e['rows']} measured timings{where}"}
