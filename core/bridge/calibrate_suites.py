"""What calibration times: the micro-benchmark suites, and the machine that runs them (torch on one device).

``_case_specs``: per class of work, a tiny layer (its time is the class's fixed cost per call) and a suite of the
layer shapes common CNNs are made of, each at two batches; ``HELD_OUT`` and ``GRAIN_FIT``: the whole networks of the
self-check and of the parallel-grain fit; ``UPDATE_CASES``: the optimizer steps. ``_TorchMachine`` times them (GEMM,
STREAM copy and triad, fresh-page writes, layers forward and backward, optimizer steps, networks) and returns raw run
times, each benchmark one untimed warm-up and at least ``MIN_RUNS`` timed runs (``_bench``); the fitting is the
caller's, so a test gives ``core.bridge.calibrate._calibrate`` a fake machine instead. What each benchmark measures,
and why: docs/cpu-calibration.md.
"""

from __future__ import annotations

import os
import platform
import re
import statistics
import time
from typing import Any

from ..errors import Cancelled
from .measuring import TORCH_DTYPES, Clock, cancelled
from .noise_gate import Gate

# the peaks torch.mm measures: live timing's formats, plus tf32 (fp32 storage, tensor-core matmul switched on)
_MM_DTYPES = {**TORCH_DTYPES, "tf32": TORCH_DTYPES["fp32"]}

MIN_RUNS = 5                  # timed runs of every benchmark at least, after one warm-up (an IQR needs a few)
# classes whose backward suite also runs at its second batch (8×): a depthwise conv's backward rate falls with the
# batch (docs/cpu-calibration.md, "Notes from the code"); the other classes keep the budget's first batch
BACKWARD_BOTH_BATCHES = ("depthwise_conv", "depthwise_conv_large")
# classes timed in the training passes only (their suite at its first batch, backward and train-mode forward): their
# inference forward takes their fallback's figures (docs/cpu-calibration.md, "Pointwise convs"). A 1×1 stride-1
# conv's inference forward at batch ≤ 8 runs on oneDNN's plain layout, mostly memory traffic that STREAM does not
# describe: its figure swung 0.54–0.92 between calibrations with the bandwidth they read (60 against 38 GB/s), and
# at 0.54–0.62 put ResNet-50/101 and ResNeXt-50's forwards +20…+51 % (runs 15, 17, 18), where conv's 3×3 figure
# predicted them within the runs' noise
TRAINING_ONLY = ("pointwise_conv",)
# the self-check's networks: (built-in name, per-sample input shape or None for the network's own), batch 1
HELD_OUT = (("mnist_cnn", None), ("squeezenet1_0", (3, 64, 64)), ("resnet18", (3, 64, 64)))
# parallel_grain and class_grain are fitted on how much these whole networks at batch 1 gain from the threads (timed
# at the calibrated count and at one): nine of the zoo's CNNs, none the self-check's nor any that
# benchmarks/bench_predict.py judges the model on. Seven of depthwise or grouped convs on their own input
# (EfficientNet-B2 at 112×112, so that a sample stays short) and two of dense convs on small inputs, where their
# layers are small too. A network whose time is its weights' reads gains little at any grain (the VGGs at 32–64 px:
# ×1.2–1.3; the grain's rule has every layer split or not), so none is here
GRAIN_FIT = (("shufflenet_v2_x0_5", None), ("shufflenet_v2_x1_5", None), ("mnasnet0_5", None), ("mnasnet0_75", None),
             ("regnet_x_800mf", None), ("regnet_y_800mf", None), ("efficientnet_b2", (3, 112, 112)),
             ("resnet152", (3, 64, 64)), ("resnet101", (3, 32, 32)))
