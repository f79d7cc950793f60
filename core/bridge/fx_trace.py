"""Tracing for the PyTorch importer: a module's torch.fx graph, run on shape-only tensors (meta or fake).

Plain symbolic tracing first; where Python control flow over shapes defeats it, tracing again with shapes made
concrete (``_trace``). ``_run`` runs the graph on meta tensors (a module on the "meta" device) or under a
FakeTensorMode, so every node's output shape comes from PyTorch itself and no weights are allocated.
"""

from __future__ import annotations

import contextlib
import operator
import os

from ..errors import NetworkError

TRACE_BATCH = 2        # the batch used while tracing; dim 0 of every activation must be this


def _trace(module, shape=None):
    """The module's fx graph. Plain symbolic tracing first; where that fails on Python control flow over shapes
    (``if x.shape[-1] < k``, ``math.ceil(x.size(2) / s)``: timm's same padding, VGG's pre-logits), tracing again with
    shapes made concrete: every traced value is also computed on shape-only tensors, so shape queries return plain
    integers and the graph is specialised to this input shape (and ``TRACE_BATCH``), as the analysis is anyway."""
    try:
        return _trace_with(module, None)
    except Exception as e:  # noqa: BLE001 — tracing runs user code; report what failed, where
        first = e
    if shape is not None:
        try:
            return _trace_with(module, shape)
        except Exception:  # noqa: BLE001 — the first failure is the one to report
            pass
    raise NetworkError(f"torch.fx could not trace the module{_user_frame(first)}: {_short(first)}",
                       node=type(module).__name__, field="forward") from None


def _trace_with(module, shape):
    """fx tracing; with a per-sample ``shape``, shape queries on traced values are answered concretely."""
    import torch
    import torch.fx as fx

    class Proxy(fx.Proxy):
        """fx's Proxy has no in-place operators, so ``out += x`` would trace as ``operator.add``: these record
        ``operator.iadd`` (``isub``, ``imul``, ``itruediv``), which the graph runs in place."""

    for name in ("iadd", "isub", "imul", "itruediv"):
        op = getattr(operator, name)
        setattr(Proxy, f"__{name}__",
                lambda self, other, op=op: self.tracer.create_proxy("call_function", op, (self, other), {}))

    class Tracer(fx.Tracer):
        def proxy(self, node):
            return Proxy(node, self)

    if shape is None:
        tracer = Tracer()
        graph = tracer.trace(module)
        return fx.GraphModule(tracer.root, graph)

    def concrete(p):
        v = p.tracer.values.get(p.node)
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"no concrete shape for {p.node.name}")
        return v

    class ShapeProxy(Proxy):
        shape = property(lambda self: concrete(self).shape)
        ndim = property(lambda self: concrete(self).dim())

        def size(self, dim=None):
            v = concrete(self)
            return v.size() if dim is None else v.size(dim)

        def dim(self):
            return concrete(self).dim()

        def __len__(self):
            return len(concrete(self))

    on_meta = any(p.is_meta for p in module.parameters())
    if on_meta:
        mode = None
    else:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)

    class ShapeTracer(Tracer):
        def __init__(self):
            super().__init__()
            self.values: dict = {}
            self.computing = False

        def proxy(self, node):
            return ShapeProxy(node, self)

        # while a value is computed, modules run and give their attributes as they are (fx's patches would trace)
        def call_module(self, m, forward, args, kwargs):
            return forward(*args, **kwargs) if self.computing else super().call_module(m, forward, args, kwargs)

        def getattr(self, attr, attr_val, parameter_proxy_cache):
            return attr_val if self.computing else super().getattr(attr, attr_val, parameter_proxy_cache)

        def create_proxy(self, kind, target, args, kwargs, *rest, **kw):
            p = super().create_proxy(kind, target, args, kwargs, *rest, **kw)
            self.computing = True
            try:
                self.values[p.node] = self.compute(kind, target, args, kwargs)
            except Exception:  # noqa: BLE001 — unknown value: a shape query on it fails, as plain fx would
                pass
            finally:
                self.computing = False
            return p

        def compute(self, kind, target, args, kwargs):
            if kind == "placeholder":
                if mode is None:
                    return torch.empty((TRACE_BATCH,) + tuple(shape), device="meta")
                with mode:
                    return torch.empty((TRACE_BATCH,) + tuple(shape))
            if kind == "get_attr":
                obj = self.root
                for part in target.split("."):
                    obj = getattr(obj, part)
                return obj
            a, kw = fx.node.map_aggregate((args, kwargs), lambda v: self.values[v.node] if isinstance(v, fx.Proxy)
                                          else v)
            with mode if mode is not None else contextlib.nullcontext():
                if kind == "call_module":
                    return self.root.get_submodule(target)(*a, **kw)
                if kind == "call_method":
                    return getattr(a[0], target)(*a[1:], **kw)
                return target(*a, **kw)

    tracer = ShapeTracer()
    graph = tracer.trace(module)
    gm = fx.GraphModule(tracer.root, graph)
    gm.concrete_sizes = True        # sizes in call arguments are plain integers here, whether read off or written
    return gm


def _run(gm, module, shape) -> dict:
    """Every fx node's value on shape-only tensors (meta for meta modules, fake tensors otherwise)."""
    import torch
    from torch.fx import Interpreter

    values: dict = {}

    class Recorder(Interpreter):
        def run_node(self, n):
            try:
                out = super().run_node(n)
            except Exception as e:  # noqa: BLE001
                raise NetworkError(f"running '{n.format_node()}' on shapes {shape} failed: {_short(e)}",
                                   node=n.name, field=n.op) from None
            values[n] = out
            return out

    on_meta = any(p.is_meta for p in module.parameters())
    if on_meta:
        Recorder(gm).run(torch.empty((TRACE_BATCH,) + shape, device="meta"))
    else:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            Recorder(gm).run(torch.empty((TRACE_BATCH,) + shape))
    return values


def _user_frame(e: Exception) -> str:
    """' at file.py:12 (`if x.sum() > 0:`)' for the innermost frame outside torch: the call that failed."""
    import traceback

    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if f"{os.sep}torch{os.sep}" not in f.filename and f"{os.sep}core{os.sep}bridge{os.sep}" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    code = f" (`{f.line.strip()}`)" if f.line else ""
    return f" at {os.path.basename(f.filename)}:{f.lineno}{code}"


def _short(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:300]


# == conversion ===================================================================================================
