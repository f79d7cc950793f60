"""The op registry: one ``OpRule`` per op kind, holding its attributes, shape rule, cost rule, parameter rule,
memory behaviour and pen-and-paper formula together. Rules are registered once (a duplicate is an error) and look
only at shapes and attributes: no tensors, no torch.

Shapes given to rules are per sample (batch dimension left out); everything a rule returns is per sample too, except
parameter counts, which do not depend on the batch. ``core.graph`` scales by the batch size.

Convention (stated once, shown in the UI): **1 multiply-add (MAC) = 2 FLOPs.** MACs are counted for conv, linear,
matmul and attention (the multiply-adds that torchvision's "GFLOPS", torchinfo and fvcore report); for those ops
FLOPs = 2 × MACs, the bias add absorbed (K multiplies + (K−1) adds + 1 bias add = 2K per output).
Elementwise, normalisation and pooling ops add FLOPs but no MACs.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from math import isfinite, prod
from typing import Any, Callable

from .errors import NetworkError, digits

FLOPS_PER_MAC = 2

# Classes of work: which calibrated efficiency and per-call overhead of a device apply to a node (each rule says its
# class, ``OpRule.work``). A device without a figure for "pool" or "shape" uses its "elementwise" one (WORK_FALLBACK):
# windowed pooling got its own class after the first calibrations; shape ops (concat, pad) are copies. Depthwise
# convs (groups = input channels: MobileNet, EfficientNet, MNASNet) split from "grouped_conv" (ResNeXt, RegNet) later:
# on a CPU they ran at a third of a grouped conv's rate (backward: ~0.05 of the peak against ~0.4), so one figure
# made the depthwise networks' training step 25–40 % too fast; a device calibrated before the split, and the GPU
# model's fitted "grouped_conv", stand for both. BatchNorm split from "elementwise" at the same time: in train mode it
# first reads its input for the batch statistics, and on our CPU its training forward ran ~3× its inference one,
# where a ReLU's ran ~1.5×; one figure for both made every BatchNorm network's training forward 25–40 % too fast.
# Depthwise convs with kernels larger than 3×3 (EfficientNet's, MNASNet's and MobileNet V3's 5×5, ConvNeXt's 7×7)
# split from "depthwise_conv" last: on an AMD EPYC their weight gradient ran at a third of a 3×3's rate per FLOP
# and their forward at twice it, so one figure made those networks' training step 20–30 % too fast. Pointwise convs
# (1×1, stride 1: ResNet bottlenecks, every inverted residual's expand and project) split from "conv" after: on the
# AMD EPYC the suite's ran at 0.5–0.7 of the peak where 3×3s of 64 channels and more ran at 0.9–1, so one figure
# made ResNet-34's forward 14–31 % too slow, and ResNet-50's right only by the two errors cancelling (calibration
# times them in the training passes only: core.bridge.calibrate_suites.TRAINING_ONLY). "im2col_conv" is no op's
# class: a calibrated CPU gives it to the convs PyTorch runs as im2col + GEMM at batch 1 (core.work.im2col_conv).
WORK_CLASSES = ("conv", "pointwise_conv", "im2col_conv", "grouped_conv", "depthwise_conv", "depthwise_conv_large",
                "linear", "pool", "batch_norm", "elementwise", "shape")
WORK_FALLBACK = {"pointwise_conv": "conv", "im2col_conv": "conv", "pool": "elementwise", "shape": "elementwise",
                 "depthwise_conv": "grouped_conv", "depthwise_conv_large": "depthwise_conv",
                 "batch_norm": "elementwise"}


@lru_cache(maxsize=None)       # a handful of classes, asked per layer and term
def work_fallbacks(work_class: str | None) -> tuple[str, ...]:
    """The class and the classes whose figures stand for it, nearest first: ("depthwise_conv_large",
    "depthwise_conv", "grouped_conv")."""
    chain = []
    while work_class is not None and work_class not in chain:
        chain.append(work_class)
        work_class = WORK_FALLBACK.get(work_class)
    return tuple(chain)


MAX_DIM = 2 ** 24          # 16,777,216: larger tensor dimensions are rejected as absurd (10^12 channels)
MAX_ELEMS = 2 ** 53        # elements of one tensor per sample (a petabyte): more is absurd, and exact as a float
MAX_WORK = 2 ** 80         # FLOPs, MACs or parameters of one node per sample: more is absurd (~10^24)


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED = _Required()


@dataclass(frozen=True)
class Attr:
    """An attribute of an op. ``kind`` is one of: ``int`` (any integer), ``pos`` (integer ≥ 1), ``nonneg``
    (integer ≥ 0), ``pair`` (int or 2 ints, each ≥ 1), ``pair0`` (each ≥ 0), ``bool``, ``float``, ``padding``
    (``pair0`` or "same"/"valid"), ``ints`` (a list of integers), ``opt_pair`` (pair whose entries may be null),
    ``opt_pair_stride`` (null or ``pair``), ``opt_pos`` / ``opt_bool`` / ``opt_float`` (null or that kind), ``prob``
    (a number in [0, 1]), ``nonneg_float`` (a number ≥ 0), ``text`` (a string), ``opt_size`` (null or ``pair``,
    kept as given), ``opt_scale`` (null, or a positive number or pair of them, kept as given), ``choice`` (one of
    ``choices``). Every kind is checked: a wrong type or an absurd value is a ``NetworkError`` naming the node, the
    field and the value."""

    name: str
    kind: str
    default: Any = REQUIRED
    choices: tuple = ()
    doc: str = ""


@dataclass(frozen=True)
class Cost:
    """Per-sample arithmetic of one node. ``bwd_input`` holds the FLOPs of the gradient w.r.t. each input, in input
    order (only inputs that carry a gradient are counted by ``core.graph``); ``bwd_weight`` the FLOPs of the
    gradient w.r.t. the node's own parameters."""

    macs: int = 0
    flops: int = 0
    bwd_input: tuple[int, ...] = ()
    bwd_weight: int = 0
    bwd_shared: int = 0                      # needed once if any of ``bwd_shared_inputs`` carries a gradient
    bwd_shared_inputs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Params:
    trainable: int = 0
    buffers: int = 0     # non-trainable state such as BatchNorm running mean/var (not counted as parameters)
    frozen: int = 0      # parameters that are not trained (requires_grad=False)