# the samples of GRAIN_FIT's gain, spread over the calibration (between its stages): on an AMD EPYC VM small networks
# at 2 threads switch between two speeds every 10–30 s (benchmarks/thread_states.py), one sample sees one of them
GRAIN_SAMPLES = 5
# the optimizer step's per-tensor cost: SGD with momentum over many small tensors and over few large ones of the
# same total size, (tensors, elements each); the difference over the difference in tensors is the cost of one
UPDATE_CASES = ((128, 1024), (2, 65536))
# bytes read and written between a suite layer's forward and its timed backward: in a network the rest of the
# forward and the backward after it run in between, so a layer's saved tensors and weights are no longer in the
# nearest caches (docs/cpu-calibration.md: what it changed)
COLD_BYTES = 64 * 2 ** 20


def _torch_dtype(name: str, torch):
    return getattr(torch, _MM_DTYPES[name])


# == the machine: torch on one device =============================================================================

def _minor_faults() -> int | None:
    """This process's minor page faults so far (pages the kernel mapped on first touch); None without getrusage."""
    try:
        import resource
    except ImportError:         # not on Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 4096


def _bench(fn, clock: Clock, budget: float, cancel: Any = None, max_runs: int = 200, faults: bool = False,
           min_runs: int = MIN_RUNS, warmup: int = 1, setup=None) -> tuple[list[float], list[int]]:
    """(run times, bytes each run wrote to fresh pages) of ``fn``: ``warmup`` untimed runs, then runs until
    ``budget`` seconds have passed and at least ``min_runs`` ran. Fresh bytes are the run's minor page faults × the
    page size with ``faults`` (0 where they cannot be counted, or without ``faults``). ``setup``, untimed, before
    every run (a backward's forward, an optimizer step's gradients)."""
    for _ in range(warmup):
        if setup is not None:
            setup()
        fn()
    end = time.perf_counter() + budget
    times, fresh = [], []
    page = _page_size()
    for k in range(max_runs):
        if setup is not None:
            setup()
        before = _minor_faults() if faults else None
        with clock():
            fn()
        after = _minor_faults() if before is not None else None
        times.append(max(clock.last, 1e-9))
        fresh.append((after - before) * page if after is not None else 0)
        if k + 1 >= min_runs and time.perf_counter() >= end:
            break
        if cancelled(cancel):
            raise Cancelled("calibration cancelled")
    return times, fresh


