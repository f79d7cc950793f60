"""timm models, offline (issue 16): ``analyze("timm:NAME")`` against PyTorch on the same timm architecture, the
importer rules timm needed (functional batch_norm / group_norm / conv2d, Conv1d, LeakyReLU, padding modules,
stack, sum, expand, shape-dependent control flow), errors, caching, the CLI, and that nothing is downloaded.

References are computed here from timm and torch directly: ``sum(p.numel())`` of ``timm.create_model(name)``,
``FlopCounterMode`` total ÷ 2 of one forward at batch 1, the model's output shape. Models are built on the meta
device (shapes only), as the importer builds them, but by this test's own call to timm.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import timm
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import core
from core.bridge import timm_models
from core.bridge.fx_import import from_module
from core.bridge.to_torch import to_module
from core.errors import NetworkError

ROOT = Path(__file__).resolve().parents[1]


def reference(model: nn.Module, shape: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
    """PyTorch's params, MACs (FlopCounterMode ÷ 2, batch 1) and per-sample output shape of ``model``."""
    model.eval()
    device = "meta" if any(p.is_meta for p in model.parameters()) else "cpu"
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(torch.zeros((1, *shape), device=device))
    return sum(p.numel() for p in model.parameters()), counter.get_total_flops() // 2, tuple(out.shape[1:])


def timm_reference(name: str, shape=None):
    with torch.device("meta"):
        model = timm.create_model(name, pretrained=False)
    shape = tuple(shape or model.pretrained_cfg["input_size"])
    return (*reference(model, shape), shape)


# -- timm models, exact ------------------------------------------------------------------------------------------

# the brief's set, and one model for each importer rule timm needed
MODELS = [
    "resnet50d", "convnext_tiny", "efficientnet_b0", "mobilenetv3_small_100", "regnety_002", "densenet121",
    "cspdarknet53",                    # LeakyReLU inside BatchNormAct2d (F.batch_norm), input 256 by its config
    "tf_mobilenetv3_small_minimal_100",  # TF "same" padding: shape arithmetic in Python, then F.pad + F.conv2d
    "nf_regnet_b0",                    # scaled weight standardisation: F.conv2d on a weight computed with a gain
    "resnetblur18",                    # blur pooling: a fixed filter in a buffer
    "ecaresnet26t",                    # ECA: nn.Conv1d over channels, expand_as
    "skresnet18",                      # selective kernels: torch.stack, sum
    "vgg11",                           # pre-logits with control flow on the input size
    "resnetv2_50x1_bit",               # ConstantPad2d, F.group_norm, standardised F.conv2d
    "convnextv2_atto",                 # global response norm: x.norm, torch.addcmul
]


@pytest.mark.parametrize("name", MODELS)
def test_timm_model_imports_exactly(name):
    params, macs, out, shape = timm_reference(name)
    r = core.analyze(f"timm:{name}")
    net = r.compiled.network
    assert dict(net.inputs)["x"] == shape
    assert [n.name for n in net.nodes if n.op == "opaque"] == []
    assert r.totals["params"] == params
    assert r.totals["macs"] == macs
    assert r.totals["flops"] >= 2 * macs
    assert r.compiled.by_name[net.outputs[0]].out_shape == out
    assert net.name == f"timm:{name}"


def test_input_shape_is_the_models_config_or_the_callers():
    # cspdarknet53's pretrained_cfg says 3×256×256; asked for 3×160×160 the network is imported at that size
    assert timm.get_pretrained_cfg("cspdarknet53").input_size == (3, 256, 256)
    assert dict(timm_models.load_timm("cspdarknet53").inputs)["x"] == (3, 256, 256)
    params, macs, out, _ = timm_reference("resnet18", (3, 160, 160))
    r = core.analyze("timm:resnet18", input_shape="3x160x160", batch_size=4)
    assert dict(r.compiled.network.inputs)["x"] == (3, 160, 160)
    assert r.totals["params"] == params
    assert r.totals["macs"] == 4 * macs                          # per sample × batch 4
    assert r.compiled.by_name[r.compiled.network.outputs[0]].out_shape == out


