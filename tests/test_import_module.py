"""Custom nn.Modules into the IR: functional calls, views, grouped convs; from the API and the CLI."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

import core
from core.bridge.fx_import import from_module
from core.bridge.to_torch import to_module, to_source
from core.registry import REGISTRY, Cost, Importer, OpRule, TorchExpr, numel, register

ROOT = Path(__file__).resolve().parent.parent


class BasicMnist(nn.Module):
    """The older PyTorch-examples MNIST net: functional pooling and a view(-1, 320)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5, groups=2)
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.view(-1, 320)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class Branchy(nn.Module):
    """A residual block with a concat, a channel split (chunk), a mean and a slice."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 8, 3, padding=1)
        self.b = nn.Conv2d(4, 8, 1)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        y = torch.relu(self.a(x)) + self.b(x)
        left, right = y.chunk(2, dim=1)
        z = torch.cat([right, left], dim=1)[:, :, 1:]
        return self.head(z.mean((2, 3)))


@pytest.mark.parametrize("model, shape", [(BasicMnist, (1, 28, 28)), (Branchy, (4, 9, 9))])
def test_custom_modules_match_torch(model, shape):
    m = model().eval()
    result = from_module(m, shape)
    assert result.unsupported == ()
    r = core.analyze(m, input_shape=shape, batch_size=3)
    x = torch.randn(3, *shape)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        out = m(x)
    assert r.layers[-1].output_shape == tuple(out.shape)
    assert r.totals["params"] == sum(p.numel() for p in m.parameters())
    assert 2 * r.totals["macs"] == counter.get_total_flops()


def test_basic_mnist_by_hand():
    r = core.analyze(BasicMnist(), input_shape=(1, 28, 28))
    # conv1 10·24·24·(1·5·5) = 144,000; conv2 (groups 2) 20·8·8·(5·5·5) = 160,000; fc1 320·50 = 16,000; fc2 500
    assert r.totals["macs"] == 144_000 + 160_000 + 16_000 + 500
    # 10·25 + 10 = 260; 20·5·25 + 20 = 2,520; 320·50 + 50 = 16,050; 50·10 + 10 = 510
    assert r.totals["params"] == 260 + 2_520 + 16_050 + 510
    assert [l.op for l in r.layers][:3] == ["conv2d", "max_pool2d", "relu"]
    assert r.layer("view").output_shape == (1, 320)               # x.view(-1, 320): the batch stays first


def test_modules_without_input_shape_or_untraceable_forward_say_why():
    with pytest.raises(core.NetworkError, match="input_shape"):
        core.analyze(BasicMnist())

    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:            # control flow on values cannot be traced symbolically
                return x
            return -x
    with pytest.raises(core.NetworkError) as err:
        core.analyze(DataDependent(), input_shape=(3, 4, 4))
    assert "DataDependent" in str(err.value) and "trace" in str(err.value)
    assert "if x.sum() > 0:" in str(err.value)        # the failing line of the user's forward is named


def test_unknown_ops_become_visible_opaque_nodes():
    class Cum(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=1)
    result = from_module(Cum(), (4, 5))
    assert [n.op for n in result.network.nodes] == ["opaque"]
    assert result.unsupported and "cumsum" in result.warnings[0] and "NOT counted" in result.warnings[0]


def test_meta_modules_allocate_nothing():
    with torch.device("meta"):
        big = nn.Sequential(nn.Linear(20_000, 20_000), nn.ReLU())          # 1.6 GB of fp32 weights, never made
    r = core.analyze(big, input_shape=(20_000,))
    assert r.totals["params"] == 20_000 * 20_000 + 20_000


def test_cli_analyzes_a_python_file(tmp_path):
    f = tmp_path / "net.py"
    f.write_text(textwrap.dedent('''
        import torch.nn as nn, torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 4, 3)
                self.fc = nn.Linear(4 * 26 * 26, 10)
            def forward(self, x):
                return self.fc(F.relu(self.conv(x)).view(-1, 4 * 26 * 26))
    '''))
    p = subprocess.run([sys.executable, "-m", "core", "analyze", f"{f}:Net", "--input", "1x28x28", "--json"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import json
    out = json.loads(p.stdout)
    # conv 4·26·26·9 = 24,336 MACs; fc 2,704·10 = 27,040
    assert out["totals"]["macs"] == 24_336 + 27_040
    bad = subprocess.run([sys.executable, "-m", "core", "analyze", f"{f}:Missing", "--input", "1x28x28"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Missing" in bad.stderr and "Traceback" not in bad.stderr


# == in place ======================================================================================================

class InPlace(nn.Module):
    """Every way torch writes an op in place, and the plain forms that do not."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.ReLU(inplace=True)
        self.plain = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 1)
        self.swish = nn.Hardswish(inplace=True)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        y = self.plain(self.act(self.conv(x)))
        y = torch.relu_(F.relu(F.relu(y, inplace=True)))
        y = y.relu_().relu()
        out = self.conv2(y)
        out += y
        out = out.add_(y)         # fx follows values, not mutation: an in-place method's result must be used
        out *= 2.0
        out = out + y
        return self.gate(self.swish(out))


