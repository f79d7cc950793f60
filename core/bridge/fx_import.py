"""nn.Module → IR: trace with torch.fx, run the graph on shape-only tensors, and map every call to an IR op.

No weights are allocated for the analysis: a module on the "meta" device is run on meta tensors, any other module
under a FakeTensorMode (shapes only, no arithmetic). Shapes come from PyTorch itself, so the IR's shape propagation
is checked against them node by node.

Which torch calls import to which op, and how, is said by the rules themselves (``OpRule.imports`` in ``core.ops``):
``nn`` modules by class, functions by the function object itself, ``Tensor`` methods by name (fx records them as
strings). This module is the machinery, over ``core.bridge.fx_trace``'s tracing and running on fake tensors:
constants, opaque nodes, shape checks, and the small API the importers call (``_Converter.arg``, ``value``,
``emit``, ``ref``, ``claim``, …).

In place is kept: ``nn.ReLU(inplace=True)``, ``F.relu(x, inplace=True)``, ``x.relu_()`` and ``out += x`` give IR
nodes with ``inplace=True`` (fx records ``+=`` as ``operator.add``; the tracer of ``fx_trace`` records
``operator.iadd``).

An op the IR has no rule for becomes an explicit ``opaque`` node with torch's shape, and is listed in
``ImportResult.unsupported`` and the warnings — never counted as zero in silence. Computation that does not depend on
the input (relative-position tables, a bias MLP over a constant grid) is done once per forward, whatever the batch:
its parameters are counted, its arithmetic is not modelled (a warning says so).

Shapes are recorded as traced, so most networks re-propagate only at the traced input size; a view that only
regroups leading dims and keeps the input's last dims (ShuffleNet's channel shuffle, [C, H, W] → [2, C/2, H, W])
records them as kept (``reshape.keep_trailing``), so it holds at any H, W (see ``core.ops.shape._kept_trailing``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import NetworkError
from ..graph import compile_network
from ..ir import Network, Node, unique_name
from ..registry import REGISTRY, OpRule
from .fx_trace import TRACE_BATCH, _run, _trace


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
        gm = _trace(module, shape)
        values = _run(gm, module, shape)
    finally:
        module.train(was_training)
    conv = _Converter(gm, module, values, shape, name or type(module).__name__)
    network = conv.convert()
    return ImportResult(network, tuple(conv.warnings), tuple(conv.opaque_calls))


# == which torch calls import to which op ==========================================================================

class ImportTable(NamedTuple):
    """The rules' importers, resolved: each value is (rule, handler)."""

    modules: dict        # nn.Module class → (rule, handler(c, n, module)); subclasses match too
    functions: dict      # function object → (rule, handler(c, n))
    methods: dict        # Tensor method name → (rule, handler(c, n))
    unresolved: tuple[str, ...]     # targets that name nothing (a typo, or a library not imported yet)


