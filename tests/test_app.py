"""The Streamlit page renders, updates when a control moves, and shows bad input as a message, not a traceback."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core
from apptest_ref import metric
from core.devices import load_devices
from core.variants import typical_error

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture()
def app():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    return at


def test_first_page_shows_mnist_totals(app):
    assert metric(app, "Parameters") == f"{core.analyze('mnist_cnn').totals['params']:,}"   # 1,199,882
    assert core.CONVENTION in [c.value for c in app.sidebar.caption]


def test_controls_update_numbers(app):
    app.selectbox(key="model").set_value("resnet18").run()
    assert metric(app, "Parameters") == "11,689,512"          # torchvision resnet18 num_params
    before = float(metric(app, "Forward GMACs"))
    app.number_input(key="batch_size").set_value(8).run()
    after = float(metric(app, "Forward GMACs"))
    assert after == pytest.approx(8 * before, rel=1e-3)         # MACs are linear in batch


def test_bad_input_shape_is_a_message_not_a_traceback(app):
    app.text_input(key="input_shape").set_value("3x0x2").run()
    assert not app.exception
    assert "input_shape" in app.error[0].value and "3x0x2" in app.error[0].value
    app.text_input(key="input_shape").set_value("").run()       # the user's network is still there
    assert not app.error and metric(app, "Parameters") == "1,199,882"


def test_explain_shows_substituted_arithmetic(app):
    text = " ".join(m.value for m in app.latex)
    # conv2: 64·24·24 × 32·3·3 = 10,616,832 MACs, × 2 = 21,233,664 FLOPs (LaTeX writes 10{,}616{,}832)
    assert r"1\cdot 64\cdot 24\cdot 24\cdot 32\cdot 3\cdot 3" in text
    assert "10{,}616{,}832" in text and "21{,}233{,}664" in text


PAGES = [str(Path(APP).parent / "views" / p) for p in ("roofline.py", "estimates.py", "devices.py", "network.py")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).stem)
def test_every_page_renders_and_follows_the_sidebar(page):
    at = AppTest.from_file(page, default_timeout=60).run()
    assert not at.exception
    at.selectbox(key="model").set_value("resnet18").run()
    before = [m.value for m in at.metric]
    at.number_input(key="batch_size").set_value(32).run()
    assert not at.exception
    if before:                                          # pages with numbers show new ones
        assert [m.value for m in at.metric] != before


def test_roofline_page_shows_the_v100_ridge():
    at = AppTest.from_file(PAGES[0], default_timeout=60).run()
    assert metric(at, "Ridge point") == "17.44 FLOP/byte"      # 15.7e12 / 900e9


def test_a_device_without_the_precision_says_so_instead_of_failing():
    at = AppTest.from_file(PAGES[1], default_timeout=60).run()
    at.selectbox(key="dtype").set_value("tf32").run()           # the default V100 has no tf32
    assert not at.exception
    assert any("tf32" in w.value and "fp32" in w.value for w in at.warning)


def test_the_first_page_does_not_import_torch():
    import subprocess
    import sys
    code = ("import sys; from streamlit.testing.v1 import AppTest; "
            f"at = AppTest.from_file({APP!r}, default_timeout=60).run(); assert not at.exception; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr[-500:]


NETWORK_PAGE = str(Path(APP).parent / "views" / "network.py")


def _edit(at, layer, field, value):
    at.selectbox(key="edit_layer").set_value(layer).run()
    at.selectbox(key="edit_field").set_value(field).run()
    at.number_input(key="edit_value").set_value(value).run()
    return at.button(key="edit_apply").click().run()


def test_widening_conv2_follows_into_fc1_and_every_page():
    at = AppTest.from_file(NETWORK_PAGE, default_timeout=60).run()
    _edit(at, "conv2", "out_channels", 128)
    assert not at.exception
    assert at.selectbox(key="model").value == "custom"
    # conv2 32→128: 128·32·9 + 128 = 36,992; fc1 18,432·128 + 128 = 2,359,424 → total 2,398,026 (the variant's)
    assert "2,398,026 parameters" in at.caption[0].value
    assert "changed conv2" in at.success[0].value


def test_an_invalid_edit_is_refused_at_its_layer_and_the_network_kept():
    at = AppTest.from_file(NETWORK_PAGE, default_timeout=60).run()
    _edit(at, "conv2", "out_channels", 128)
    _edit(at, "conv2", "kernel_size", 50)
    assert not at.exception
    assert "conv2" in at.error[0].value and "50×50" in at.error[0].value and "unchanged" in at.error[0].value
    assert "2,398,026 parameters" in at.caption[0].value          # the last valid network is still there
    at.button(key="edit_undo").click().run()
    assert "1,199,882 parameters" in at.caption[0].value          # undo returns to the built-in network


COMPARE_PAGE = str(Path(APP).parent / "views" / "compare.py")
ESTIMATES_PAGE = str(Path(APP).parent / "views" / "estimates.py")


def test_compare_presets_show_the_variants_side_by_side():
    at = AppTest.from_file(COMPARE_PAGE, default_timeout=60).run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("network")
    assert list(table.index) == ["vgg11", "vgg13", "vgg19"]
    assert table.loc["vgg19", "params"] == 143_667_240               # torchvision's published count
    at.button(key="preset_MNIST conv2 64 vs 128").click().run()
    table = at.dataframe[0].value.set_index("network")
    # conv2 64→128 doubles conv2 (10,616,832 → 21,233,664 MACs) and fc1 (1,179,648 → 2,359,296)
    assert table.loc["mnist_cnn_conv2_128", "GMACs"] * 1e9 == pytest.approx(11_992_448 + 10_616_832 + 1_179_648)


def _open_tab(at, label):
    at.session_state["estimates_tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def test_estimates_tabs_show_algorithms_batch_devices_and_scaling():
    at = AppTest.from_file(ESTIMATES_PAGE, default_timeout=60).run()
    assert not at.exception
    # the default device (a V100) gets the fitted prediction: the breakdown says which term limits how much time
    assert any("predicted (±" in c.value and "PALEO bound" in c.value for c in at.caption)
    parts = at.dataframe[0].value.set_index("pass")                    # the open tab: the breakdown
    fwd = parts.loc["forward"]
    limited = fwd["limited by compute ms"] + fwd["limited by memory ms"] + fwd["limited by launch overhead ms"]
    assert limited == pytest.approx(fwd["total ms"]) and float(at.metric[0].value.split()[0]) == \
        pytest.approx(fwd["total ms"], abs=1e-3)
    # each term over every kernel: a kernel takes max(compute + memory, overhead), so the pass lies between the
    # larger of the two sums and the two together
    terms = at.dataframe[1].value.set_index("pass")
    assert list(terms.index) == list(parts.index) and terms["total ms"].to_list() == parts["total ms"].to_list()
    for _, row in terms.iterrows():
        gpu, host = row["compute ms"] + row["memory ms"], row["launch overhead ms"]
        assert row["compute + memory ms"] == pytest.approx(gpu) and gpu > 0 and host > 0
        assert max(gpu, host) <= row["total ms"] * (1 + 1e-9) <= (gpu + host) * (1 + 2e-9)
    assert "PALEO bound: " not in at.metric[0].help and "PALEO bound (PPP 1)" in at.metric[0].help
    assert not any("algorithm" in d.value.columns for d in at.dataframe)   # closed tabs do not run

    at.selectbox(key="variant").set_value("paleo").run()                # classic PALEO: its terms add up
    parts = at.dataframe[0].value.set_index("part")
    total_ms = float(at.metric[0].value.split()[0]) + float(at.metric[1].value.split()[0])
    assert parts["ms"].drop("weight update").sum() == pytest.approx(total_ms, abs=2e-3)   # fwd + bwd parts
    at.selectbox(key="variant").set_value("auto").run()

    algos = next(d.value for d in _open_tab(at, "Convolution algorithm").dataframe).set_index("algorithm")
    assert algos.loc["winograd", "forward GFLOPs"] < algos.loc["direct", "forward GFLOPs"]

    by_batch = next(d.value for d in _open_tab(at, "Batch size").dataframe if "batch" in d.value.columns)
    assert list(by_batch["batch"]) == [2 ** i for i in range(13)]
    # training memory grows with the batch (saved activations), weights do not: strictly increasing
    assert by_batch["training memory GiB"].is_monotonic_increasing
    assert any("Largest power-of-two batch" in c.value for c in at.caption)     # the V100's 16 GiB line
    assert {"forward ms, PALEO bound", "launch-overhead share"} <= set(by_batch.columns)
    # each batch's typical error is its band's (core.variants.typical_error): batch ≤ 8 one figure, above it another
    v100 = load_devices().devices["v100-sxm2"]
    for b, pct in zip(by_batch["batch"], by_batch["typical ±%"]):
        assert pct == pytest.approx(typical_error(v100, int(b))["median"] * 100)
    assert by_batch["typical ±%"].nunique() == 2
    # mnist_cnn at batch 1 on a V100: every layer is launch-bound (a few µs of work against ~50 µs per call)
    assert any("Launch overhead limits most of the forward time up to batch **" in c.value for c in at.caption)

    devs = next(d.value for d in _open_tab(at, "Other devices").dataframe)
    assert len(devs) == len(load_devices().devices)        # every device in the database
    models = set(devs["time model"])                       # fitted GPUs predicted, the others PALEO
    assert any(m.startswith("predicted") for m in models) and any(m.startswith("PALEO") for m in models)

    scaling = next(d.value for d in _open_tab(at, "Data parallel").dataframe if "GPUs" in d.value.columns)
    assert list(scaling["GPUs"]) == [1, 2, 4, 8, 16, 32, 64] and scaling["speed-up"].iloc[0] == 1.0


def test_mixed_precision_breakdown_names_the_cast_kernels():
    """In mixed precision the predicted breakdown says that conv and linear layers also run autocast's cast
    kernels, and its forward total is the estimate's (which holds them); fp32 does not mention them."""
    from core.api import estimate
    at = AppTest.from_file(ESTIMATES_PAGE, default_timeout=60).run()
    assert not any("autocast" in c.value for c in at.caption)
    at.selectbox(key="model").set_value("resnet18").run()
    at.selectbox(key="dtype").set_value("mixed").run()
    assert not at.exception
    assert any("cast kernels" in c.value and "autocast" in c.value for c in at.caption)
    est = estimate(core.zoo.get("resnet18"), "v100-sxm2", batch_size=1, dtype="mixed")
    assert est.variant == "predicted"
    fwd = at.dataframe[0].value.set_index("pass").loc["forward", "total ms"]
    assert fwd == pytest.approx(est.totals["forward_s"] * 1e3)
    # the casts are in it: ResNet-18's 20 convs (conv1, 16 in the blocks, 3 downsamples) and its fc each end
    # their forward with a cast kernel
    assert sum(1 for lt in est.layer_times if lt.forward_kernels) == 20 + 1
    casts = sum(k.total_s for lt in est.layer_times for k in lt.forward_kernels[1:])
    assert casts > 0 and est.totals["forward_s"] > casts