def _case_specs(gpu: bool) -> dict:
    """op class → [(op, per-sample input shape, batch, attrs)]: the first of each class is a tiny layer whose
    arithmetic and memory traffic take nanoseconds (its time is the class's fixed cost per call); the others are a
    suite of the shapes common CNNs are made of (ResNet/VGG 3×3 stages, bottleneck 1×1s, stems, small
    Inception/SqueezeNet branches; MobileNet/EfficientNet depthwise and ResNeXt grouped convs; stem, branch and
    global pools; classifier heads), so one class figure stands for a network's mix rather than for one favourable
    layer. Each suite layer runs at batch ``nb`` and again at 8 × ``nb``: a CPU's caches hold one image's tensors
    but not a batch's, and a network is run at either."""
    nb = 16 if gpu else 1

    def conv(cin, cout, k, hw, stride=1, groups=1, batch=nb):
        return ("conv2d", (cin, hw, hw), batch, dict(out_channels=cout, kernel_size=k, stride=stride, padding=k // 2,
                                                      groups=groups, bias=False))

    def pool(kind, c, hw, k, stride, pad=0, ceil=False):
        return (kind, (c, hw, hw), nb, dict(kernel_size=k, stride=stride, padding=pad, ceil_mode=ceil))

    def linear(fin, fout, batch):
        return ("linear", (fin,), batch, dict(out_features=fout, bias=False))

    def both(cases):
        return cases[:1] + [(op, shape, b2, attrs) for op, shape, b, attrs in cases[1:] for b2 in (b, 8 * b)]

    # conv's and pointwise_conv's tiny layers run on oneDNN, as their layers in a network do: at batch 1 PyTorch
    # hands a conv of 64 input elements to its im2col path, whose fixed cost per call was a fifth of oneDNN's on an
    # AMD EPYC (12 against ~60 µs). That path (im2col_conv) has its tiny layer only: its efficiencies are conv's, its
    # weight rate its own (_weight_probes; docs/cpu-calibration.md, "Two paths for a conv at batch 1")
    specs = {
        "conv": [conv(4, 4, 3, 4, batch=2),
                 conv(3, 64, 7, 224, stride=2), conv(64, 64, 3, 56), conv(128, 128, 3, 28), conv(256, 256, 3, 14),
                 conv(512, 512, 3, 7), conv(16, 64, 3, 55)],
        # 1×1 stride-1 convs: ResNet-50's bottleneck reduce and expand at three stages, an inverted residual's expand
        # (MobileNet V2 at 56×56) and project (EfficientNet's last stage)
        "pointwise_conv": [conv(4, 4, 1, 4, batch=2),
                           conv(256, 64, 1, 56), conv(64, 256, 1, 56), conv(512, 128, 1, 28), conv(1024, 256, 1, 14),
                           conv(24, 144, 1, 56), conv(1152, 192, 1, 7)],
        "im2col_conv": [conv(4, 4, 3, 4, batch=1)],
        # ResNeXt-50 32×4d's 3×3 stages (32 groups) and a RegNet-X block (groups of 16 channels)
        "grouped_conv": [conv(8, 8, 3, 4, groups=2, batch=1),
                         conv(128, 128, 3, 56, groups=32), conv(256, 256, 3, 28, groups=32),
                         conv(512, 512, 3, 14, groups=32), conv(160, 160, 3, 14, groups=10)],
        # MobileNet V2/V3 and EfficientNet depthwise 3×3, stride 1 and 2 (none whose input at 8× the batch passes
        # glibc's 32 MiB mmap ceiling: its blocked copy would be fresh pages every call, and the fit's page-fault
        # estimate would then decide the class; docs/cpu-calibration.md, "Suites that the page faults decided")
        "depthwise_conv": [conv(4, 4, 3, 4, groups=4, batch=1),
                           conv(32, 32, 3, 112, groups=32), conv(144, 144, 3, 56, stride=2, groups=144),
                           conv(192, 192, 3, 28, groups=192), conv(960, 960, 3, 7, groups=960),
                           conv(144, 144, 3, 56, groups=144)],
        # EfficientNet's and MNASNet's depthwise 5×5 (stride 1 and 2), ConvNeXt's 7×7
        "depthwise_conv_large": [conv(4, 4, 5, 4, groups=4, batch=1),
                                 conv(144, 144, 5, 56, stride=2, groups=144), conv(240, 240, 5, 14, groups=240),
                                 conv(480, 480, 5, 14, groups=480), conv(672, 672, 5, 7, groups=672),
                                 conv(96, 96, 7, 56, groups=96), conv(384, 384, 7, 14, groups=384)],
        # a GEMM of 64 rows, classifier heads (their weights read: _weight_probes) and pointwise MLPs over every
        # position of a feature map (ConvNeXt's 4× expansion at 28×28 and 14×14), which run near the GEMM peak
        "linear": [linear(4, 4, 1), linear(1024, 1024, 64 * nb), linear(2048, 1000, nb), linear(4096, 4096, nb),
                   linear(192, 768, 784 * nb), linear(1536, 384, 196 * nb)],
        "pool": [pool("max_pool2d", 4, 4, 2, 2),
                 pool("max_pool2d", 64, 112, 3, 2, 1), pool("max_pool2d", 192, 28, 3, 1, 1),
                 pool("max_pool2d", 96, 109, 3, 2, ceil=True), pool("avg_pool2d", 288, 35, 3, 1, 1),
                 pool("max_pool2d", 128, 112, 2, 2)],
        # ResNet's stem and stage BatchNorms, MobileNet V2's expanded ones (inference: eval mode; the training
        # forward and backward: train mode, batch statistics)
        "batch_norm": [("batch_norm", (4, 4, 4), 1, {}),
                       ("batch_norm", (64, 112, 112), nb, {}), ("batch_norm", (128, 56, 56), nb, {}),
                       ("batch_norm", (144, 56, 56), nb, {}), ("batch_norm", (512, 7, 7), nb, {})],
        "elementwise": [("relu", (4, 4, 4), 1, {}),
                        ("relu", (64, 112, 112), nb, {}),
                        ("silu", (144, 56, 56), nb, {}), ("hardswish", (72, 56, 56), nb, {}),
                        ("adaptive_avg_pool2d", (2048, 7, 7), nb, dict(output_size=1)),
                        ("adaptive_avg_pool2d", (240, 28, 28), nb, dict(output_size=1))],
    }
    return {k: v if k in TRAINING_ONLY else both(v) for k, v in specs.items() if not (gpu and k == "im2col_conv")}


