"""timm models, offline: ``analyze("timm:convnext_tiny")`` builds the architecture with ``pretrained=False`` on the
"meta" device (shapes only: no weights are allocated and nothing is downloaded) and imports it through the fx
bridge (``core.bridge.fx_import``).

Which timm models are *convolutional* (the ones the network picker lists and the benchmark checks) is decided by the
module that defines them (``timm.list_modules()``), with a few named exceptions:

* ``CNN_FAMILIES``: modules whose models compute every feature map with convolutions, plus per-channel gating
  (squeeze-excitation, ECA, selective-kernel and split attention), pooling and elementwise ops — ResNet and its
  variants, EfficientNet/MobileNet/MNASNet/MixNet, RegNet, ConvNeXt, DenseNet, CSPNet, NFNet, VGG, Inception,
  Xception, HRNet, … and the recent all-conv designs (RepViT, StarNet, FasterNet, MambaOut, InceptionNeXt, RDNet).
* ``HYBRIDS_IN_CNN_FAMILIES``: models in those modules that mix tokens by attention and are left out: the CLIP
  ResNets with a transformer attention-pool head (``resnet50_clip``; their ``*_clip_gap`` twins are in),
  MobileNet-V4's hybrids (``mobilenetv4_hybrid_*``, Mobile MQA blocks) and MetaFormer's CAFormer (``caformer_*``;
  PoolFormer and ConvFormer are in).
* Every other module is not convolutional: vision transformers (ViT, DeiT, BEiT, EVA, Swin, …), MLP mixers
  (MLP-Mixer, ResMLP, gMLP), conv/attention hybrids (CoAtNet/MaxViT, LeViT, MobileViT, EdgeNeXt, EfficientFormer,
  EfficientViT, FastViT, NextViT, TinyViT, BoTNet/HaloNet, CPUBone, CSATv2, MobileNet-V5, …), FocalNet (focal
  modulation in a transformer layout), Sequencer (LSTMs) and EfficientViM (state space). Those still import with
  ``timm:NAME``; they are just not what the CNN list promises.

``core/timm_models.json`` lists the convolutional models with each one's default input size and how it imports
(exact, with opaque nodes, or failing, with the reason), as measured by ``benchmarks/bench_timm.py`` (which writes
it); ``names()`` reads it without importing timm. Nothing here imports torch or timm at module level.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib.util
import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import NetworkError

DATA = Path(__file__).resolve().parent.parent / "timm_models.json"
PREFIX = "timm:"
_LOCK = threading.Lock()

CNN_FAMILIES = frozenset({
    "byobnet", "convmixer", "convnext", "cspnet", "cspnext", "densenet", "dla", "dpn", "efficientnet", "fasternet",
    "ghostnet", "hardcorenas", "hgnet", "hrnet", "inception_next", "inception_resnet_v2", "inception_v3",
    "inception_v4", "lcnetv2", "mambaout", "metaformer", "mobilenetv3", "nasnet", "nfnet", "pnasnet", "rdnet",
    "regnet", "repghost", "repvit", "res2net", "resnest", "resnet", "resnetv2", "rexnet", "selecsls", "senet",
    "sknet", "starnet", "tresnet", "vgg", "vovnet", "xception", "xception_aligned",
})
HYBRIDS_IN_CNN_FAMILIES = ("resnet*_clip", "mobilenetv4_hybrid_*", "caformer_*")


def available() -> bool:
    """Whether timm can be imported here (without importing it: that takes seconds)."""
    return importlib.util.find_spec("timm") is not None and importlib.util.find_spec("torch") is not None


def is_convolutional(name: str, family: str) -> bool:
    """The rule above: ``name`` is defined in a CNN family's module and is not one of its named hybrids."""
    return family in CNN_FAMILIES and not any(fnmatch.fnmatchcase(name, p) for p in HYBRIDS_IN_CNN_FAMILIES)


def convolutional_models() -> dict[str, str]:
    """{model name: family (the timm module defining it)} for every convolutional model of the installed timm."""
    import timm

    out = {}
    for family in sorted(timm.list_modules()):
        for name in timm.list_models(module=family):
            if is_convolutional(name, family):
                out[name] = family
    return dict(sorted(out.items()))


