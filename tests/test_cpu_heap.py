"""The fresh-page model (core.cpu_heap): glibc's malloc by hand-traced sequences, each layer's allocations by rule,
and both against PyTorch itself (minor page faults counted by getrusage on Linux)."""

import sys

import pytest

from core.cpu_heap import Heap, fresh_bytes, layer_allocations
from core.graph import compile_network
from core.ir import Network, Node

KIB, MIB = 1024, 2 ** 20


def test_a_block_at_the_mmap_threshold_is_fresh_until_freeing_it_raises_the_threshold():
    """200 KiB = 204,800 B (+16 B header ≥ 128 KiB): mmap-ed, fresh. Freed, its chunk of ⌈204,816 / 4096⌉ pages =
    208,896 B raises the threshold to 208,896 and the trim threshold to 417,792. The second 200 KiB fits under it:
    carved from the heap's top, all 204,800 B fresh (nothing touched yet). Freed, the top holds 204,800 + 128 KiB pad
    = 335,872 B < 417,792: no trim, so the third one reuses touched pages: 0 fresh. Total 2 × 204,800 = 409,600."""
    h = Heap(32 * MIB)
    h.free(h.malloc(200 * KIB))
    assert (h.fresh, h.mmap_threshold, h.trim_threshold) == (204_800, 208_896, 417_792)
    h.free(h.malloc(200 * KIB))
    h.free(h.malloc(200 * KIB))
    assert h.fresh == 409_600


def test_blocks_above_the_largest_threshold_are_fresh_every_time():
    """mmap_max 1 MiB: a 2 MiB block's chunk (2,101,248 B) is above it, so freeing it leaves the threshold at 128 KiB
    and every 2 MiB block is mmap-ed again: 3 × 2,097,152 = 6,291,456 fresh."""
    h = Heap(1 * MIB)
    for _ in range(3):
        h.free(h.malloc(2 * MIB))
    assert h.mmap_threshold == 128 * KIB
    assert h.fresh == 6_291_456


def test_the_heap_is_trimmed_when_its_free_top_reaches_the_trim_threshold():
    """A freed 1 MiB mmap sets thresholds 1,052,672 / 2,105,344. Two 1 MiB heap blocks: 2,097,152 fresh, the heap
    end at 2,097,152 + 131,072 pad = 2,228,224. Freeing the upper one leaves a free top of 1,179,648 (< 2,105,344);
    freeing the lower one makes it 2,228,224 ≥ 2,105,344: trimmed to the 131,072 pad. A new 1 MiB block then
    faults 1,048,576 − 131,072 = 917,504. Total 1,048,576 + 2,097,152 + 917,504 = 4,063,232."""
    h = Heap(32 * MIB)
    h.free(h.malloc(MIB))
    assert (h.mmap_threshold, h.trim_threshold) == (1_052_672, 2_105_344)
    b, c = h.malloc(MIB), h.malloc(MIB)
    h.free(c)
    assert h.mapped == 2_228_224
    h.free(b)
    assert h.mapped == 131_072
    h.malloc(MIB)
    assert h.fresh == 4_063_232


def test_only_a_free_of_at_least_64_kib_may_trim():
    """Start thresholds (128 KiB). 100 KiB then 20 KiB from the heap: its end at 122,880 + 131,072 pad = 253,952.
    Freeing the 20 KiB block leaves 253,952 − 102,400 = 151,552 B free at the top, above 131,072, but a 20,480 B free
    does not trim; freeing the 100 KiB block (102,400 B) does: back to the 131,072 pad."""
    h = Heap(32 * MIB)
    a, b = h.malloc(100 * KIB), h.malloc(20 * KIB)
    h.free(b)
    assert h.mapped == 253_952
    h.free(a)
    assert h.mapped == 131_072