def test_a_pretrained_tag_gives_its_configs_input_size():
    # resnet50.a1_in1k is configured for 224, resnet50.fb_swsl_ig1b_ft_in1k too; tf_efficientnet_b1.in1k for 240
    net = timm_models.load_timm("tf_efficientnet_b1.in1k")
    assert dict(net.inputs)["x"] == timm.get_pretrained_cfg("tf_efficientnet_b1.in1k").input_size == (3, 240, 240)


def test_results_are_cached_per_name_and_shape():
    a = timm_models.load_timm("regnetx_002")
    assert timm_models.load_timm("regnetx_002") is a
    assert timm_models.load_timm("regnetx_002", (3, 224, 224)) is not None
    b = timm_models.load_timm("regnetx_002", "3x128x128")
    assert timm_models.load_timm("regnetx_002", (3, 128, 128)) is b is not a
    assert dict(b.inputs)["x"] == (3, 128, 128)


def test_sessions_asking_at_once_share_one_build():
    """The app serves sessions from threads: loads are serialised (fx patches torch while it traces) and cached."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        nets = list(pool.map(lambda _: timm_models.load_timm("regnetx_002", (3, 96, 96)), range(4)))
    assert all(n is nets[0] for n in nets) and dict(nets[0].inputs)["x"] == (3, 96, 96)


def test_built_on_the_meta_device_and_nothing_is_downloaded(monkeypatch):
    import huggingface_hub
    import timm.models._builder as builder

    def refuse(*a, **k):
        raise AssertionError("a download was attempted")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", refuse)
    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", refuse)
    monkeypatch.setattr(builder, "load_pretrained", refuse)
    model, shape = timm_models.build("mobilenetv3_small_050")
    tensors = [*model.parameters(), *model.buffers()]
    assert tensors and all(t.is_meta for t in tensors)          # no weight memory allocated
    assert shape == (3, 224, 224)
    timm_models._load.cache_clear()
    assert core.analyze("timm:mobilenetv3_small_050").totals["params"] == sum(p.numel() for p in model.parameters())


# -- errors ------------------------------------------------------------------------------------------------------

def one_line_error(fn) -> NetworkError:
    with pytest.raises(NetworkError) as info:
        fn()
    err = info.value
    assert "\n" not in str(err) and err.field == "model"
    return err


def test_unknown_name_suggests_close_ones():
    err = one_line_error(lambda: core.analyze("timm:resnet5O"))
    assert "timm has no model 'resnet5O'" in str(err) and "did you mean" in str(err) and "resnet50" in str(err)
    assert err.value == "timm:resnet5O"
    assert "timm.list_models()" in str(one_line_error(lambda: timm_models.load_timm("qqqqqqqqqqqq")))
    assert "needs a name" in str(one_line_error(lambda: core.analyze("timm:")))


def test_hub_names_and_unknown_tags_are_refused_before_any_download():
    assert "needs a download" in str(one_line_error(lambda: core.analyze("timm:hf-hub:timm/resnet18.a1_in1k")))
    err = str(one_line_error(lambda: core.analyze("timm:resnet18.no_such_tag")))
    assert "no pretrained tag 'no_such_tag'" in err and "a1_in1k" in err


@pytest.mark.parametrize("shape, fragment", [((1, 224, 224), "1x224x224"), ((224, 224), "224x224")])
def test_an_input_shape_the_model_cannot_take_is_one_line(shape, fragment):
    err = str(one_line_error(lambda: core.analyze("timm:resnet18", input_shape=shape)))
    assert err.startswith("field 'model' = 'timm:resnet18': timm model resnet18 at input") and fragment in err


def test_without_timm_the_message_says_so_and_the_list_is_empty(monkeypatch):
    monkeypatch.setattr(timm_models, "available", lambda: False)
    assert "timm is not installed" in str(one_line_error(lambda: timm_models.load_timm("resnet18_not_cached")))
    assert timm_models.names() == []


def test_module_top_imports_neither_torch_nor_timm():
    code = ("import sys, core.bridge.timm_models as t; n = t.names(); a = t.available(); "
            "print(len(n), a, 'torch' in sys.modules, 'timm' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    count, avail, torch_loaded, timm_loaded = p.stdout.split()
    assert int(count) > 500 and avail == "True" and (torch_loaded, timm_loaded) == ("False", "False"), p.stderr


# -- the list the network picker reads ---------------------------------------------------------------------------

def test_the_convolutional_rule():
    cnn = timm_models.convolutional_models()
    for name in ("resnet50d", "convnext_tiny", "efficientnet_b0", "regnety_002", "resnet50_clip_gap",
                 "convformer_s18", "poolformer_s12", "mobilenetv4_conv_small", "vgg16", "repvit_m1"):
        assert name in cnn, name
    for name in ("vit_base_patch16_224", "swin_tiny_patch4_window7_224", "deit_small_patch16_224", "mixer_b16_224",
                 "coatnet_0_rw_224", "caformer_s18", "mobilenetv4_hybrid_medium", "resnet50_clip", "fastvit_t8",
                 "botnet26t_256", "levit_128"):
        assert name not in cnn, name
    assert set(cnn.values()) <= timm_models.CNN_FAMILIES


def test_the_data_file_matches_the_installed_timm():
    doc = json.loads(timm_models.DATA.read_text(encoding="utf-8"))
    assert doc["timm"] == timm.__version__, "regenerate: python benchmarks/bench_timm.py"
    catalog = timm_models.catalog()
    assert set(catalog) == set(timm_models.convolutional_models())
    for name, entry in catalog.items():
        assert tuple(entry["input_size"]) == timm.get_pretrained_cfg(name).input_size, name
        assert entry["status"] in ("exact", "opaque", "differs", "fails")
    names = timm_models.names()
    assert names == sorted(n for n, e in catalog.items() if e["status"] != "fails")
    assert "resnet50d" in names and catalog["resnet50d"]["status"] == "exact"
    exact = sum(e["status"] == "exact" for e in catalog.values())
    assert exact >= 0.9 * len(catalog)                     # the target


# -- the importer rules, on small modules --------------------------------------------------------------------------

class TimmStyleBlock(nn.Module):
    """The calls timm's layers make, in one small module: F.batch_norm with parameters and buffers (BatchNormAct2d),
    LeakyReLU, same padding by F.pad + F.conv2d, F.group_norm, ZeroPad2d, ECA (mean, Conv1d, sigmoid, expand_as),
    stack and sum (selective kernels), a global response norm (norm, addcmul)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 3, 3, 3))
        self.b = nn.Parameter(torch.randn(8))
        self.bn_w, self.bn_b = nn.Parameter(torch.ones(8)), nn.Parameter(torch.zeros(8))
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("var", torch.ones(8))
        self.act = nn.LeakyReLU(0.1)
        self.gn_w, self.gn_b = nn.Parameter(torch.ones(8)), nn.Parameter(torch.zeros(8))
        self.pad = nn.ZeroPad2d((1, 0, 1, 0))
        self.eca = nn.Conv1d(1, 1, 3, padding=1, bias=False)
        self.branch = nn.Conv2d(8, 8, 1)
        self.grn_w, self.grn_b = nn.Parameter(torch.ones(8)), nn.Parameter(torch.zeros(8))

    def forward(self, x):
        h, w = x.shape[-2:]
        ph = max((math.ceil(h / 2) - 1) * 2 + 3 - h, 0)           # TF "same" for kernel 3, stride 2
        pw = max((math.ceil(w / 2) - 1) * 2 + 3 - w, 0)
        x = F.pad(x, [pw // 2, pw - pw // 2, ph // 2, ph - ph // 2])
        x = F.conv2d(x, self.w, self.b, 2)
        x = self.act(F.batch_norm(x, self.mean, self.var, self.bn_w, self.bn_b, False, 0.1, 1e-5))
        x = self.pad(F.group_norm(x, 2, self.gn_w, self.gn_b, 1e-5))
        y = self.eca(x.mean((2, 3)).view(x.shape[0], 1, -1)).sigmoid().view(x.shape[0], -1, 1, 1)
        x = x * y.expand_as(x)
        x = torch.stack([x, self.branch(x)], dim=1).sum(1)
        g = x.norm(p=2, dim=(2, 3), keepdim=True)                         # ConvNeXt-V2's global response norm
        g = g / (g.mean(dim=1, keepdim=True) + 1e-6)
        return x + torch.addcmul(self.grn_b.view(1, -1, 1, 1), self.grn_w.view(1, -1, 1, 1), x * g, value=0.5)


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_timm_style_calls_import_exactly(device):
    with torch.device(device):
        m = TimmStyleBlock()
    shape = (3, 15, 14)
    params, macs, out = reference(m, shape)
    result = from_module(m, shape)          # plain fx cannot trace the padding arithmetic: shapes made concrete
    assert result.unsupported == ()
    r = core.analyze(result.network)
    assert r.totals["params"] == params
    assert r.totals["macs"] == macs
    assert r.compiled.by_name[result.network.outputs[0]].out_shape == out
    ops = {n.op for n in result.network.nodes}
    assert {"conv2d", "batch_norm", "leaky_relu", "group_norm", "pad", "expand", "concat", "sum", "norm"} <= ops


class FixedFilter(nn.Module):
    """timm's BlurPool2d: a depthwise [1 2 1]ᵀ[1 2 1] / 16 filter in a buffer, stride 2; a conv without
    parameters."""

    def __init__(self, c: int):
        super().__init__()
        f = torch.tensor([1.0, 2.0, 1.0])
        self.register_buffer("filt", (f[:, None] * f[None, :] / 16).expand(c, 1, 3, 3).contiguous())

    def forward(self, x):
        return F.conv2d(x, self.filt, stride=2, groups=x.shape[1])


def test_a_fixed_filter_is_a_conv_without_parameters():
    m = FixedFilter(4)
    params, macs, _ = reference(m, (4, 8, 8))
    r = core.analyze(m, input_shape=(4, 8, 8))
    assert params == 0 and r.totals["params"] == 0
    assert r.totals["macs"] == macs == 4 * 3 * 3 * 3 * 3     # C·Ho·Wo·k² = 4·3·3·3·3 = 324
    conv = r.layers[0]
    assert conv.params == 0 and conv.buffers == 4 * 9    # the filter: C·k² = 36 elements, not trained
    err = one_line_error_any(lambda: to_module(r.compiled.network))
    assert "fixed filter" in str(err)


def one_line_error_any(fn) -> NetworkError:
    with pytest.raises(NetworkError) as info:
        fn()
    assert "\n" not in str(info.value)
    return info.value


def test_a_call_an_importer_refuses_becomes_an_opaque_node():
    """F.batch_norm with a weight and no bias has no rule: the importer's refusal becomes an opaque node with its
    reason (refusals used to fail with "'list' object is not callable")."""

    class HalfAffine(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))
            self.register_buffer("mean", torch.zeros(3))
            self.register_buffer("var", torch.ones(3))

        def forward(self, x):
            return F.batch_norm(x, self.mean, self.var, self.w, None, False)

    result = from_module(HalfAffine(), (3, 5, 5))
    assert result.unsupported == ("torch.nn.functional.batch_norm",)
    assert any("a weight but no bias" in w for w in result.warnings)
    assert core.analyze(result.network).totals["params"] == 3        # the weight, counted beside the opaque node


def test_cli_analyzes_a_timm_model():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "core", "analyze", "timm:resnet50d"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=180)
    assert p.returncode == 0, p.stderr
    params, macs, _, _ = timm_reference("resnet50d")
    total = next(line for line in p.stdout.splitlines() if line.startswith("Total"))
    assert f"{params:,}" in total and f"{macs:,}" in total
    bad = subprocess.run([sys.executable, "-m", "core", "analyze", "timm:resnet5O"], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=180)
    assert bad.returncode == 2 and "did you mean" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