@dataclass(frozen=True)
class Saves:
    """What the op keeps for its backward pass: which inputs (by index), whether its output, and buffers of its own
    with a fixed byte width whatever the precision: per sample (max-pool int64 indices, a dropout byte mask,
    LayerNorm's fp32 per-row statistics) or per batch (BatchNorm's fp32 per-channel statistics)."""

    inputs: tuple[int, ...] = ()
    output: bool = False
    extra_bytes: int = 0   # per sample
    fixed_bytes: int = 0   # per batch


@dataclass(frozen=True)
class Ctx:
    """What every rule sees: the node's name, its attributes with defaults filled in, per-sample input shapes, and
    (for all rules but ``shape``) the per-sample output shape."""

    node: str
    attrs: dict
    ins: tuple[tuple[int, ...], ...]
    out: tuple[int, ...] = ()

    def __getitem__(self, key: str) -> Any:
        return self.attrs[key]

    def fail(self, reason: str, field: str | None = None, value: Any = None) -> NetworkError:
        return NetworkError(reason, node=self.node, field=field, value=shown(value))

    @property
    def x(self) -> tuple[int, ...]:
        return self.ins[0]


@dataclass(frozen=True)
class FormulaLine:
    """One pen-and-paper step: ``label`` (e.g. "MACs"), the formula in symbols, the same with numbers substituted,
    and its value."""

    label: str
    symbolic: str
    substituted: str
    value: int

    def __str__(self) -> str:
        return f"{self.label} = {self.symbolic} = {self.substituted} = {self.value:,}"