def _class_cases(gpu: bool) -> dict:
    """op class → [(IR network of one layer, batch, attrs)] for ``_case_specs``."""
    from ..ir import Network, Node

    return {cls: [(Network.make(op, {"x": shape}, [Node.make(op, op, "x", **attrs)]), batch, attrs)
                  for op, shape, batch, attrs in cases] for cls, cases in _case_specs(gpu).items()}


def _weight_probes() -> dict:
    """class → (IR network of one layer, batch, attrs) whose weights are a large part of its traffic and too large
    for a cache, at batch 1: a ResNet's last-stage 3×3 conv (512 channels, 9.4 MB of fp32 weights) at 7×7, as
    oneDNN runs it, and at 2×2, where PyTorch runs it as im2col + GEMM ("im2col_conv": ``core.work.im2col_conv``),
    and a classifier's 4096 × 4096 linear layer (67 MB). Their time beyond compute, activations and the per-call
    cost is how fast the class reads its weights (``calibrate_fit._weight_bandwidths``)."""
    from ..ir import Network, Node

    def conv(hw):
        return ("conv2d", (512, hw, hw), dict(out_channels=512, kernel_size=3, stride=1, padding=1, groups=1,
                                               bias=False))

    cases = {"conv": conv(7), "im2col_conv": conv(2),
             "linear": ("linear", (4096,), dict(out_features=4096, bias=False))}
    return {cls: (Network.make(op, {"x": shape}, [Node.make(op, op, "x", **attrs)]), 1, attrs)
            for cls, (op, shape, attrs) in cases.items()}


def _padded_probes() -> tuple:
    """((IR network, attrs), …) of two depthwise 3×3 convs at 28×28, batch 1, of 63 and 64 channels: oneDNN pads 63
    channels to 64 (in blocks of 16 or 8) and computes the same, so the difference in their time is the padded
    layout's slower copies of the 63-channel input and output (``calibrate_fit._padded_seconds``)."""
    from ..ir import Network, Node

    def dw(c):
        attrs = dict(out_channels=c, kernel_size=3, stride=1, padding=1, groups=c, bias=False)
        return Network.make("conv2d", {"x": (c, 28, 28)}, [Node.make("conv2d", "conv2d", "x", **attrs)]), attrs

    return dw(63), dw(64)


def channel_block(isa: str) -> int:
    """The channels of oneDNN's fp32 blocked layout on a CPU with these ISA flags (``host_info``): 16 with AVX-512,
    8 with AVX2; 0 where not known (no padded-layout figure is measured)."""
    flags = isa.split()
    return 16 if "avx512f" in flags else 8 if "avx2" in flags else 0


def _layer_module(nn, network, attrs):
    """The ``nn.Module`` of a one-layer case, called as a model's layers are."""
    node = network.nodes[0]
    op, c = node.op, network.inputs[0][1][0]
    if op == "conv2d":
        return nn.Conv2d(c, attrs["out_channels"], attrs["kernel_size"], attrs["stride"], attrs["padding"],
                         groups=attrs["groups"], bias=False)
    if op in ("max_pool2d", "avg_pool2d"):
        kind = nn.MaxPool2d if op == "max_pool2d" else nn.AvgPool2d
        return kind(attrs["kernel_size"], attrs["stride"], attrs["padding"], ceil_mode=attrs["ceil_mode"])
    if op == "linear":
        return nn.Linear(c, attrs["out_features"], bias=False)
    if op == "batch_norm":
        return nn.BatchNorm2d(c)
    if op == "adaptive_avg_pool2d":
        return nn.AdaptiveAvgPool2d(attrs["output_size"])
    return {"relu": nn.ReLU, "silu": nn.SiLU, "hardswish": nn.Hardswish}[op]()