def _resolve(path: str) -> Any:
    """The object at a dotted path, looked up in modules already imported (none is imported here: torchvision's
    functions resolve once a model that uses them has imported torchvision); None if there is none."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:i]))
        if obj is None:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def import_table(rules: dict[str, OpRule] | None = None) -> ImportTable:
    """Every importer of ``rules`` (default: the registry), keyed by the torch object itself (methods by name).
    The same object (or method name) registered twice is an error."""
    import torch

    tables: dict[str, dict] = {"module": {}, "function": {}, "method": {}}
    where: dict[Any, str] = {}
    unresolved = []
    for rule in (REGISTRY if rules is None else rules).values():
        for imp in rule.imports:
            key = imp.target if imp.kind == "method" else _resolve(imp.target)
            if imp.kind == "module" and not (isinstance(key, type) and issubclass(key, torch.nn.Module)):
                key = None
            if key is None or (imp.kind == "function" and (isinstance(key, type) or not callable(key))):
                unresolved.append(imp.target)
                continue
            table = tables[imp.kind]
            if key in table:
                raise RuntimeError(f"{imp.kind} {imp.target} imports to op '{rule.kind}' and also to op "
                                   f"'{table[key][0].kind}' (as {where[imp.kind, key]})")
            table[key] = (rule, imp.handler)
            where[imp.kind, key] = imp.target
    return ImportTable(tables["module"], tables["function"], tables["method"], tuple(unresolved))


class _Converter:
    def __init__(self, gm, root, values: dict, shape: tuple, name: str):
        import torch

        self.torch = torch
        self.table = import_table()
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
        self.opaque_calls: list[str] = []  # (not `unsupported`: that is the method the importers raise with)
        # traced symbolically: a size read off a tensor is an fx node, so an integer argument is one the code wrote
        self.symbolic_sizes = not getattr(gm, "concrete_sizes", False)

    # -- helpers ------------------------------------------------------------------------------------------------
    def unique(self, base: str) -> str:
        return unique_name(base, self.names, vars(self).setdefault("name_counters", {}))  # linear, not quadratic

    def scoped(self, n) -> str:
        """A readable name for a function or method call: the module it runs in, then the call
        ("layer1.0.add", as the calculator's own ResNet names it); "flatten" at the top level."""
        short = _function_key(n.target) if n.op == "call_function" else str(n.target)
        short = {"getitem": "select", "cat": "concat", "iadd": "add", "imul": "mul", "isub": "sub",
                 "itruediv": "truediv"}.get(short, short)
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

    # -- what the importers of core.ops call (besides emit, ref, scoped and out_shape) ------------------------
    @staticmethod
    def arg(n, i: int, key: str, default=None):
        """Argument ``i`` of call ``n``, or its keyword ``key``: an fx node or a Python value."""
        if len(n.args) > i:
            return n.args[i]
        return n.kwargs.get(key, default)

    def value(self, a):
        """The value of an argument: an fx node's (a fake tensor, or a Python value), lists element by element."""
        import torch.fx as fx

        if isinstance(a, fx.Node):
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        return a

    @staticmethod
    def pair(v) -> tuple:
        return tuple(v) if isinstance(v, (tuple, list)) else (v, v)

    def is_tensor(self, a) -> bool:
        """Whether an argument is an fx node whose value is a tensor."""
        return hasattr(a, "op") and isinstance(self.values[a], self.torch.Tensor)

    def result(self, a):
        """What an fx node became: an IR name, a list of them (a split, a tuple output), or a constant."""
        return self.ir[a]

    def claim(self, args) -> tuple[int, int]:
        """Count the parameters the constant arguments ``args`` were computed from as this node's, once: returns
        the elements of those not counted before, and of the buffers among them."""
        own = frozenset().union(*(self.ir[a].params for a in args if hasattr(a, "op")
                                  and isinstance(self.ir.get(a), _Const)))
        params, buffers = dict(self.gm.named_parameters()), dict(self.gm.named_buffers())
        fresh = sum(params[p].numel() for p in own if p in params and p not in self.counted)
        self.counted.update(own)
        return fresh, sum(buffers[b].numel() for b in own if b in buffers)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    @staticmethod
    def unsupported(n, why: str) -> Exception:
        """Raise it when a call cannot be represented: the node becomes ``opaque``, saying ``why``."""
        return _Unsupported(n, why)

    @staticmethod
    def unbatched(n) -> Exception:
        """Raise it when a call's output would not keep the batch first."""
        return _Unbatched(n)

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
            rule = self.table.functions.get(n.target, (None,))[0] if n.op == "call_function" else None
            if n.op == "call_module" or (rule is not None and rule.work == "linear"):   # a matrix product
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
        self.opaque_calls.append(target)
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
                                 f"(once per forward) is not: {', '.join(const[:6])}"
                                 + (" …" if len(const) > 6 else ""))
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
            found = self.table.modules.get(type(mod))
            if found is None:
                found = next((v for cls, v in self.table.modules.items() if isinstance(mod, cls)), None)
            if found is None:
                raise _Unsupported(n, f"module {type(mod).__name__}")
            count = self.module_calls.get(n.target, 0)
            self.module_calls[n.target] = count + 1
            if count:
                self.warnings.append(f"{n.target} is called {count + 1} times; each call is a node")
            else:
                self.claim_module(n.target, mod)
            return found[1](self, n, mod)
        found = (self.table.methods if n.op == "call_method" else self.table.functions).get(n.target)
        if found is None:
            raise _Unsupported(n, f"{'method' if n.op == 'call_method' else 'function'} {_target_name(n)}")
        return found[1](self, n)


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
    if isinstance(t, str):
        return t
    return f"{getattr(t, '__module__', '') or ''}.{getattr(t, '__name__', repr(t))}".lstrip(".")


def _function_key(fn) -> str:
    return getattr(fn, "__name__", repr(fn))