def _no_params(ctx: Ctx) -> Params:
    return Params()


def _no_saves(ctx: Ctx) -> Saves:
    return Saves()


# -- what a rule says about running its op: class of work, CPU allocations, channel coupling ---------------------

def _allocates_output(ctx: Ctx, batch: int, act_bytes: int, weight_bytes: int) -> tuple:
    """The default CPU allocation: the output, unless the node runs in place (``inplace`` attribute)."""
    return () if ctx.attrs.get("inplace") else (("out",),)


CHANNEL_KINDS = ("new", "pass", "unify", "none", "depthwise")
FUSION_KINDS = ("none", "epilogue", "operand")


@dataclass(frozen=True)
class TorchModule:
    """How a node becomes PyTorch: ``<origin>.<cls>(**kwargs)``, called as ``call`` says (on the node's inputs)."""

    cls: str
    kwargs: dict
    call: str = "{own}({args})"
    origin: str = "torch.nn"


@dataclass(frozen=True)
class TorchParam:
    """A tensor ``torch.zeros(1, *shape)`` expanded over the batch: an ``nn.Parameter``, or a buffer. ``stored``
    is set when the IR derives the tensor from that many stored elements in a way it does not record: then only the
    stored elements are built, and no node may read the tensor."""

    shape: tuple[int, ...]
    trainable: bool
    buffer: bool = False
    stored: int | None = None


@dataclass(frozen=True)
class TorchExpr:
    """A functional node: a Python expression over the input variables (``torch`` and ``F`` in scope)."""

    code: str


def cannot_convert(n, reason: str) -> NetworkError:
    """What a ``to_torch`` raises for a node (``core.graph.NodeInfo``) that torch has no equivalent of."""
    return NetworkError(f"cannot be converted to PyTorch: {reason}", node=n.name, field="op", value=n.op)


IMPORT_KINDS = ("module", "function", "method")


@dataclass(frozen=True)
class Importer:
    """A PyTorch callable that imports to this op (``core.bridge.fx_import``): ``kind`` is "module" (an ``nn``
    class, by dotted path), "function" (a function object, by dotted path) or "method" (a ``Tensor`` method, by
    name); ``handler(c, n)`` — ``handler(c, n, module)`` for modules — emits IR nodes through the converter ``c``
    and returns the IR name of the result."""

    kind: str
    target: str
    handler: Callable