def test_freed_neighbours_coalesce_and_are_reused_best_fit():
    """64 KiB + 32 KiB + 64 KiB (all under 128 KiB: heap) = 163,840 fresh. Freeing the first two merges them into
    one 98,304 B chunk, which a 96 KiB request takes whole: no fresh bytes, the top unchanged."""
    h = Heap(32 * MIB)
    a, b, _ = h.malloc(64 * KIB), h.malloc(32 * KIB), h.malloc(64 * KIB)
    h.free(a)
    h.free(b)
    top = h.top
    h.malloc(96 * KIB)
    assert (h.fresh, h.top) == (163_840, top)


def _node(op, shape, batch=1, **attrs):
    return compile_network(Network.make(op, {"x": shape}, [Node.make(op, op, "x", **attrs)])).nodes[0]


def test_each_layer_allocates_what_onednn_and_aten_do():
    """fp32, batch 2. A 3×3 conv 16→32 on 16×8×8: input copy 16·8·8·2·4 = 8,192 B, weight copy 32·16·9·4 =
    18,432 B, output copy 32·8·8·2·4 = 16,384 B; the first two are freed before the output is allocated, the output
    copy after. A stem (3 input channels) has no input copy. A 1×1 conv runs on the plain layout up to batch 8 (its
    output only) and on the blocked one above. Max pooling 2×2 on 4×8×8: output 4·4·4·2·4 = 512 B, int64 indices
    4·4·4·2·8 = 1,024 B. An in-place ReLU allocates nothing, a plain one (nn.ReLU()) its output 4·8·8·2·4 = 2,048 B,
    as does a BatchNorm; an in-place add (out += identity) nothing."""
    conv = _node("conv2d", (16, 8, 8), out_channels=32, kernel_size=3, padding=1, bias=False)
    assert layer_allocations(conv, 2, 4, 4) == ((("alloc", 8192), ("alloc", 18432), ("alloc", 16384), ("free", 1),
                                                ("free", 0), ("out",), ("free", 2)), 16384)
    stem = _node("conv2d", (3, 8, 8), out_channels=32, kernel_size=3, padding=1, bias=False)
    assert layer_allocations(stem, 2, 4, 4) == ((("alloc", 32 * 3 * 9 * 4), ("alloc", 16384), ("free", 0), ("out",),
                                                ("free", 1)), 16384)
    pointwise = _node("conv2d", (16, 8, 8), out_channels=32, kernel_size=1, bias=False)
    assert layer_allocations(pointwise, 8, 4, 4) == ((("out",),), 32 * 64 * 8 * 4)
    assert layer_allocations(pointwise, 9, 4, 4)[0][0] == ("alloc", 16 * 64 * 9 * 4)
    pool = _node("max_pool2d", (4, 8, 8), kernel_size=2)
    assert layer_allocations(pool, 2, 4, 4) == ((("out",), ("alloc", 1024), ("free", 0)), 512)
    assert layer_allocations(_node("relu", (4, 8, 8), inplace=True), 2, 4, 4) == ((), 0)
    assert layer_allocations(_node("relu", (4, 8, 8)), 2, 4, 4) == ((("out",),), 2048)
    assert layer_allocations(_node("add", (4, 8, 8), scalar=1.0, inplace=True), 2, 4, 4) == ((), 0)
    assert layer_allocations(_node("batch_norm", (4, 8, 8)), 2, 4, 4) == ((("out",),), 2048)


def _big_net():
    """conv 3×3 64→64, BatchNorm, in-place ReLU, 1×1 conv 64→64 on 64×384×384: every tensor 64·384·384·4 =
    37,748,736 B, above glibc's largest mmap threshold (32 MiB), so every one is mmap-ed and fresh on every pass."""
    return Network.make("big", {"x": (64, 384, 384)}, [
        Node.make("conv", "conv2d", "x", out_channels=64, kernel_size=3, padding=1, bias=False),
        Node.make("bn", "batch_norm", "conv"), Node.make("relu", "relu", "bn", inplace=True),
        Node.make("pw", "conv2d", "relu", out_channels=64, kernel_size=1, bias=False)])


