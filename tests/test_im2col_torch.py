"""``core.work.im2col_conv`` against PyTorch's own choice: a conv that oneDNN runs writes a "convolution" line to
oneDNN's verbose log; one PyTorch runs as im2col + GEMM writes none."""

import pytest
import torch

from core.graph import compile_network
from core.ir import Network, Node
from core.work import im2col_conv, network_work

CASES = [   # (channels, size, kernel (h, w), stride, groups, batch): either side of 20,480 input elements and each rule
    (416, 7, (3, 3), 1, 1, 1), (418, 7, (3, 3), 1, 1, 1), (256, 8, (3, 3), 1, 1, 1), (256, 9, (3, 3), 1, 1, 1),
    (512, 2, (3, 3), 1, 1, 1), (512, 2, (3, 3), 1, 1, 2), (64, 8, (3, 3), 1, 2, 1), (24, 20, (5, 5), 1, 1, 1),
    (24, 20, (3, 5), 1, 1, 1), (64, 13, (1, 1), 2, 1, 1), (128, 28, (3, 3), 2, 1, 1),
]


def onednn_log(capfd, conv, x) -> str:
    """oneDNN's verbose log of one call of ``conv`` on ``x``, after one call unlogged (tests/test_padded_layout.py
    reads it too)."""
    with torch.no_grad():
        conv(x)
        capfd.readouterr()
        with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
            conv(x)
    return capfd.readouterr().out


def _uses_onednn(capfd, c, hw, kernel, stride, groups, batch) -> bool:
    conv = torch.nn.Conv2d(c, c, kernel, stride, (kernel[0] // 2, kernel[1] // 2), groups=groups, bias=False).eval()
    return ",convolution," in onednn_log(capfd, conv, torch.randn(batch, c, hw, hw))


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="this torch build has no oneDNN")
@pytest.mark.parametrize("case", CASES)
def test_the_rule_is_pytorchs(capfd, case):
    c, hw, kernel, stride, groups, batch = case
    net = Network.make("c", {"x": (c, hw, hw)}, [Node.make("conv", "conv2d", "x", out_channels=c, kernel_size=kernel,
                                                           stride=stride, padding=(kernel[0] // 2, kernel[1] // 2),
                                                           groups=groups, bias=False)])
    lw = network_work(compile_network(net), False).layers[0]
    assert im2col_conv(lw, batch) is not _uses_onednn(capfd, *case)
