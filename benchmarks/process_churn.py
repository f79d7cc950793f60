"""Does a network run slower after other work in the same process? (issue 44: protocol (b)'s small networks run
slower in its one process than alone.)

Times a probe network's forward at batch 1 at the start of the process, then runs a churn over twelve torchvision
networks, then times the probe twice more; at one thread by default, where the AMD EPYC VM's two thread states do
not show (docs/cpu-calibration.md). Churns: ``train`` (two SGD steps of each at batch 1 and 16), ``forward`` (four
inference passes of each), ``alloc`` (40 s of random 1–64 MiB tensors), ``modules`` (building them only). Settings
that act at the process's start (``GLIBC_TUNABLES``, ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` …) go in its environment.

    python benchmarks/process_churn.py [--probe shufflenet_v2_x1_0] [--churn train] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from thread_states import forward_median

CHURN_NETWORKS = ("alexnet", "vgg11", "vgg16", "resnet18", "resnet34", "resnet50", "resnet101", "wide_resnet50_2",
                  "resnext50_32x4d", "densenet121", "googlenet", "mobilenet_v2")


def _forward_ms(torch, module, x, threads: int) -> float:
    return forward_median(torch, module, x, threads, runs=15, warmup=3) * 1e3


def churn(torch, kind: str, networks=CHURN_NETWORKS) -> None:
    from core.api import load_network
    from core.bridge.to_torch import to_module

    if kind == "alloc":
        keep, end = [], time.perf_counter() + 40
        while time.perf_counter() < end:
            keep.append(torch.empty(random.randint(1, 64) * 2 ** 18).fill_(1))     # 1–64 MiB of fp32
            if len(keep) > 20:
                keep.pop(random.randrange(len(keep)))
        return
    for name in networks:
        net = load_network(name)
        if kind == "modules":
            to_module(net)
            continue
        for batch, shape in ((1, (3, 224, 224)), (16, (3, 112, 112))):
            module, x = to_module(net), torch.randn(batch, *shape)
            if kind == "train":
                module.train()
                opt = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
                for _ in range(2):
                    module(x).sum().backward()
                    opt.step()
                    opt.zero_grad()
            else:
                module.eval()
                with torch.no_grad():
                    for _ in range(4):
                        module(x)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probe", default="shufflenet_v2_x1_0")
    ap.add_argument("--churn", choices=("train", "forward", "alloc", "modules"), default="train")
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the probe's timing (default 1)")
    args = ap.parse_args(argv)

    import torch

    from core.api import load_network
    from core.bridge.to_torch import to_module

    threads = torch.get_num_threads()
    net = load_network(args.probe)
    module, x = to_module(net).eval(), torch.randn(1, *net.inputs[0][1])
    before = _forward_ms(torch, module, x, args.threads)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    churn(torch, args.churn)
    took = time.perf_counter() - t0
    after = [_forward_ms(torch, module, x, args.threads) for _ in range(2)]
    print(f"{args.probe} forward at batch 1, {args.threads} thread(s): {before:.2f} ms at the start, "
          f"{after[0]:.2f} and {after[1]:.2f} ms after the {args.churn} churn ({took:.0f} s)")
    return {"before_ms": before, "after_ms": after, "churn_s": took}


if __name__ == "__main__":
    main()