def test_depthwise_breakdown_names_the_cuda_core_backward():
    """A network with depthwise convolutions gets the caption on their backward kernels (their own share of the
    fp32 CUDA-core peak), and the breakdown's backward is the estimate's, which charges them so; one without
    (the default ResNet) does not mention it."""
    from core import gpu_model
    from core.api import estimate
    at = AppTest.from_file(ESTIMATES_PAGE, default_timeout=60).run()
    assert not any("depthwise" in c.value for c in at.caption)
    at.selectbox(key="model").set_value("mobilenet_v2").run()
    assert not at.exception
    assert any("depthwise convolution's backward kernels" in c.value and "CUDA-core" in c.value
               and "channels-last" in c.value for c in at.caption)
    est = estimate(core.zoo.get("mobilenet_v2"), "v100-sxm2", batch_size=1)
    assert est.variant == "predicted" and "depthwise_backward" in est.model_params
    bwd = at.dataframe[0].value.set_index("pass").loc["backward", "total ms"]
    assert bwd == pytest.approx(est.totals["backward_s"] * 1e3)
    # MobileNet V2's 17 depthwise convs: each backward part but a cast runs on CUDA cores
    dw = [lw for lw in est.work.layers if lw.work_class == "depthwise_conv"]
    parts = [w for lw, ps in zip(est.work.layers, est._layer_parts("backward")) if lw.work_class == "depthwise_conv"
             for w in ps]
    assert len(dw) == 17 and all(gpu_model.on_cuda_cores(w, est.model_params) for w in parts)


