"""Memory over one training step as PyTorch runs it, to check ``core.timeline`` against: the bytes of every live
tensor, sampled at each layer of the forward and of the backward.

The network is built from core's IR (``to_module``, random weights) and run as ``core.timeline`` models a step:
``zero_grad(set_to_none=True)``, forward, ``backward()`` of the outputs' mean, ``optimizer.step()`` with SGD momentum
buffers already made. ``MemTracker`` (torch.distributed._tools, a TorchDispatchMode) follows every tensor storage.
Samples: in the forward, right after each layer runs (its inputs not yet freed, its output made); in the backward,
when the gradient of a layer's output is ready (a hook on that output), which is just before the layer's own
backward. Then the peak MemTracker saw over the whole step. CPU only by default; a CUDA device works too.
"""

from __future__ import annotations

from ..ir import Network


def _total(snapshot: dict, dev) -> int:
    for d, parts in snapshot.items():
        if d.type == dev.type:
            return int(sum(v for k, v in parts.items() if getattr(k, "value", str(k)) == "Total"))
    return 0


def trace_step(network: Network, batch: int, device: str = "cpu", threads: int | None = None) -> dict:
    """{"forward": [(layer, bytes)], "backward": [(layer, bytes)], "peak": bytes} of one fp32 training step."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from .timing import cpu_threads
    from .to_torch import to_module

    dev = torch.device(device)
    with cpu_threads(threads if dev.type == "cpu" else None):
        torch.manual_seed(0)
        m = to_module(network).to(dev).train()
        shape = next(iter(network.input_shapes.values()))
        x = torch.randn((batch, *shape), device=dev)
        params = [p for p in m.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        for p in params:
            opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
        mt = MemTracker()
        mt.track_external(m, opt, x)
        forward: list = []
        backward: list = []

        def now() -> int:
            return _total(mt.get_tracker_snapshot("current"), dev)

        def sampled(step):
            def run(own, n, *args):
                out = step.run(own, n, *args)
                forward.append((step.name, now()))
                if isinstance(out, torch.Tensor) and out.requires_grad:
                    out.register_hook(lambda g, name=step.name: backward.append((name, now())))
                return out
            return step._replace(run=run)

        m.steps = [sampled(s) for s in m.steps]
        with mt:
            opt.zero_grad(set_to_none=True)
            out = m(x)
            loss = sum(o.float().mean() for o in (out if isinstance(out, tuple) else (out,)))
            loss.backward()
            opt.step()
        return {"forward": forward, "backward": backward, "peak": _total(mt.get_tracker_snapshot("peak"), dev)}
