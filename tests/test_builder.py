"""The Network page's layer table: rows out of a sequential network and back, edits, and errors naming their row."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import core
from ui import builder

MNIST = core.load_network("mnist_cnn")
PAGE = str(Path(__file__).resolve().parent.parent / "views" / "network.py")


def _rows():
    return builder.rows(MNIST)


@pytest.mark.parametrize("name", [n for n in core.builtin_names() if builder.is_chain(core.load_network(n))])
def test_every_sequential_zoo_network_round_trips_through_the_table(name):
    net = core.load_network(name)
    assert builder.network_from_rows(builder.rows(net), net) == net


def test_only_sequential_networks_are_chains():
    assert builder.is_chain(MNIST) and builder.is_chain(core.load_network("vgg16"))
    assert not builder.is_chain(core.load_network("resnet18"))        # residual adds
    assert not builder.is_chain(core.load_network("googlenet"))       # concatenations


def test_rows_show_shapes_params_and_macs_per_sample():
    rows = {r["layer"]: r for r in builder.rows(MNIST, core.analyze("mnist_cnn", batch_size=4))}
    # conv2: 64 outputs of 24×24 (26 − 3 + 1); 64·32·9 + 64 = 18,496 params; 64·24·24·32·9 = 10,616,832 MACs
    assert rows["conv2"]["output"] == "64×24×24" and rows["conv2"]["params"] == 18_496
    assert rows["conv2"]["MACs"] == 10_616_832                       # per sample, whatever the batch
    assert rows["dropout1"]["other"] == "p=0.25" and rows["conv2"]["channels"] == 64


def test_widening_conv2_in_the_table_follows_into_fc1():
    rows = _rows()
    rows[2]["channels"] = 128
    net = builder.network_from_rows(rows, MNIST)
    # conv2 32→128: 128·32·9 + 128 = 36,992; fc1 (128·12·12 = 18,432)·128 + 128 = 2,359,424; the rest as before
    # 320 + 36,992 + 2,359,424 + 1,290 = 2,398,026
    assert core.analyze(net).totals["params"] == 2_398_026


def test_add_remove_and_reorder_rows():
    rows = _rows()
    rows.insert(8, {"#": 8.5, "layer": "bn_fc", "op": "batch_norm"})    # after fc1, typed with no attributes
    del rows[5]                                                           # dropout1 removed
    rows[1]["#"] = 4.5                                                    # relu moved after relu_1 (#4)
    net = builder.network_from_rows(rows, MNIST)
    names = [n.name for n in net.nodes]
    assert names[:5] == ["conv1", "conv2", "relu_1", "relu", "max_pool2d"] and "dropout1" not in names
    assert names[names.index("fc1") + 1] == "bn_fc"
    # batch norm over 128 features: 2·128 = 256 trainable parameters on top of the 1,199,882
    assert core.analyze(net).totals["params"] == 1_199_882 + 256


def test_a_new_row_of_a_layer_with_required_fields_starts_from_defaults():
    rows = _rows() + [{"op": "linear"}]
    last = builder.network_from_rows(rows, MNIST).nodes[-1]
    assert last.op == "linear" and last.get("out_features") == 10 and last.name == "linear_13"


@pytest.mark.parametrize("row, column, value, words", [
    (2, "kernel", 30, ["row 3 · conv2", "kernel_size", "larger than its padded input 26×26"]),
    (1, "kernel", 3, ["row 2 · relu", "relu has no kernel"]),
    (5, "other", "p=2", ["row 6 · dropout1", "'p'", "probability"]),
    (5, "other", "p", ["row 6 · dropout1", "not name=value"]),
    (3, "op", None, ["row 4", "choose an op"]),
    (4, "layer", "conv1", ["row 5 · conv1", "already used by row 1 · conv1"]),
    (7, "op", "conv2d", ["row 8 · fc1"]),                 # a conv after flatten: the shape check names the row
])
def test_bad_rows_are_refused_naming_row_layer_and_field(row, column, value, words):
    rows = _rows()
    rows[row][column] = value
    with pytest.raises(core.CalcError) as err:
        builder.network_from_rows(rows, MNIST)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_changed_ignores_shown_columns_and_float_cells():
    rows = builder.rows(MNIST, core.analyze("mnist_cnn"))
    as_edited = [{**r, "#": float(r["#"]), "output": "?"} for r in rows]   # the editor gives floats back
    assert not builder.changed(as_edited, rows)
    as_edited[2]["channels"] = 65.0
    assert builder.changed(as_edited, rows)


def test_network_page_builds_a_new_network_that_every_page_can_use():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    at.button(key="new_network").click().run()
    assert not at.exception and at.selectbox(key="model").value == "custom"
    # conv1 8·1·9 + 8 = 80; after 3×3 conv and 2×2 pool: 8·13·13 = 1,352 features; fc 1,352·10 + 10 = 13,530
    assert "13,610 parameters" in at.caption[0].value
    assert "Started a new network" in at.success[0].value


def test_network_page_shows_the_coupled_group_for_a_residual_network():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.selectbox(key="model").set_value("resnet18").run()
    at.selectbox(key="edit_layer").set_value("layer1.0.conv2").run()
    at.selectbox(key="edit_field").set_value("out_channels").run()
    assert not at.exception
    group = next(c.value for c in at.caption if c.value.startswith("Coupled group"))
    # layer1.0.conv2's output is added to the stem's (maxpool of conv1) and feeds layer1.1: all share 64 channels
    assert "conv1" in group and "layer1.1.conv2" in group and "layer2.0.conv1" not in group
    assert any("has branches" in i.value for i in at.info)