def test_predicted_notes_name_the_stem_conv():
    """The breakdown caption names a network's stem conv (3 input channels) where it runs on CUDA cores: in the
    tensor-core precisions of a predicted estimate, not in fp32."""
    from core.api import estimate
    from ui.text import predicted_notes
    for dtype, named in (("bf16", True), ("mixed", True), ("tf32", True), ("fp32", False)):
        est = estimate(core.zoo.get("resnet18"), "h100-sxm", batch_size=8, dtype=dtype)
        assert est.variant == "predicted"
        text = predicted_notes(est)
        assert ("The convolution conv1, over 3 input channels, runs on CUDA cores" in text) == named, dtype
    # every kernel of the one it names runs at the CUDA-core peak: no tensor-core factor in its efficiency
    est = estimate(core.zoo.get("resnet18"), "h100-sxm", batch_size=8, dtype="bf16")
    names = [lw.node.name for lw in est.work.layers]
    fwd = est._layer_parts("forward")
    assert fwd[names.index("conv1")][0].stem and not fwd[names.index("layer1.0.conv1")][0].stem   # 64 channels


def test_markdown_report_holds_totals_and_rows():
    from ui.text import markdown_report
    md = markdown_report(core.analyze("mnist_cnn"))
    assert "| parameters | 1,199,882 |" in md and core.CONVENTION in md
    # conv2: 64·32·9 + 64 = 18,496 params; 64·24·24·32·9 = 10,616,832 MACs
    assert "| conv2 | conv2d | 1×64×24×24 | 18,496 | 10,616,832 | 21,233,664 |" in md