class _TorchMachine:
    """The measurements, with torch on ``dev``; every method returns raw run times (seconds), the fitting is done
    by the caller (``_calibrate``), which a test gives a fake machine instead."""

    def __init__(self, torch, dev, cancel: Any = None):
        self.torch, self.dev, self.cancel = torch, dev, cancel
        self.clock = Clock(dev)
        self.gpu = dev.type == "cuda"
        self.linux_cpu = dev.type == "cpu" and platform.system() == "Linux"
        self.threads = torch.get_num_threads()
        self._modules: dict = {}
        self._cold = None

    def gemm(self, name: str, budget: float) -> dict:
        """Square torch.mm at growing sizes within ``budget``: {n: run times}. Raises RuntimeError or TypeError
        for a dtype this build or device cannot multiply."""
        torch, dev = self.torch, self.dev
        sizes = (1024, 2048, 4096, 8192) if self.gpu else (128, 256, 512, 1024, 2048)
        end = time.perf_counter() + budget
        out, last_t = {}, None
        dtype = _torch_dtype(name, torch)
        tf32 = None
        if self.gpu:
            tf32 = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        try:
            for k, n in enumerate(sizes):
                left = end - time.perf_counter()
                if out and (left <= 0 or last_t * 8 * MIN_RUNS > left):    # the next size: ~8× the last run
                    break
                a = torch.randn(n, n, device=dev).to(dtype)
                b = torch.randn(n, n, device=dev).to(dtype)
                c = torch.empty(n, n, device=dev, dtype=dtype)
                out[n], _ = _bench(lambda a=a, b=b, c=c: torch.mm(a, b, out=c), self.clock, left / (len(sizes) - k),
                                   self.cancel)
                last_t = statistics.median(out[n])
        finally:
            if tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = tf32
        return out

    def bandwidth(self, budget: float) -> tuple[list, list, int]:
        """(copy run times, triad run times, array bytes) on fp32 arrays far larger than the caches."""
        from .memory import available_memory

        torch, dev = self.torch, self.dev
        nbytes = (512 if self.gpu else 128) * 2 ** 20
        avail = available_memory(str(dev))
        if avail:
            nbytes = max(min(nbytes, avail // 16), 2 ** 20)
        n = nbytes // 4
        a = torch.empty(n, device=dev).fill_(1.0)
        b = torch.empty(n, device=dev).fill_(2.0)
        c = torch.empty(n, device=dev).fill_(3.0)
        copy, _ = _bench(lambda: b.copy_(a), self.clock, budget / 2, self.cancel)
        triad, _ = _bench(lambda: torch.add(b, c, alpha=3.0, out=a), self.clock, budget / 2, self.cancel)
        return copy, triad, n * 4

    def fresh_pages(self, budget: float) -> tuple[list, list, int] | None:
        """(run times, fresh bytes per run, tensor bytes) of a ReLU into a new 64 MiB tensor on a Linux CPU; None
        elsewhere (a GPU's caching allocator reuses memory)."""
        if not self.linux_cpu:
            return None
        n = 64 * 2 ** 20 // 4
        x = self.torch.randn(n)
        times, fresh = _bench(lambda: self.torch.relu(x), self.clock, budget, self.cancel, faults=True)
        return times, fresh, n * 4

    def time_layer(self, network, batch: int, attrs: dict, budget: float) -> tuple[list, list]:
        """(run times, fresh bytes per run) of one case's module on a random input."""
        torch = self.torch
        key = (network.name, network.inputs[0][1], tuple(sorted(attrs.items())))
        if key not in self._modules:
            self._modules[key] = _layer_module(torch.nn, network, attrs).to(self.dev).eval()
        module = self._modules[key]
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev)
        with torch.no_grad():
            return _bench(lambda: module(x), self.clock, budget, self.cancel, faults=self.dev.type == "cpu")

    def time_backward(self, network, batch: int, attrs: dict, budget: float,
                      chain: int = 1) -> tuple[list, list, list, list]:
        """(run times, fresh bytes per run) of the backward pass alone of one case's module (``chain`` of them in a
        row), in train mode, its input requiring a gradient as a network's inner layers' do: a forward with the
        gradients set to None (``zero_grad(set_to_none=True)``, torch's default, so each gradient is a new tensor),
        then ``y.backward(dy)`` timed — a given output gradient, no loss node of its own; then the same of the
        forwards before them (a training step's forward: train mode, autograd recording)."""
        torch = self.torch
        key = ("backward", chain, network.name, network.inputs[0][1], tuple(sorted(attrs.items())))
        if key not in self._modules:
            layers = [_layer_module(torch.nn, network, attrs) for _ in range(chain)]
            self._modules[key] = torch.nn.Sequential(*layers).to(self.dev).train()
        module = self._modules[key]
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev, requires_grad=_input_grad(network))
        dy = torch.randn_like(module(x))
        held, fwd, fwd_fresh, page = {}, [], [], _page_size()
        if self._cold is None:
            self._cold = torch.zeros(COLD_BYTES // 4, device=self.dev)

        def setup():
            module.zero_grad(set_to_none=True)
            x.grad = None
            before = _minor_faults()
            start = time.perf_counter()
            held["y"] = module(x)
            fwd.append(max(time.perf_counter() - start, 1e-9))
            after = _minor_faults() if before is not None else None
            fwd_fresh.append((after - before) * page if after is not None else 0)
            self._cold.add_(1.0)

        times, fresh = _bench(lambda: held["y"].backward(dy), self.clock, budget, self.cancel, setup=setup,
                              faults=self.dev.type == "cpu")
        return times, fresh, fwd[-len(times):], fwd_fresh[-len(times):]

    def optimizer_step(self, tensors: int, numel: int, budget: float) -> list:
        """Run times of ``torch.optim.SGD`` (momentum 0.9) ``step()`` over ``tensors`` parameters of ``numel``
        elements each, fresh gradients set before each (untimed). On a CPU torch takes its per-parameter loop
        (``_default_to_fused_or_foreach``: foreach kernels are for CUDA-like devices only), a fixed cost per
        tensor."""
        torch = self.torch
        params = [torch.nn.Parameter(torch.randn(numel, device=self.dev)) for _ in range(tensors)]
        grads = [torch.randn(numel, device=self.dev) for _ in range(tensors)]
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)

        def setup():
            for p, g in zip(params, grads):
                p.grad = g

        times, _ = _bench(opt.step, self.clock, budget, self.cancel, setup=setup, warmup=2)
        return times

    def time_network(self, network, batch: int, budget: float, threads: int | None = None, min_runs: int = 7,
                     warmup: int = 2) -> list:
        """Forward run times of a network (``core.bridge.to_torch``), in eval mode without autograd; at ``threads``
        torch threads where given (the machine's count again after)."""
        from .to_torch import to_module

        torch = self.torch
        key = ("network", network.name, network.inputs[0][1])
        if key not in self._modules:
            self._modules[key] = to_module(network, device=self.dev).eval()
        module = self._modules[key]
        x = torch.randn(batch, *network.inputs[0][1], device=self.dev)
        if threads:
            torch.set_num_threads(threads)
        try:
            with torch.no_grad():
                times, _ = _bench(lambda: module(x), self.clock, budget, self.cancel, warmup=warmup,
                                  min_runs=min_runs)
        finally:
            torch.set_num_threads(self.threads)
        return times

    def host(self) -> dict:
        return host_info(self.torch)

    def cache_bytes(self) -> float | None:
        return None if self.gpu else last_level_cache()

    def describe(self) -> tuple[str, str, str, float | None]:
        """(name, vendor, kind, memory capacity in bytes or None)."""
        torch, dev = self.torch, self.dev
        if self.gpu:
            props = torch.cuda.get_device_properties(dev)
            vendor = "AMD" if getattr(torch.version, "hip", None) else "NVIDIA"
            return props.name, vendor, "GPU", float(props.total_memory)
        model, vendor = _cpu_name()
        try:
            capacity = float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (AttributeError, ValueError, OSError):
            capacity = None
        return f"{model}, {os.cpu_count() or 1} cores", vendor, "CPU", capacity

