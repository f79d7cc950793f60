"""The notebook / script API: ``analyze(model, input_shape=None, batch_size=1, dtype="fp32")`` and the PALEO
estimates on any model it takes (``estimate``, ``sweep``, ``scaling``). Loading models — built-in names, IR JSON
files, ``file.py:Class``, PyTorch modules — happens here and nowhere else."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from . import paleo, sweeps, zoo
from .choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER
from .errors import NetworkError
from .files import NETWORK_FILE_LIMIT, read_text
from .graph import compile_network
from .ir import Network
from .report import Report, check_batch
from .settings import check_settings
from .shapes import parse_shape

TIMM_PREFIX = "timm:"            # "timm:convnext_tiny": a timm model built with pretrained=False
_PY_CLASS = re.compile(r"^(?P<path>.+\.py):(?P<cls>[A-Za-z_][A-Za-z0-9_]*)$")


def _load_python_class(spec: str, input_shape: Any) -> Network:
    """``path/to/model.py:ClassName``: runs that file (the user named it) and converts ``ClassName()``."""
    m = _PY_CLASS.match(spec)
    path, cls = m.group("path"), m.group("cls")
    if input_shape is None:
        raise NetworkError("a Python model needs --input (per-sample shape, e.g. 1x28x28)", field="input_shape",
                           value=None)
    if not os.path.isfile(path):
        raise NetworkError("no such file", field="model", value=path)
    import importlib.util

    spec_ = importlib.util.spec_from_file_location(f"_cnn_calc_user_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec_)
    try:
        spec_.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 — user code (even sys.exit()): report it in one line
        raise NetworkError(f"running {path} failed: {_raised(e)}", field="model", value=spec) from None
    factory = getattr(module, cls, None)
    if factory is None:
        raise NetworkError(f"{path} defines no '{cls}'", field="model", value=spec)
    try:
        instance = factory()
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001
        raise NetworkError(f"{cls}() failed: {_raised(e)}", field="model", value=spec) from None
    if not _is_torch_module(instance):
        raise NetworkError(f"{cls}() is not a torch.nn.Module", field="model", value=spec)
    return _convert(instance, parse_shape(input_shape), cls)


def _convert(model: Any, shape: tuple[int, ...], name: str) -> Network:
    """``core.bridge.fx_import`` on a user's module: its forward is user code, and one that calls ``sys.exit()``
    is reported like any other failure instead of ending the process."""
    from .bridge.fx_import import from_module

    try:
        return from_module(model, shape, name=name).network
    except (SystemExit, GeneratorExit) as e:
        raise NetworkError(f"converting {name} failed: {_raised(e)}", field="model", value=name) from None


def _raised(e: BaseException) -> str:
    """What user code raised, in a few words: ``SystemExit: 0``, ``ZeroDivisionError: division by zero``."""
    if isinstance(e, SystemExit):
        return f"it called exit({e.code!r})"
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 — its __str__ may fail too
        text = ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _is_torch_module(model: Any) -> bool:
    torch = sys.modules.get("torch")            # a module can only exist if torch was imported already
    return torch is not None and isinstance(model, torch.nn.Module)


def load_network(model: Any, input_shape: Any = None) -> Network:
    """A ``Network``, a built-in name (``"resnet50"``), a path to an IR JSON file, or a ``torch.nn.Module`` (then
    ``input_shape`` is required; see ``core.bridge.fx_import``)."""
    if isinstance(model, Network):
        return model
    if isinstance(model, Report):            # re-analyse the same network at another batch size or precision
        return model.compiled.network
    if _is_torch_module(model):
        if input_shape is None:
            raise NetworkError("analysing an nn.Module needs input_shape, e.g. (3, 224, 224)", field="input_shape",
                               value=None)
        return _convert(model, parse_shape(input_shape), type(model).__name__)
    if isinstance(model, str) and _PY_CLASS.match(model):
        return _load_python_class(model, input_shape)
    if isinstance(model, str) and model.startswith(TIMM_PREFIX):
        # imports torch and timm: only when a timm model is asked
        from .bridge.timm_models import load_timm

        return load_timm(model[len(TIMM_PREFIX):], input_shape)
    if isinstance(model, str) and model.lower().endswith(".onnx"):
        # the onnx package only: nothing is executed
        from .onnx_import import load_onnx

        return load_onnx(model, input_shape)
    if isinstance(model, str):
        if model.endswith(".json") or os.path.sep in model:
            return Network.from_json(read_text(model, limit=NETWORK_FILE_LIMIT, error=NetworkError, field="model"))
        return zoo.get(model)
    raise NetworkError(f"expected a built-in name, a JSON path or a Network, got {type(model).__name__}",
                       field="model", value=model)


def analyze(model: Any, input_shape: Any = None, batch_size: int = 1, dtype: str = DEFAULT_DTYPE,
            optimizer: str = DEFAULT_OPTIMIZER) -> Report:
    """Analyse ``model`` (a built-in name, a JSON path, a ``Network`` or a ``torch.nn.Module``) at a batch size and
    precision.

    ``input_shape`` is per sample (``(3, 224, 224)``); by default the network's own. The network is compiled once
    and cached; a new batch size or dtype is pure arithmetic.
    """
    check_batch(batch_size)
    network = load_network(model, input_shape)
    converted = _is_torch_module(model) or (isinstance(model, str) and _PY_CLASS.match(model))
    if input_shape is None or converted:
        return Report(compile_network(network), batch_size, dtype, optimizer)
    own, shape = network.inputs[0][1] if network.inputs else (), parse_shape(input_shape)
    try:
        compiled = compile_network(network.with_input_shape(shape))
    except NetworkError as e:
        if not isinstance(model, str) or tuple(own) == shape:
            raise
        # a built-in or file network at another size than its own: say that the size is what it does not take
        # (the layer's own reason alone — "cannot view 37,632 elements as [768, 196]" — hides it)
        raise NetworkError(f"{model} was built for a {_dims(own)} input and does not run at {_dims(shape)} "
                           f"(keep its own size; an imported model can be imported again at this one): {e.reason}",
                           node=e.node, field=e.field, value=e.value) from None
    return Report(compiled, batch_size, dtype, optimizer)


def _dims(shape) -> str:
    return "×".join(map(str, shape))


def estimate(model: Any, device: Any, batch_size: int = 1, dtype: str = DEFAULT_DTYPE, *,
             optimizer: str = DEFAULT_OPTIMIZER, input_shape: Any = None, **settings) -> paleo.Estimate:
    """PALEO estimate of any model ``analyze`` takes on ``device`` (id, name or Device); ``settings`` as
    ``core.paleo.Estimate`` takes them (ppp, ppp_memory, variant, conv_algorithm, fused, workers, link, …)."""
    check_settings(settings, extra=("db",))
    report = model if isinstance(model, Report) else analyze(model, input_shape, batch_size, dtype, optimizer)
    return paleo.estimate(report, device, batch_size, dtype, optimizer=optimizer, **settings)


def sweep(model: Any, devices, batch_sizes, dtype: str | None = DEFAULT_DTYPE, *, input_shape: Any = None,
          **kw) -> list[paleo.Estimate]:
    """``core.sweeps.sweep`` on any model ``analyze`` takes: every device × batch size on one analysis."""
    report = model if isinstance(model, Report) else analyze(model, input_shape)
    return sweeps.sweep(report, devices, batch_sizes, dtype, **kw)


def scaling(model: Any, device: Any, link: Any, workers=(1, 2, 4, 8), batch_size: int = 64, mode: str = "strong",
            *, input_shape: Any = None, **kw) -> list[dict]:
    """``core.sweeps.scaling`` (data-parallel speed-up and efficiency) on any model ``analyze`` takes."""
    report = model if isinstance(model, Report) else analyze(model, input_shape)
    return sweeps.scaling(report, device, link, workers, batch_size, mode, **kw)