def test_in_place_calls_give_in_place_nodes():
    m = InPlace().eval()
    net = from_module(m, (3, 5, 5)).network
    assert [(n.op, bool(n.get("inplace"))) for n in net.nodes] == [
        ("conv2d", False), ("relu", True), ("relu", False),                 # nn.ReLU(inplace=True), nn.ReLU()
        ("relu", True), ("relu", False), ("relu", True),                    # F.relu(inplace=True), F.relu, relu_
        ("relu", True), ("relu", False), ("conv2d", False),                 # x.relu_(), x.relu()
        ("add", True), ("add", True), ("mul", True), ("add", False),        # +=, add_, *=, +
        ("hardswish", True), ("hardsigmoid", False)]
    assert [n.name for n in net.nodes if n.op in ("add", "mul")] == ["add", "add_", "mul", "add_1"]
    # converted back, it computes what the module computes
    back = to_module(net).eval()
    back.load_state_dict(m.state_dict())
    x = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        assert torch.allclose(back(x.clone()), m(x.clone()), atol=1e-6)


# == an op added in a test alone ===================================================================================

@pytest.fixture
def toy_square():
    """A toy op, ``torch.square``, registered here and nowhere else: its rule says how it imports and how it becomes
    torch again. Removed from the registry afterwards."""
    def square(c, n):
        return c.emit(c.scoped(n), "toy_square", [c.ref(n.args[0])])

    rule = register(OpRule(
        "toy_square", "elementwise", (), shape=lambda ctx: ctx.x,
        cost=lambda ctx: Cost(flops=numel(ctx.x), bwd_input=(2 * numel(ctx.x),)),     # x·x; backward 2·x·g
        formula=lambda ctx, batch: [], channel="pass", torch="torch.square", work="elementwise",
        to_torch=lambda n, xs: TorchExpr(f"torch.square({xs[0]})"),
        imports=(Importer("function", "torch.square", square), Importer("method", "square", square))))
    yield rule
    del REGISTRY["toy_square"]


def test_an_op_added_in_a_test_alone_imports_and_converts_back(toy_square):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(torch.square(x)).square()

    m = Net().eval()
    result = from_module(m, (4,))
    assert result.unsupported == ()
    assert [(n.name, n.op) for n in result.network.nodes] == [("square", "toy_square"), ("fc", "linear"),
                                                              ("square_1", "toy_square")]
    # 4 + 3 squares and 4·3 = 12 multiply-adds per sample, at batch 2
    assert core.analyze(result.network, batch_size=2).totals["flops"] == 2 * (4 + 2 * 12 + 3)
    x = torch.randn(2, 4)
    scope: dict = {}
    exec(to_source(result.network), scope)
    for back in (to_module(result.network), scope["model"]):
        back.load_state_dict(m.state_dict())
        with torch.no_grad():
            assert torch.allclose(back(x), m(x), atol=1e-6)