def _input_grad(network) -> bool:
    """Whether a one-layer case's backward computes its input gradient, as the layer would inside a network: yes,
    except for a stem (3 input channels, an image), whose input carries none (its dgrad would be slow work no
    network does)."""
    return network.inputs[0][1][0] != 3


def _cpu_name() -> tuple[str, str]:
    """(model name, vendor) from /proc/cpuinfo where there is one, else platform's."""
    model = vendor = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip().lower(), value.strip()
                if key == "model name" and not model:
                    model = value
                elif key == "vendor_id" and not vendor:
                    vendor = value
    except OSError:
        pass
    vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}.get(vendor, vendor)
    model = model or platform.processor() or platform.machine() or "CPU"
    return model, vendor or platform.machine() or "unknown"


# the x86 extensions torch's CPU kernels (ATen's dispatch, oneDNN, MKL) choose between
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile",
             "amx_bf16")


def host_info(torch) -> dict:
    """What a calibration ran on, so that results on different hosts can be told apart: the CPU model and vendor,
    the ISA extensions of ``ISA_FLAGS`` it has, torch's version and the CPU capability its kernels use, and the
    oneDNN and MKL versions it was built with ("" where not found)."""
    model, vendor = _cpu_name()
    flags: set = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        pass
    config = torch.__config__.show()
    onednn = re.search(r"(?:oneDNN|MKL-DNN) v?([\d.]+)", config)
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "")()
    return {"cpu": model, "vendor": vendor, "isa": " ".join(f for f in ISA_FLAGS if f in flags),
            "torch": torch.__version__, "cpu_capability": capability, "onednn": onednn.group(1) if onednn else "",
            "mkl": mkl.group(1) if mkl else ""}