def test_fresh_bytes_of_a_network_above_the_largest_threshold():
    """Batch 1, T = 37,748,736 B: conv: input, output copies and output 3T (the 147,456 B weight copy comes from the
    heap); BatchNorm: T; ReLU: in place; 1×1 at batch 1: its output T. 5T = 188,743,680 B fresh per pass."""
    per_node = fresh_bytes(compile_network(_big_net()), 1, 4, 4, 32 * MIB)
    assert per_node == (3 * 37_748_736, 37_748_736, 0, 37_748_736)


def _faults_per_layer(net, x, passes: int) -> list[int]:
    """Bytes of minor page faults each layer of ``net`` (an ``nn.Sequential``) takes in the last of ``passes``
    forward passes on ``x``, at 1 thread."""
    import os
    import resource

    import torch

    from core.bridge.timing import cpu_threads

    counted = []

    def pre(*_):
        counted.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)

    for m in net:
        m.register_forward_pre_hook(pre)
    with cpu_threads(1), torch.no_grad():
        for _ in range(passes):
            counted.clear()
            net(x)
            pre()
    page = os.sysconf("SC_PAGE_SIZE")
    return [(b - a) * page for a, b in zip(counted, counted[1:])]


def _torch_big_net():
    from torch import nn

    return nn.Sequential(nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                         nn.Conv2d(64, 64, 1, bias=False)).eval()


@pytest.mark.torch      # imports torch in its body
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts glibc's page faults (Linux)")
def test_fresh_bytes_match_the_page_faults_pytorch_takes():
    """The same network in PyTorch on this CPU: the minor page faults of a warm forward pass × the page size are the
    bytes written to fresh pages. Each layer's count lands within 2 % of the model's (the few small blocks it leaves
    out: the 147 KiB weight copy and tensor metadata)."""
    import torch

    measured = _faults_per_layer(_torch_big_net(), torch.randn(1, 64, 384, 384), 3)
    model = fresh_bytes(compile_network(_big_net()), 1, 4, 4, 32 * MIB)
    for got, want in zip(measured, model):
        assert got == pytest.approx(want, rel=0.02, abs=2 * MIB)


def _two_relus() -> Network:
    """x (1024, 1024) → ReLU → ReLU: two outputs of B = 1,048,576 × 4 = 4,194,304 B, both live after the second."""
    return Network.make("two", {"x": (1024, 1024)}, [Node.make("r1", "relu", "x"), Node.make("r2", "relu", "r1")])


def test_a_fresh_process_trims_what_a_warm_one_keeps():
    """Fresh (thresholds 128 KiB): pass 1 mmaps both blocks; freeing r1's chunk (⌈4,194,320 / 4096⌉ pages =
    4,198,400 B) raises the thresholds to 4,198,400 / 8,396,800. From pass 2 both come from the heap; freeing both
    at the pass's end leaves a free top of 2B + the 131,072 B pad = 8,519,680 ≥ 8,396,800: trimmed to the pad. So
    every later pass faults r1's B − 131,072 = 4,063,232 and r2's 4,194,304 B again.
    Warm (thresholds at the 32 MiB ceiling, 64 MiB trim): pass 1 carves both from the heap, 8,519,680 < 64 MiB is
    never trimmed, and passes 2–4 reuse the touched pages: 0 fresh."""
    compiled = compile_network(_two_relus())
    assert fresh_bytes(compiled, 1, 4, 4, 32 * MIB) == (4_063_232, 4_194_304)
    assert fresh_bytes(compiled, 1, 4, 4, 32 * MIB, warm=True) == (0, 0)
    h = Heap(32 * MIB, warm=True)
    assert (h.mmap_threshold, h.trim_threshold) == (32 * MIB, 64 * MIB)