@dataclass(frozen=True)
class OpRule:
    """Everything the engine knows about one op. Besides its shape, cost, parameters, memory and formula:

    * ``work``: its class of work (``WORK_CLASSES``), a string or a function of the node: which calibrated
      efficiency and per-call overhead of a device apply (``core.terms``);
    * ``fusion``: what it costs in the fused view (``FUSION_KINDS``): "epilogue" (activations, normalisation) runs
      in its producer's epilogue with no memory round trip; "operand" (a residual add) joins the epilogue and reads
      only its other operands; "none" runs on its own;
    * ``cpu_alloc(ctx, batch, act_bytes, weight_bytes)``: the blocks a CPU forward call allocates, in the order
      glibc sees them (``core.cpu_heap``): ``("alloc", bytes)`` a temporary, ``("free", j)`` the j-th temporary,
      ``("out",)`` the output; views allocate nothing whatever this says;
    * ``channel``: how the output's feature channels relate to the inputs', for what-if edits (``core.edit``):
      "new": the node defines them (field ``channel_field``); "pass": same as input 0; "unify": all inputs of equal
      channel size are tied together (residual add); "none": derived, not an edit target; "depthwise": the node's
      ``follow`` says how its attributes follow its input channels. A string or a function of the node;
    * ``algorithms(ctx, name)``: (FLOPs per sample, FLOPs per batch) of the forward pass computed by another
      algorithm (``core.choices.CONV_ALGORITHMS``: Winograd, FFT), None where it does not apply; an op without it
      is always computed directly;
    * ``gemm(ctx, batch)``: (groups, M, N) of the forward pass as implicit GEMMs at ``batch`` (the GPU model tiles
      their outputs over the SMs, ``core.gpu_model``); None for an op that is not a GEMM;
    * ``follow(ctx, channels)``: the attribute changes that keep a "depthwise" node valid when its input gets
      ``channels`` channels;
    * ``to_torch(node, input_names)``: how a compiled node becomes PyTorch (``core.bridge.to_torch``): a
      ``TorchModule``, ``TorchParam`` or ``TorchExpr``; it raises ``cannot_convert`` when nothing can be built.
      Required;
    * ``imports``: the PyTorch callables that import to it (``core.bridge.fx_import``), by dotted path or method
      name, so that this module never imports torch.
    """

    kind: str
    # conv | linear | matmul | attention | norm | activation | pool | elementwise | shape | misc
    category: str
    attrs: tuple[Attr, ...]
    shape: Callable[[Ctx], tuple[int, ...]]
    cost: Callable[[Ctx], Cost]
    formula: Callable[[Ctx, int], list[FormulaLine]]
    params: Callable[[Ctx], Params] = _no_params
    saves: Callable[[Ctx], Saves] = _no_saves
    arity: tuple[int, int | None] = (1, 1)
    alias: bool = False      # the output is a view of input 0: no new memory
    copies_in_training: bool = False   # an alias at inference that makes a new tensor in training (dropout)
    stored: bool = False     # the output is a stored tensor (a parameter or buffer), not an activation: it moves none
    channel: str | Callable[[Ctx], str] = "none"
    channel_field: str | None = None
    doc: str = ""
    torch: str = ""          # the PyTorch module or function this rule mirrors, as the docs name it
    work: str | Callable[[Ctx], str] = field(default=None, kw_only=True)
    fusion: str = field(default="none", kw_only=True)
    cpu_alloc: Callable[[Ctx, int, int, int], tuple] = field(default=_allocates_output, kw_only=True)
    follow: Callable[[Ctx, int], dict] | None = field(default=None, kw_only=True)
    algorithms: Callable[[Ctx, str], tuple[int, int] | None] | None = field(default=None, kw_only=True)
    gemm: Callable[[Ctx, int], tuple[int, int, int]] | None = field(default=None, kw_only=True)
    to_torch: Callable[[Any, list[str]], TorchModule | TorchParam | TorchExpr] = field(default=None, kw_only=True)
    imports: tuple[Importer, ...] = field(default=(), kw_only=True)

    def __post_init__(self):
        for name, value, allowed in (("work", self.work, WORK_CLASSES), ("channel", self.channel, CHANNEL_KINDS),
                                     ("fusion", self.fusion, FUSION_KINDS)):
            if not callable(value) and value not in allowed:
                raise RuntimeError(f"op '{self.kind}': {name} {value!r} is not one of {', '.join(allowed)}")
        if not callable(self.to_torch):
            raise RuntimeError(f"op '{self.kind}' has no to_torch: say how it becomes PyTorch (raise cannot_convert "
                               "where nothing can be built)")
        for imp in self.imports:
            if imp.kind not in IMPORT_KINDS or not callable(imp.handler):
                raise RuntimeError(f"op '{self.kind}': importer {imp.target!r} needs a kind among "
                                   f"{', '.join(IMPORT_KINDS)} and a handler")

    def work_class(self, ctx: Ctx) -> str:
        """Which class of work this node is (``WORK_CLASSES``)."""
        w = self.work(ctx) if callable(self.work) else self.work
        if w not in WORK_CLASSES:
            raise RuntimeError(f"op '{self.kind}' gave class of work {w!r}, not one of {', '.join(WORK_CLASSES)}")
        return w

    def channel_kind(self, ctx: Ctx) -> str:
        """How this node's output channels relate to its inputs' (``CHANNEL_KINDS``)."""
        return self.channel(ctx) if callable(self.channel) else self.channel


REGISTRY: dict[str, OpRule] = {}