def last_level_cache(root: str = "/sys/devices/system/cpu/cpu0/cache") -> float | None:
    """Bytes of the CPU's last-level data cache as Linux reports it (sysfs: the highest-level data or unified
    ``index*``, its ``size`` like "32768K"); None where it cannot be read."""
    import glob

    best = None
    for index in glob.glob(os.path.join(root, "index*")):
        try:
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(index, "size")) as f:
                size = f.read().strip()
        except (OSError, ValueError):
            continue
        unit = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30}.get(size[-1:].upper(), 1)
        digits = size[:-1] if unit > 1 else size
        if kind in ("Data", "Unified") and digits.isdigit() and int(digits) > 0 and (best is None or level > best[0]):
            best = (level, float(int(digits) * unit))
    return best[1] if best else None


def load_networks(which) -> list:
    """The zoo networks ``which`` ((name, per-sample input shape or None for the network's own))."""
    from ..api import load_network

    nets = []
    for name, shape in which:
        net = load_network(name)
        nets.append(net.with_input_shape(shape) if shape else net)
    return nets


def _time_networks(machine, which, gate: Gate, what: str, budget: float) -> tuple[list, list]:
    """([their Reports at batch 1], [their forward run times]) of zoo networks ``which`` ((name, input shape or
    None for its own)), timed on ``machine`` through ``gate`` as one quantity ``what``."""
    from ..graph import compile_network
    from ..report import Report

    nets = load_networks(which)

    def run():
        runs = [machine.time_network(net, 1, budget / len(nets)) for net in nets]
        return runs, runs

    runs = gate.measure(what, run)
    return [Report(compile_network(net), 1, "fp32") for net in nets], runs
