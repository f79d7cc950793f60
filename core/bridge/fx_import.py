"""nn.Module → IR: trace with torch.fx, run the graph on shape-only tensors, and map every call to an IR op.

No weights are allocated for the analysis: a module on the "meta" device is run on meta tensors, any other module
under a FakeTensorMode (shapes only, no arithmetic). Shapes come from PyTorch itself, so the IR's shape propagation
is checked against them node by node.

An op the IR has no rule for becomes an explicit ``opaque`` node with torch's shape, and is listed in
``ImportResult.unsupported`` and the warnings — never counted as zero in silence. Computation that does not depend on
the input (relative-position tables, a bias MLP over a constant grid) is done once per forward, whatever the batch:
its parameters are counted, its arithmetic is not modelled (a warning says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import NetworkError
from ..graph import compile_network
from ..ir import Network, Node

TRACE_BATCH = 2        # the batch used while tracing; dim 0 of every activation must be this


@dataclass(frozen=True)
class ImportResult:
    network: Network
    warnings: tuple[str, ...]
    unsupported: tuple[str, ...]      # the calls that became opaque nodes


class _Const:
    """A value that does not depend on the input: Python values and tensors derived from parameters/buffers."""

    def __init__(self, value, params: frozenset = frozenset()):
        self.value = value
        self.params = params            # names of the parameters it was computed from


def from_module(module, input_shape, *, name: str | None = None) -> ImportResult:
    """Convert ``module`` run on inputs of per-sample shape ``input_shape`` (e.g. (3, 224, 224)) into a Network."""

    shape = tuple(int(d) for d in input_shape)
    was_training = module.training
    module.eval()
    try:
        gm = _trace(module)
        values = _run(gm, module, shape)
    finally:
        module.train(was_training)
    conv = _Converter(gm, module, values, shape, name or type(module).__name__)
    network = conv.convert()
    return ImportResult(network, tuple(conv.warnings), tuple(conv.unsupported))


def _trace(module):
    import torch.fx as fx

    try:
        tracer = fx.Tracer()
        graph = tracer.trace(module)
    except Exception as e:  # noqa: BLE001 — tracing runs user code; report what failed, where
        raise NetworkError(f"torch.fx could not trace the module{_user_frame(e)}: {_short(e)}",
                           node=type(module).__name__, field="forward") from None
    return fx.GraphModule(tracer.root, graph)


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
    import os
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

class _Converter:
    def __init__(self, gm, root, values: dict, shape: tuple, name: str):
        import torch

        self.torch = torch
        self.gm = gm
        self.root = root            # the original module: it also holds parameters the forward never uses
        self.values = values
        self.shape = shape
        self.name = name
        self.nodes: list[Node] = []
        self.names: set[str] = {"x"}
        self.ir: dict = {}                  # fx node → IR name | list of IR names | _Const
        self.param_names = {id(p): n for n, p in gm.named_parameters()}
        self.buffer_names = {n for n, _ in gm.named_buffers()}
        self.counted: set[str] = set()      # parameter names already attributed to an IR node
        self.const_params: set[str] = set() # parameters used by constant (batch-independent) computation
        self.module_calls: dict[str, int] = {}
        self.const_work: list[str] = []     # calls on input-independent values (once per forward, any batch)
        self.warnings: list[str] = []
        self.unsupported: list[str] = []

    # -- helpers ------------------------------------------------------------------------------------------------
    def unique(self, base: str) -> str:
        name, i = base, 0
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def scoped(self, n) -> str:
        """A readable name for a function or method call: the module it runs in, then the call
        ("layer1.0.add", as the calculator's own ResNet names it); "flatten" at the top level."""
        short = _function_key(n.target) if n.op == "call_function" else str(n.target)
        short = {"getitem": "select", "cat": "concat", "iadd": "add", "imul": "mul"}.get(short, short)
        stack = n.meta.get("nn_module_stack") or {}
        path = next(reversed(stack.values()))[0] if stack else ""
        return f"{path}.{short}" if path else short

    def emit(self, base: str, op: str, inputs, **attrs) -> str:
        name = self.unique(base)
        self.nodes.append(Node.make(name, op, list(inputs), **{k: v for k, v in attrs.items() if v is not None}))
        return name

    def out_shape(self, n) -> tuple:
        v = self.values[n]
        if isinstance(v, (tuple, list)):
            v = v[0]
        if v.dim() == 0 or v.shape[0] != TRACE_BATCH:
            raise _Unbatched(n)
        return tuple(v.shape[1:])

    def ref(self, a, rank: int | None = None) -> str:
        """The IR name of a tensor argument; constants become ``parameter`` nodes, laid out to broadcast against an
        activation of full rank ``rank`` when given."""
        import torch.fx as fx

        if isinstance(a, fx.Node):
            r = self.ir[a]
            if isinstance(r, _Const):
                return self.const_node(a, r, rank)
            if isinstance(r, list):
                raise _Unsupported(a, "a tuple used as a tensor")
            return r
        raise _Unsupported(None, f"a non-tensor argument {a!r}")

    def const_node(self, a, c: _Const, rank: int | None = None) -> str:
        t = c.value
        if not isinstance(t, self.torch.Tensor):
            raise _Unsupported(a, f"a constant {t!r} used as a tensor")
        shape = tuple(t.shape)
        if rank is not None and len(shape) < rank:          # aligned from the right, as torch broadcasts
            per_sample = (1,) * (rank - 1 - len(shape)) + shape
        elif rank is not None and len(shape) == rank:
            if shape[0] != 1:
                raise _Unsupported(a, f"a constant of shape {list(shape)} that varies along the batch dim")
            per_sample = shape[1:]
        else:
            per_sample = shape[1:] if len(shape) >= 2 and shape[0] == 1 else shape or (1,)
        new = [p for p in c.params if p not in self.counted]
        self.counted.update(new)
        params = {n: p for n, p in self.gm.named_parameters()}
        numel = sum(params[p].numel() for p in new if p in params)
        buffers = sum(dict(self.gm.named_buffers())[b].numel() for b in new if b in self.buffer_names)
        trainable = any(params[p].requires_grad for p in new if p in params)
        base = a.target if a.op == "get_attr" else a.name
        if numel or not buffers:
            return self.emit(str(base), "parameter", [], shape=per_sample, trainable=trainable or not new,
                             numel=numel if (new or numel) else 0)
        return self.emit(str(base), "parameter", [], shape=per_sample, buffer=True, numel=buffers)

    def claim_module(self, target: str, module) -> None:
        names = [f"{target}.{n}" if target else n for n, _ in module.named_parameters()]
        again = [n for n in names if n in self.counted]
        if again:
            self.warnings.append(f"{target}: parameters shared with an earlier call are counted once "
                                 f"(the IR counts them again; totals may be higher)")
        self.counted.update(names)

    # -- main loop -------------------------------------------------------------------------------------------------
    def convert(self) -> Network:
        import torch.fx as fx

        outputs: list[str] = []
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                if self.ir:
                    raise NetworkError("only modules with a single tensor input are supported", node=n.name,
                                       field="forward")
                self.ir[n] = "x"
                continue
            if n.op == "get_attr":
                self.ir[n] = _Const(self.values[n], frozenset({n.target}))
                continue
            if n.op == "output":
                outputs = [self.ref(a) for a in _flatten(n.args[0]) if isinstance(a, fx.Node)
                           and not isinstance(self.ir[a], _Const)]
                continue
            deps = [a for a in _flatten((n.args, n.kwargs)) if isinstance(a, fx.Node)]
            if not _has_tensor(self.values[n], self.torch):      # shapes, sizes, asserts: plain Python values
                self.ir[n] = _Const(self.values[n])
                continue
            if all(isinstance(self.ir[d], _Const) for d in deps):
                if n.op == "call_method" and n.target in ("expand", "expand_as"):
                    self.ir[n] = self.ir[n.args[0]]       # broadcasting over the batch is implicit in the IR
                else:
                    self.ir[n] = self.constant(n, deps)
                continue
            try:
                self.ir[n] = self.convert_node(n)
            except _Unbatched:
                self.ir[n] = self.opaque(n, "its output does not keep the batch first")
            except _Unsupported as e:
                self.ir[n] = self.opaque(n, e.why)
        self.account_leftover_params()
        if self.const_work:
            shown = sorted(set(self.const_work))
            self.warnings.append("input-independent computation runs once per forward whatever the batch; its "
                                 f"parameters are counted, its arithmetic is not modelled: {', '.join(shown[:6])}"
                                 + (" …" if len(shown) > 6 else ""))
        net = Network.make(self.name, {"x": self.shape}, self.nodes, outputs or [self.nodes[-1].name],
                           description=f"imported from {self.name} with torch.fx")
        self.check_shapes(net)
        return net

    def constant(self, n, deps) -> _Const:
        params = frozenset().union(*(self.ir[d].params for d in deps)) if deps else frozenset()
        if n.op == "call_module":
            mod = self.gm.get_submodule(n.target)
            params = params | {f"{n.target}.{p}" for p, _ in mod.named_parameters()}
        if isinstance(self.values[n], self.torch.Tensor):
            self.const_params.update(p for p in params if p not in self.buffer_names)
            if n.op == "call_module" or _function_key(n.target) in ("linear", "matmul", "einsum", "bmm"):
                self.const_work.append(n.target if n.op == "call_module" else n.name)
        return _Const(self.values[n], params)

    def opaque(self, n, why: str):
        target = _target_name(n)
        v = self.values[n]
        if not isinstance(v, self.torch.Tensor) or v.dim() == 0 or v.shape[0] != TRACE_BATCH:
            raise NetworkError(f"cannot represent '{n.format_node()}' ({why}); the batch must stay dim 0",
                               node=n.name, field=n.op)
        ins = [self.ir[a] for a in _flatten((n.args, n.kwargs)) if hasattr(a, "op")
               and isinstance(self.ir.get(a), str)]
        self.unsupported.append(target)
        self.warnings.append(f"{n.name}: {target} has no cost rule ({why}); its shape comes from PyTorch and its "
                             f"FLOPs are NOT counted")
        return self.emit(n.target if n.op == "call_module" else self.scoped(n), "opaque", ins, shape=tuple(v.shape[1:]),
                         target=target)

    def account_leftover_params(self) -> None:
        named = dict(self.root.named_parameters())
        left = [p for p in named if p not in self.counted]
        if not left:
            return
        owners: dict[str, int] = {}
        for p in left:
            owners[p.rsplit(".", 1)[0] if "." in p else p] = owners.get(p.rsplit(".", 1)[0] if "." in p else p, 0) \
                + named[p].numel()
        for owner, count in owners.items():
            self.emit(owner, "parameter", [], shape=(1,), numel=count)
        self.counted.update(left)
        const = sorted({p.rsplit(".", 1)[0] for p in left if p in self.const_params})
        if const:
            self.warnings.append("parameters used only on input-independent paths are counted, their arithmetic "
                                 f"(once per forward) is not: {', '.join(const[:6])}" + (" …" if len(const) > 6 else ""))
        other = sorted({p.rsplit(".", 1)[0] for p in left if p not in self.const_params})
        if other:
            self.warnings.append(f"parameters not used in the traced forward are counted: {', '.join(other[:6])}")

    def check_shapes(self, net: Network) -> None:
        compiled = compile_network(net)
        recorded = {}
        for n, r in self.ir.items():
            if isinstance(r, str) and r in compiled.by_name and r not in recorded:
                try:
                    recorded[r] = self.out_shape(n)
                except _Unbatched:
                    pass
        for name, shape in recorded.items():
            mine = compiled.by_name[name].out_shape
            if mine != shape:
                raise NetworkError(f"the IR gives per-sample shape {list(mine)} where PyTorch gives {list(shape)}",
                                   node=name, field="output shape")

    # -- one fx node -------------------------------------------------------------------------------------------
    def convert_node(self, n):
        if n.op == "call_module":
            mod = self.gm.get_submodule(n.target)
            handler = _MODULES.get(type(mod))
            if handler is None:
                for cls, h in _MODULES.items():
                    if isinstance(mod, cls):
                        handler = h
                        break
            if handler is None:
                raise _Unsupported(n, f"module {type(mod).__name__}")
            count = self.module_calls.get(n.target, 0)
            self.module_calls[n.target] = count + 1
            if count:
                self.warnings.append(f"{n.target} is called {count + 1} times; each call is a node")
            else:
                self.claim_module(n.target, mod)
            return handler(self, n, mod)
        key = n.target if n.op == "call_method" else _function_key(n.target)
        handler = (_METHODS if n.op == "call_method" else _FUNCTIONS).get(key)
        if handler is None:
            raise _Unsupported(n, f"{'method' if n.op == 'call_method' else 'function'} {_target_name(n)}")
        return handler(self, n)


class _Unsupported(Exception):
    def __init__(self, node, why: str):
        super().__init__(why)
        self.node = node
        self.why = why


class _Unbatched(Exception):
    pass


def _has_tensor(v, torch) -> bool:
    if isinstance(v, torch.Tensor):
        return True
    return isinstance(v, (list, tuple)) and any(_has_tensor(x, torch) for x in v)


def _flatten(x) -> list:
    if isinstance(x, (list, tuple)):
        return [y for item in x for y in _flatten(item)]
    if isinstance(x, dict):
        return [y for item in x.values() for y in _flatten(item)]
    return [x]


def _target_name(n) -> str:
    if n.op == "call_module":
        return n.target
    t = n.target
    return t if isinstance(t, str) else f"{getattr(t, '__module__', '') or ''}.{getattr(t, '__name__', repr(t))}".lstrip(".")


def _function_key(fn) -> str:
    return getattr(fn, "__name__", repr(fn))


def _arg(n, i: int, key: str, default=None):
    if len(n.args) > i:
        return n.args[i]
    return n.kwargs.get(key, default)


def _value(c: "_Converter", a):
    """A Python value of an argument (constants resolved)."""
    import torch.fx as fx

    if isinstance(a, fx.Node):
        v = c.values[a]
        return v
    if isinstance(a, (list, tuple)):
        return type(a)(_value(c, x) for x in a)
    return a


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


# == module handlers ==============================================================================================

def _conv(c, n, m):
    pad = m.padding if isinstance(m.padding, str) else _pair(m.padding)
    if m.padding_mode != "zeros":
        c.warnings.append(f"{n.target}: padding_mode '{m.padding_mode}' is costed like zero padding")
    return c.emit(n.target, "conv2d", [c.ref(n.args[0])], out_channels=m.out_channels, kernel_size=_pair(m.kernel_size),
                  stride=_pair(m.stride), padding=pad, dilation=_pair(m.dilation), groups=m.groups,
                  bias=m.bias is not None)


def _convt(c, n, m):
    return c.emit(n.target, "conv_transpose2d", [c.ref(n.args[0])], out_channels=m.out_channels,
                  kernel_size=_pair(m.kernel_size), stride=_pair(m.stride), padding=_pair(m.padding),
                  output_padding=_pair(m.output_padding), dilation=_pair(m.dilation), groups=m.groups,
                  bias=m.bias is not None)


def _linear(c, n, m):
    return c.emit(n.target, "linear", [c.ref(n.args[0])], out_features=m.out_features, bias=m.bias is not None)


def _bn(c, n, m):
    return c.emit(n.target, "batch_norm", [c.ref(n.args[0])], eps=m.eps, momentum=m.momentum, affine=m.affine,
                  track_running_stats=m.track_running_stats)


def _ln(c, n, m):
    return c.emit(n.target, "layer_norm", [c.ref(n.args[0])], normalized_ndim=len(m.normalized_shape), eps=m.eps,
                  elementwise_affine=m.elementwise_affine, bias=getattr(m, "bias", None) is not None)


def _gn(c, n, m):
    return c.emit(n.target, "group_norm", [c.ref(n.args[0])], num_groups=m.num_groups, eps=m.eps, affine=m.affine)


def _simple(op: str, **fixed) -> Callable:
    def h(c, n, m):
        return c.emit(n.target, op, [c.ref(n.args[0])], **fixed)
    return h


def _dim_module(op: str) -> Callable:
    def h(c, n, m):
        return c.emit(n.target, op, [c.ref(n.args[0])], dim=m.dim if m.dim is not None else -1)
    return h


def _dropout(c, n, m):
    return c.emit(n.target, "dropout", [c.ref(n.args[0])], p=float(m.p))


def _flatten_mod(c, n, m):
    return c.emit(n.target, "flatten", [c.ref(n.args[0])], start_dim=m.start_dim, end_dim=m.end_dim)


def _maxpool(c, n, m):
    return c.emit(n.target, "max_pool2d", [c.ref(n.args[0])], kernel_size=_pair(m.kernel_size),
                  stride=_pair(m.stride) if m.stride is not None else None, padding=_pair(m.padding),
                  dilation=_pair(m.dilation), ceil_mode=m.ceil_mode)


def _avgpool(c, n, m):
    return c.emit(n.target, "avg_pool2d", [c.ref(n.args[0])], kernel_size=_pair(m.kernel_size),
                  stride=_pair(m.stride) if m.stride is not None else None, padding=_pair(m.padding),
                  ceil_mode=m.ceil_mode, count_include_pad=m.count_include_pad, divisor_override=m.divisor_override)


def _adaptive(op: str) -> Callable:
    def h(c, n, m):
        return c.emit(n.target, op, [c.ref(n.args[0])], output_size=_pair(m.output_size))
    return h


def _upsample(c, n, m):
    return _interp_common(c, n, n.target, m.size, m.scale_factor, m.mode, m.align_corners)


def _mha(c, n, m):
    if not m.batch_first:
        raise _Unsupported(n, "nn.MultiheadAttention with batch_first=False")
    q, k, v = (c.ref(_arg(n, i, key)) for i, key in enumerate(("query", "key", "value")))
    name = c.emit(n.target, "multihead_attention", [q, k, v], embed_dim=m.embed_dim, num_heads=m.num_heads,
                  bias=m.in_proj_bias is not None)
    return [name, None]      # (attn_output, attn_weights); the weights are not modelled


def _modules() -> dict:
    import torch.nn as nn

    return {
        nn.Conv2d: _conv, nn.ConvTranspose2d: _convt, nn.Linear: _linear,
        nn.BatchNorm1d: _bn, nn.BatchNorm2d: _bn, nn.LayerNorm: _ln, nn.GroupNorm: _gn,
        nn.ReLU: _simple("relu"), nn.ReLU6: _simple("relu6"), nn.SiLU: _simple("silu"),
        nn.GELU: lambda c, n, m: c.emit(n.target, "gelu", [c.ref(n.args[0])], approximate=m.approximate),
        nn.Hardswish: _simple("hardswish"), nn.Hardsigmoid: _simple("hardsigmoid"), nn.Sigmoid: _simple("sigmoid"),
        nn.Tanh: _simple("tanh"), nn.Softmax: _dim_module("softmax"), nn.LogSoftmax: _dim_module("log_softmax"),
        nn.Dropout: _dropout, nn.Dropout2d: _dropout, nn.AlphaDropout: _dropout, nn.Identity: _simple("identity"),
        nn.Flatten: _flatten_mod, nn.MaxPool2d: _maxpool, nn.AvgPool2d: _avgpool,
        nn.AdaptiveAvgPool2d: _adaptive("adaptive_avg_pool2d"), nn.AdaptiveMaxPool2d: _adaptive("adaptive_max_pool2d"),
        nn.Upsample: _upsample, nn.ChannelShuffle: lambda c, n, m: c.emit(n.target, "channel_shuffle",
                                                                           [c.ref(n.args[0])], groups=m.groups),
        nn.MultiheadAttention: _mha,
    }


class _LazyTable(dict):
    def __init__(self, build):
        super().__init__()
        self._build = build

    def _fill(self):
        if self._build is not None:
            self.update(self._build())
            self._build = None

    def get(self, key, default=None):
        self._fill()
        return super().get(key, default)

    def items(self):
        self._fill()
        return super().items()


_MODULES = _LazyTable(_modules)


# == function and method handlers =================================================================================

def _binary(op: str):
    def h(c, n):
        a, b = n.args[0], n.args[1] if len(n.args) > 1 else n.kwargs.get("other")
        tensors = [x for x in (a, b) if hasattr(x, "op") and isinstance(c.values[x], c.torch.Tensor)]
        scalars = [x for x in (a, b) if not (hasattr(x, "op") and isinstance(c.values[x], c.torch.Tensor))]
        if len(tensors) == 2:
            rank = max(c.values[a].dim(), c.values[b].dim())
            return c.emit(c.scoped(n), op, [c.ref(a, rank), c.ref(b, rank)])
        value = float(_value(c, scalars[0]))
        if op in ("sub", "div") and scalars[0] is a:
            raise _Unsupported(n, f"a scalar {'minus' if op == 'sub' else 'divided by'} a tensor")
        return c.emit(c.scoped(n), op, [c.ref(tensors[0])], scalar=value)
    return h


def _unary(op: str):
    def h(c, n):
        return c.emit(c.scoped(n), op, [c.ref(n.args[0])])
    return h


def _gelu_fn(c, n):
    return c.emit(c.scoped(n), "gelu", [c.ref(n.args[0])], approximate=_value(c, n.kwargs.get("approximate", "none")))


def _softmax_fn(op: str):
    def h(c, n):
        dim = _value(c, _arg(n, 1, "dim"))
        return c.emit(c.scoped(n), op, [c.ref(n.args[0])], dim=dim if dim is not None else -1)
    return h


def _cat(c, n):
    tensors = _arg(n, 0, "tensors")
    dim = _value(c, _arg(n, 1, "dim", 0))
    rank = c.values[n].dim()
    return c.emit(c.scoped(n), "concat", [c.ref(t, rank) for t in tensors], dim=dim)


def _flatten_fn(c, n):
    return c.emit(c.scoped(n), "flatten", [c.ref(n.args[0])], start_dim=_value(c, _arg(n, 1, "start_dim", 0)),
                  end_dim=_value(c, _arg(n, 2, "end_dim", -1)))


def _reshape(c, n):
    return c.emit(c.scoped(n), "reshape", [c.ref(n.args[0])], shape=c.out_shape(n))


def _permute(c, n):
    dims = n.args[1:] if len(n.args) > 2 or not isinstance(_value(c, _arg(n, 1, "dims")), (list, tuple)) \
        else _value(c, _arg(n, 1, "dims"))
    return c.emit(c.scoped(n), "permute", [c.ref(n.args[0])], dims=tuple(_value(c, d) for d in dims))


def _transpose(c, n):
    return c.emit(c.scoped(n), "transpose", [c.ref(n.args[0])], dim0=_value(c, _arg(n, 1, "dim0")),
                  dim1=_value(c, _arg(n, 2, "dim1")))


def _identity(c, n):
    return c.emit(c.scoped(n), "identity", [c.ref(n.args[0])])


def _expand(c, n):
    src = c.values[n.args[0]]
    if tuple(src.shape[1:]) == c.out_shape(n):
        return c.emit(c.scoped(n), "identity", [c.ref(n.args[0])])
    raise _Unsupported(n, "expand that changes per-sample dims")


def _mean(c, n):
    dim = _value(c, _arg(n, 1, "dim"))
    if dim is None:
        raise _Unsupported(n, "a mean over every dim, batch included")
    dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    return c.emit(c.scoped(n), "mean", [c.ref(n.args[0])], dim=dims, keepdim=bool(_value(c, _arg(n, 2, "keepdim", False))))


def _split(c, n):
    """chunk / split: one slice node per piece, picked later by getitem."""
    x = c.values[n.args[0]]
    dim = _value(c, _arg(n, 2, "dim", 0))
    rank = x.dim()
    d = dim + rank if dim < 0 else dim
    pieces = c.values[n]
    src = c.ref(n.args[0])
    names, start = [], 0
    for i, piece in enumerate(pieces):
        size = piece.shape[d]
        names.append(c.emit(f"{c.scoped(n)}.{i}", "slice", [src], dim=d, start=start, end=start + size))
        start += size
    return names


def _getitem(c, n):
    src, idx = n.args
    r = c.ir[src]
    if isinstance(r, list):
        picked = r[_value(c, idx)]
        if picked is None:
            raise _Unsupported(n, "an output the IR does not model (attention weights)")
        return picked
    index = _value(c, idx)
    index = index if isinstance(index, tuple) else (index,)
    name = c.ref(src)
    rank = c.values[src].dim()
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (rank - len(index) + 1) + index[at + 1:]
    removed = 0
    for d, item in enumerate(index):
        if d == 0:
            if item != slice(None):
                raise _Unbatched(n)
            continue
        if isinstance(item, slice):
            if item == slice(None):
                continue
            s = slice(item.start or 0, item.stop if item.stop is not None else 2 ** 24, item.step or 1)
            name = c.emit(c.scoped(n), "slice", [name], dim=d - removed, start=s.start, end=s.stop, step=s.step)
        elif isinstance(item, int):
            name = c.emit(c.scoped(n), "slice", [name], dim=d - removed, start=item, select=True)
            removed += 1
        else:
            raise _Unsupported(n, f"indexing with {type(item).__name__}")
    return name


def _select(c, n):
    """x.select(dim, index) / torch.select: one position along a dim, which is dropped."""
    dim, index = _value(c, _arg(n, 1, "dim")), _value(c, _arg(n, 2, "index"))
    rank = c.values[n.args[0]].dim()
    d = dim + rank if dim < 0 else dim
    if d == 0:
        raise _Unbatched(n)
    return c.emit(c.scoped(n), "slice", [c.ref(n.args[0])], dim=d, start=index, select=True)


def _narrow(c, n):
    dim, start, length = (_value(c, _arg(n, i, k)) for i, k in ((1, "dim"), (2, "start"), (3, "length")))
    rank = c.values[n.args[0]].dim()
    d = dim + rank if dim < 0 else dim
    if d == 0:
        raise _Unbatched(n)
    return c.emit(c.scoped(n), "slice", [c.ref(n.args[0])], dim=d, start=start, end=start + length)


def _matmul(c, n):
    return c.emit(c.scoped(n), "matmul", [c.ref(n.args[0]), c.ref(n.args[1])])


def _sdpa(c, n):
    if _value(c, n.kwargs.get("attn_mask")) is not None:
        c.warnings.append(f"{n.name}: the attention mask is not costed")
    return c.emit(c.scoped(n), "sdpa", [c.ref(a) for a in n.args[:3]], is_causal=bool(n.kwargs.get("is_causal", False)))


def _linear_fn(c, n):
    w = c.values[_arg(n, 1, "weight")]
    bias = _arg(n, 2, "bias")
    _claim_const(c, [_arg(n, 1, "weight"), bias])
    return c.emit(c.scoped(n), "linear", [c.ref(n.args[0])], out_features=w.shape[0], bias=bias is not None)


def _layer_norm_fn(c, n):
    shape = _value(c, _arg(n, 1, "normalized_shape"))
    w, b = _arg(n, 2, "weight"), _arg(n, 3, "bias")
    _claim_const(c, [w, b])
    return c.emit(c.scoped(n), "layer_norm", [c.ref(n.args[0])], normalized_ndim=len(shape),
                  eps=float(_value(c, _arg(n, 4, "eps", 1e-5))), elementwise_affine=w is not None, bias=b is not None)


def _claim_const(c, args) -> None:
    for a in args:
        if hasattr(a, "op") and isinstance(c.ir.get(a), _Const):
            c.counted.update(c.ir[a].params)


def _pool_fn(op: str):
    def h(c, n):
        k = _pair(_value(c, _arg(n, 1, "kernel_size")))
        stride = _value(c, _arg(n, 2, "stride"))
        attrs = dict(kernel_size=k, stride=_pair(stride) if stride else None,
                     padding=_pair(_value(c, _arg(n, 3, "padding", 0))))
        if op == "max_pool2d":
            attrs.update(dilation=_pair(_value(c, _arg(n, 4, "dilation", 1))),
                         ceil_mode=bool(_value(c, _arg(n, 5, "ceil_mode", False))))
        else:
            attrs.update(ceil_mode=bool(_value(c, _arg(n, 4, "ceil_mode", False))),
                         count_include_pad=bool(_value(c, _arg(n, 5, "count_include_pad", True))))
        return c.emit(c.scoped(n), op, [c.ref(n.args[0])], **attrs)
    return h


def _adaptive_fn(op: str):
    def h(c, n):
        return c.emit(c.scoped(n), op, [c.ref(n.args[0])], output_size=_pair(_value(c, _arg(n, 1, "output_size"))))
    return h


def _interp_common(c, n, base, size, scale, mode, align):
    if size is not None:
        size = _pair(size)
    elif scale is not None:
        scale = tuple(float(s) for s in _pair(scale))
    return c.emit(base, "interpolate", [c.ref(n.args[0])], size=size, scale_factor=scale, mode=mode,
                  align_corners=align if mode != "nearest" else None)


def _interpolate(c, n):
    return _interp_common(c, n, c.scoped(n), _value(c, _arg(n, 1, "size")), _value(c, _arg(n, 2, "scale_factor")),
                          _value(c, _arg(n, 3, "mode", "nearest")), _value(c, _arg(n, 4, "align_corners")))


def _dropout_fn(c, n):
    return c.emit(c.scoped(n), "dropout", [c.ref(n.args[0])], p=float(_value(c, _arg(n, 1, "p", 0.5))))


def _pad(c, n):
    pads = tuple(int(p) for p in _value(c, _arg(n, 1, "pad")))
    mode = _value(c, _arg(n, 2, "mode", "constant"))
    if mode != "constant":
        c.warnings.append(f"{n.name}: F.pad mode '{mode}' is costed as a copy")
    return c.emit(c.scoped(n), "pad", [c.ref(n.args[0])], pad=pads)


def _roll(c, n):
    shifts, dims = _value(c, _arg(n, 1, "shifts")), _value(c, _arg(n, 2, "dims"))
    return c.emit(c.scoped(n), "roll", [c.ref(n.args[0])], shifts=tuple(_pair(shifts)) if not isinstance(shifts, int)
                  else (shifts,), dims=tuple(dims) if isinstance(dims, (list, tuple)) else (dims,))


def _einsum(c, n):
    eq = _value(c, n.args[0])
    ops = n.args[1:] if not isinstance(n.args[1], (list, tuple)) else n.args[1]
    return c.emit(c.scoped(n), "einsum", [c.ref(o) for o in ops], equation=eq)


def _stochastic_depth(c, n):
    return c.emit(c.scoped(n), "identity", [c.ref(n.args[0])])      # identity at inference


def _patch_merging_pad(c, n):
    """torchvision's Swin patch merging: pad H, W to even, then gather 2×2 neighbours into channels
    ([N, H, W, C] → [N, H/2, W/2, 4C]): a pad and a space-to-depth copy, no arithmetic."""
    h, w, ch = c.values[n.args[0]].shape[1:]
    ph, pw = h + h % 2, w + w % 2
    base = c.scoped(n)
    x = c.emit(f"{base}.pad", "pad", [c.ref(n.args[0])], pad=(0, 0, 0, pw - w, 0, ph - h))
    x = c.emit(f"{base}.split", "reshape", [x], shape=(ph // 2, 2, pw // 2, 2, ch))
    # torchvision concatenates x[0::2, 0::2], x[1::2, 0::2], x[0::2, 1::2], x[1::2, 1::2]: the channel block is
    # (w offset, h offset), so [N, h, 2 (h off), w, 2 (w off), C] → [N, h, w, w off, h off, C]
    x = c.emit(f"{base}.gather", "permute", [x], dims=(0, 1, 3, 4, 2, 5))
    return c.emit(c.scoped(n), "reshape", [x], shape=(ph // 2, pw // 2, 4 * ch))


def _window_attention(c, n):
    """torchvision.models.swin_transformer.shifted_window_attention(input, qkv_weight, proj_weight,
    relative_position_bias, window_size, num_heads, shift_size, attention_dropout, dropout, qkv_bias, proj_bias,
    logit_scale, training)."""
    names = ("input", "qkv_weight", "proj_weight", "relative_position_bias", "window_size", "num_heads", "shift_size",
             "attention_dropout", "dropout", "qkv_bias", "proj_bias", "logit_scale")
    args = {k: _arg(n, i, k) for i, k in enumerate(names)}
    consts = [args[k] for k in ("qkv_weight", "proj_weight", "relative_position_bias", "qkv_bias", "proj_bias",
                                "logit_scale") if args[k] is not None]
    params = dict(c.gm.named_parameters())
    own = frozenset().union(*(c.ir[a].params for a in consts if isinstance(c.ir.get(a), _Const)))
    fresh = [p for p in own if p not in c.counted and p in params]
    c.counted.update(fresh)
    channels = c.values[args["input"]].shape[-1]
    modelled = 4 * channels * channels + (3 * channels if args["qkv_bias"] is not None else 0) + \
        (channels if args["proj_bias"] is not None else 0)
    extra = sum(params[p].numel() for p in fresh) - modelled
    buffers = dict(c.gm.named_buffers())
    extra_buffers = sum(buffers[b].numel() for b in own if b in buffers)
    return c.emit(c.scoped(n), "window_attention", [c.ref(args["input"])], window_size=_pair(_value(c, args["window_size"])),
                  num_heads=int(_value(c, args["num_heads"])), shift_size=_pair(_value(c, args["shift_size"])),
                  extra_params=max(extra, 0), extra_buffers=extra_buffers, qkv_bias=args["qkv_bias"] is not None,
                  proj_bias=args["proj_bias"] is not None)


def _functions() -> dict:
    return {
        "add": _binary("add"), "iadd": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"),
        "imul": _binary("mul"), "truediv": _binary("div"), "div": _binary("div"),
        "relu": _unary("relu"), "relu_": _unary("relu"), "relu6": _unary("relu6"), "gelu": _gelu_fn,
        "silu": _unary("silu"), "hardswish": _unary("hardswish"), "hardsigmoid": _unary("hardsigmoid"),
        "sigmoid": _unary("sigmoid"), "tanh": _unary("tanh"),
        "softmax": _softmax_fn("softmax"), "log_softmax": _softmax_fn("log_softmax"),
        "cat": _cat, "concat": _cat, "flatten": _flatten_fn, "reshape": _reshape, "permute": _permute,
        "transpose": _transpose, "swapaxes": _transpose, "matmul": _matmul, "bmm": _matmul,
        "scaled_dot_product_attention": _sdpa, "linear": _linear_fn, "layer_norm": _layer_norm_fn,
        "max_pool2d": _pool_fn("max_pool2d"), "avg_pool2d": _pool_fn("avg_pool2d"),
        "adaptive_avg_pool2d": _adaptive_fn("adaptive_avg_pool2d"),
        "adaptive_max_pool2d": _adaptive_fn("adaptive_max_pool2d"), "interpolate": _interpolate,
        "dropout": _dropout_fn, "pad": _pad, "roll": _roll, "einsum": _einsum, "mean": _mean, "chunk": _split,
        "split": _split, "getitem": _getitem, "stochastic_depth": _stochastic_depth,
        "_patch_merging_pad": _patch_merging_pad, "shifted_window_attention": _window_attention,
        "contiguous": _identity, "select": _select, "narrow": _narrow,
    }


def _methods() -> dict:
    f = _functions()
    return {
        "view": _reshape, "reshape": _reshape, "flatten": _flatten_fn, "permute": _permute, "transpose": _transpose,
        "contiguous": _identity, "unsqueeze": _reshape, "squeeze": _reshape, "expand": _expand, "mean": _mean,
        "chunk": _split, "split": _split, "softmax": f["softmax"], "sigmoid": f["sigmoid"], "relu": f["relu"],
        "add": f["add"], "mul": f["mul"], "sub": f["sub"], "div": f["div"], "matmul": _matmul,
        "swapaxes": _transpose, "select": _select, "narrow": _narrow, "gelu": f["gelu"],
    }


_FUNCTIONS = _LazyTable(_functions)
_METHODS = _LazyTable(_methods)