def register(rule: OpRule) -> OpRule:
    if rule.kind in REGISTRY:
        raise RuntimeError(f"op '{rule.kind}' is registered twice")
    REGISTRY[rule.kind] = rule
    return rule


def get_rule(kind: str, node: str) -> OpRule:
    rule = REGISTRY.get(kind)
    if rule is None:
        close = difflib.get_close_matches(kind, REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known ops: {', '.join(sorted(REGISTRY))}"
        raise NetworkError(f"unknown op '{kind}'{hint}", node=node, field="op", value=kind)
    return rule


# -- attribute validation ----------------------------------------------------------------------------------------

class _Shown:
    """A value too big to print whole in a message; its repr says what it was."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


_SHOWN_DIGITS = 40          # integers longer than this are described, not printed (str() refuses 4,300+ digits)
_SHOWN_CHARS = 100
_SHOWN_ITEMS = 16


_SHOWN_DEPTH = 4


def shown(v: Any, depth: int = 0) -> Any:
    """``v`` as an error message may print it: integers too long to convert to text, long strings and long or
    deeply nested lists are abbreviated (a message must never raise while it is being formatted)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if v.bit_length() > _SHOWN_DIGITS * 3.33:
            return _Shown(f"<{'-' if v < 0 else ''}an integer of {digits(v):,} digits>")
        return v
    if isinstance(v, str) and len(v) > _SHOWN_CHARS:
        return _Shown(repr(v[:_SHOWN_CHARS]) + f"… ({len(v):,} characters)")
    if isinstance(v, (tuple, list)):
        if depth >= _SHOWN_DEPTH:
            return _Shown("[…]" if isinstance(v, list) else "(…)")
        items = tuple(shown(x, depth + 1) for x in v[:_SHOWN_ITEMS])
        if len(v) > _SHOWN_ITEMS:
            return _Shown("(" + ", ".join(map(repr, items)) + f", … {len(v):,} items)")
        return items if isinstance(v, tuple) else list(items)
    if v is None or isinstance(v, (bool, float, str)):
        return v
    try:
        text = repr(v)
    except Exception:             # noqa: BLE001 — a value whose repr fails (a dict holding a huge integer)
        return _Shown(f"<a {type(v).__name__}>")
    return _Shown(text[:_SHOWN_CHARS] + "…") if len(text) > _SHOWN_CHARS else v


def _fail(reason: str, node: str, name: str, value: Any) -> NetworkError:
    return NetworkError(reason, node=node, field=name, value=shown(value))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def finite_number(v: Any) -> float | None:
    """``v`` as a finite float, or None where it is not a number (booleans are not), is infinite or NaN, or is an
    integer too large for a float."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if isfinite(f) else None


def _pair(v: Any, minimum: int, node: str, name: str) -> tuple[int, int]:
    if _is_int(v):
        v = (v, v)
    if not (isinstance(v, tuple) and len(v) == 2 and all(_is_int(a) for a in v)):
        raise _fail("expected an integer or a pair of integers", node, name, v)
    if min(v) < minimum:
        raise _fail(f"must be ≥ {minimum}", node, name, v)
    if max(v) > MAX_DIM:
        raise _fail(f"is absurdly large (limit {MAX_DIM:,})", node, name, v)
    return v


def validate_attrs(rule: OpRule, node: str, given: dict) -> dict:
    known = {a.name for a in rule.attrs}
    for k in given:
        if k not in known:
            close = difflib.get_close_matches(k, known, n=1)
            hint = (f" (did you mean '{close[0]}'?)" if close
                    else f" ({rule.kind} takes: {', '.join(sorted(known)) or 'none'})")
            raise NetworkError(f"unknown attribute for op '{rule.kind}'{hint}", node=node, field=k,
                               value=shown(given[k]))
    out = {}
    for a in rule.attrs:
        if a.name not in given:
            if a.default is REQUIRED:
                raise NetworkError(f"required by op '{rule.kind}'", node=node, field=a.name)
            out[a.name] = a.default if a.default is None else _check(a, a.default, node)
            continue
        out[a.name] = _check(a, given[a.name], node)
    return out


def _float(v: Any, node: str, name: str) -> float:
    f = finite_number(v)
    if f is None:
        raise _fail("is too large for a number" if _is_int(v) else "expected a finite number", node, name, v)
    return f


_OPTIONAL = {"opt_pos": "pos", "opt_nonneg": "nonneg", "opt_bool": "bool", "opt_float": "float",
             "opt_pair_stride": "pair", "opt_size": "pair"}


def _check(a: Attr, v: Any, node: str) -> Any:
    k = a.kind
    if k in _OPTIONAL:
        if v is None:
            return None
        checked = _check(Attr(a.name, _OPTIONAL[k]), v, node)
        return v if k == "opt_size" else checked
    if k in ("int", "pos", "nonneg"):
        if not _is_int(v):
            raise _fail("expected an integer", node, a.name, v)
        if k == "pos" and v < 1:
            raise _fail("must be a positive integer", node, a.name, v)
        if k == "nonneg" and v < 0:
            raise _fail("must be ≥ 0", node, a.name, v)
        if abs(v) > MAX_DIM:
            raise _fail(f"is absurdly large (limit {MAX_DIM:,})", node, a.name, v)
        return v
    if k == "pair":
        return _pair(v, 1, node, a.name)
    if k == "pair0":
        return _pair(v, 0, node, a.name)
    if k == "padding":
        if isinstance(v, str):
            if v not in ("same", "valid"):
                raise _fail("padding must be an integer, a pair, 'same' or 'valid'", node, a.name, v)
            return v
        return _pair(v, 0, node, a.name)
    if k == "bool":
        if not isinstance(v, bool):
            raise _fail("expected true or false", node, a.name, v)
        return v
    if k == "float":
        return _float(v, node, a.name)
    if k == "nonneg_float":
        f = _float(v, node, a.name)
        if f < 0:
            raise _fail("must be ≥ 0", node, a.name, v)
        return f
    if k == "text":
        if not isinstance(v, str):
            raise _fail("expected a string", node, a.name, v)
        return v
    if k == "ints":
        if _is_int(v):
            v = (v,)
        if not (isinstance(v, tuple) and all(_is_int(i) for i in v)):
            raise _fail("expected a list of integers", node, a.name, v)
        if any(abs(i) > MAX_DIM for i in v):
            raise _fail(f"is absurdly large (limit {MAX_DIM:,})", node, a.name, v)
        return v
    if k == "opt_pair":
        if v is None:
            raise _fail("null is not an output size (torch refuses None): give a positive integer or a pair; "
                        "[null, null] keeps both sides", node, a.name, v)
        if _is_int(v):
            v = (v, v)
        if not (isinstance(v, tuple) and len(v) == 2
                and all(i is None or (_is_int(i) and 1 <= i <= MAX_DIM) for i in v)):
            raise _fail("expected a positive integer or a pair of them; an entry may be null (that side keeps its "
                        "size)", node, a.name, v)
        return v
    if k == "opt_scale":
        if v is None:
            return None
        s = v if isinstance(v, tuple) else (v,)
        if len(s) != (2 if isinstance(v, tuple) else 1) or any(_is_int(x) and x > MAX_DIM for x in s) \
                or any(finite_number(x) is None or x <= 0 for x in s):
            raise _fail("expected a positive number or a pair of them", node, a.name, v)
        return v
    if k == "prob":
        p = _float(v, node, a.name)
        if not 0.0 <= p <= 1.0:
            raise _fail("must be a probability between 0 and 1", node, a.name, v)
        return p
    if k == "choice":
        if v not in a.choices:
            raise _fail(f"must be one of {', '.join(map(repr, a.choices))}", node, a.name, v)
        return v
    raise RuntimeError(f"attribute kind {k!r} of {a.name} has no check")


def numel(shape: tuple[int, ...]) -> int:
    return prod(shape)