def test_batch_slider_and_box_stay_in_step(app):
    app.select_slider(key="batch_log").set_value(64).run()
    assert app.number_input(key="batch_size").value == 64
    app.number_input(key="batch_size").set_value(100).run()
    assert app.select_slider(key="batch_log").value == 128        # log2(100) = 6.64 → 2^7


def test_layer_filter_keeps_matching_rows(app):
    app.text_input(key="layer_filter").set_value("conv").run()
    assert list(app.dataframe[0].value["name"]) == ["conv1", "conv2"]


def test_chart_downloads_render_svg_and_png():
    """The SVG/PNG buttons under every chart hand over a real image of that chart (drawn by vl-convert)."""
    import pandas as pd

    from ui.charts import _render, lines_chart
    chart = lines_chart(pd.DataFrame({"batch": [1, 2, 4], "forward ms": [1.0, 1.5, 2.5]}), "batch",
                        ["forward ms"], "ms")
    svg = _render(chart, "svg")
    assert svg.lstrip().startswith("<svg") and "forward ms" in svg        # the legend names the series
    assert _render(chart, "png")[:8] == b"\x89PNG\r\n\x1a\n"                  # the PNG signature


def test_every_chart_helper_builds_a_valid_vega_lite_spec():
    """Pages draw charts as plain Vega-Lite dicts (altair's copies and checks cost more than the drawing); the specs
    are validated here against altair's Vega-Lite schema instead, from real analyses."""
    import altair as alt
    import jsonschema
    import pandas as pd
    from altair.vegalite.v6.schema import load_schema

    from core.api import estimate
    from core.devices import load_devices
    from ui import charts as ch
    from ui.labs import lab2
    from ui.memory_view import timeline_chart

    db = load_devices(user_path=None)
    dev = db.devices["v100-sxm2"]
    est = estimate("resnet18", dev)
    frame = pd.DataFrame({"batch": [1, 2, 4], "a": [1.0, 2.0, 4.0], "b": [0.5, 1.0, float("nan")]})
    across = pd.DataFrame({"network": ["x", "y"], "input": ["3×64×64"] * 2, "latency ms": [1.0, 2.0],
                           "GFLOPs": [0.5, 1.0], "M params": [1.0, 3.0]})
    charts = [ch.roofline_chart(ch.roofline_frame([dev], "fp32"), ch.layer_points(est),
                                {"intensity": 10.0, "flops": 1e12, "label": "net"}),
              ch.roofline_chart(ch.roofline_frame([dev], "fp32"), pd.DataFrame(), order=[dev.name]),
              ch.memory_chart(frame.rename(columns={"a": "training GiB", "b": "inference GiB"}), 16.0),
              ch.lines_chart(frame, "batch", ["a", "b"], "ms", log_y=True),
              ch.lines_chart(frame, "batch", ["a"], "samples/s", unit="count", log_x=False),
              ch.bars_chart(frame.assign(name=["p", "q", "r"]), "name", "a", log=True),
              ch.bars_chart(frame.assign(name=["p", "q", "r"]), "name", "a", "name", unit="s", scale=1e-3),
              ch.scatter_chart(across, "GFLOPs", "forward FLOPs", unit="FLOPs", scale=1e9),
              lab2.throughput_chart(lab2.throughput_table(["mnist_cnn"], [dev])),
              timeline_chart(core.analyze("resnet18", batch_size=2), 16 * 2 ** 30)]
    validator = jsonschema.Draft7Validator(load_schema())
    assert ch.SCHEMA == alt.SCHEMA_URL                 # the version altair writes (and vl-convert draws)

    def views(spec, data=None):
        data = spec.get("data", data)
        return [v for layer in spec["layer"] for v in views(layer, data)] if "layer" in spec else [(spec, data)]

    for chart in charts:
        spec = json.loads(json.dumps(chart, allow_nan=False))     # JSON as the browser gets it: no NaN
        errors = [e.message for e in validator.iter_errors(spec)]
        assert not errors, errors[:3]
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
        for view, data in views(spec):                             # every mark has its data, inline
            assert data and data["values"] and ("encoding" in view), view.get("mark")


def test_batch_norm_breakdown_names_the_channel_fill():
    """A network with batch norm gets the caption on its train-mode kernels (one thread block per channel) with its
    narrowest batch norm's fill of this GPU's SMs; one without batch norm (the default MNIST CNN) does not."""
    from core.api import estimate
    at = AppTest.from_file(ESTIMATES_PAGE, default_timeout=60).run()
    assert not at.exception and not any("thread block per channel" in c.value for c in at.caption)
    at.selectbox(key="model").set_value("resnet18").run()
    assert not at.exception
    est = estimate(core.zoo.get("resnet18"), "v100-sxm2", batch_size=1)
    narrowest = min(lw.node.in_shapes[0][0] for lw in est.work.layers if lw.work_class == "batch_norm")
    # ResNet-18's narrowest batch norm: 64 channels; the V100's 80 SMs: 64 / (⌈64/80⌉ · 80) = 80 %
    assert narrowest == 64 and est.device.sm_count == 80
    assert any("one thread block per channel" in c.value and "64 channels, fill 80% of the 80 SMs" in c.value
               for c in at.caption)