@lru_cache(maxsize=1)
def _catalog() -> dict:
    try:
        return json.loads(DATA.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"models": {}}


def catalog() -> dict[str, dict]:
    """{name: {"family", "input_size", "status", …}} from ``core/timm_models.json`` (no timm import)."""
    return dict(_catalog().get("models", {}))


def names() -> list[str]:
    """The convolutional timm models that import (exactly or with opaque nodes), for a network picker; read from
    ``core/timm_models.json``, so timm is not imported. Empty when timm is not installed."""
    if not available():
        return []
    return sorted(n for n, m in catalog().items() if m.get("status") in ("exact", "opaque", "differs"))


def _timm():
    if not available():
        raise NetworkError("timm is not installed (pip install timm)", field="model", value=PREFIX)
    import timm

    return timm


def _check_name(timm, name: str) -> None:
    """Unknown names get the closest known ones; hub names (``hf-hub:…``) are refused, they need a download."""
    if not isinstance(name, str) or not name.strip():
        raise NetworkError("a timm model needs a name, like timm:resnet50", field="model", value=PREFIX + str(name))
    if ":" in name or "/" in name:
        raise NetworkError("only timm's built-in architectures are supported (a hub model needs a download)",
                           field="model", value=PREFIX + name)
    base = name.split(".", 1)[0]
    if not timm.is_model(base):
        close = difflib.get_close_matches(base, timm.list_models(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else " (timm.list_models() lists them)"
        raise NetworkError(f"timm has no model '{base}'{hint}", field="model", value=PREFIX + name)
    if base != name and name not in timm.list_pretrained(name):
        tags = [t.split(".", 1)[1] for t in timm.list_pretrained(base + ".*")]
        raise NetworkError(f"timm model {base} has no pretrained tag '{name.split('.', 1)[1]}'"
                           + (f"; its tags: {', '.join(tags[:8])}" if tags else ""), field="model", value=PREFIX + name)


def build(name: str) -> tuple[Any, tuple[int, ...]]:
    """``timm.create_model(name, pretrained=False)`` on the meta device: (module, its default per-sample input size
    from ``pretrained_cfg["input_size"]``). Nothing is downloaded and no weight memory is allocated."""
    timm = _timm()
    import torch

    _check_name(timm, name)
    try:
        with torch.device("meta"):
            model = timm.create_model(name, pretrained=False)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 — timm's constructor: report it in one line
        raise NetworkError(f"building timm model {name} on the meta device failed: {_short(e)}", field="model",
                           value=PREFIX + name) from None
    cfg = getattr(model, "pretrained_cfg", None) or {}
    size = cfg.get("input_size") if isinstance(cfg, dict) else getattr(cfg, "input_size", None)
    return model, tuple(int(d) for d in (size or (3, 224, 224)))


def load_timm(name: str, input_shape: Any = None):
    """The ``core.ir.Network`` of timm model ``name`` (``"convnext_tiny"``, or with a pretrained tag
    ``"resnet50.a1_in1k"``, whose config gives the default input size) for per-sample ``input_shape`` (default: the
    model's ``pretrained_cfg["input_size"]``). Cached: building and tracing take seconds."""
    from ..shapes import parse_shape

    shape = parse_shape(input_shape) if input_shape is not None else None
    with _LOCK:      # one build and trace at a time: fx patches torch.nn.Module while it traces
        return _load(name.strip() if isinstance(name, str) else name, shape)


@lru_cache(maxsize=32)
def _load(name: str, shape: tuple[int, ...] | None):
    from .fx_import import from_module

    model, default = build(name)
    shape = shape or default
    try:
        return from_module(model, shape, name=PREFIX + name).network
    except NetworkError as e:
        where = f"{e.node}: " if e.node else ""
        raise NetworkError(f"timm model {name} at input {'x'.join(map(str, shape))} could not be imported: "
                           f"{where}{e.reason}", field="model", value=PREFIX + name) from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 — a gap in the importer must still read as one line
        raise NetworkError(f"timm model {name} could not be imported: {_short(e)}", field="model",
                           value=PREFIX + name) from None


def _short(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__
