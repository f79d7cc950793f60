"""The notebook / script API: ``analyze(model, input_shape=None, batch_size=1, dtype="fp32")`` and the PALEO
estimates on any model it takes (``estimate``, ``sweep``, ``scaling``). Loading models — built-in names, IR JSON
files, ``file.py:Class``, PyTorch modules — happens here and nowhere else."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from . import paleo, zoo
from .choices import DEFAULT_DTYPE, DEFAULT_OPTIMIZER
from .errors import NetworkError
from .graph import compile_network
from .ir import Network
from .report import Report, check_batch

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
    except Exception as e:  # noqa: BLE001 — user code: report it in one line
        raise NetworkError(f"running {path} failed: {type(e).__name__}: {e}", field="model", value=spec) from None
    factory = getattr(module, cls, None)
    if factory is None:
        raise NetworkError(f"{path} defines no '{cls}'", field="model", value=spec)
    try:
        instance = factory()
    except Exception as e:  # noqa: BLE001
        raise NetworkError(f"{cls}() failed: {type(e).__name__}: {e}", field="model", value=spec) from None
    if not _is_torch_module(instance):
        raise NetworkError(f"{cls}() is not a torch.nn.Module", field="model", value=spec)
    from .bridge.fx_import import from_module

    return from_module(instance, parse_shape(input_shape), name=cls).network


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
        from .bridge.fx_import import from_module

        return from_module(model, parse_shape(input_shape), name=type(model).__name__).network
    if isinstance(model, str) and _PY_CLASS.match(model):
        return _load_python_class(model, input_shape)
    if isinstance(model, str):
        if model.endswith(".json") or os.path.sep in model:
            try:
                with open(model, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise NetworkError(f"cannot read the file: {e.strerror}", field="model", value=model) from None
            except UnicodeDecodeError:
                raise NetworkError("the file is not UTF-8 text", field="model", value=model) from None
            return Network.from_json(text)
        return zoo.get(model)
    raise NetworkError(f"expected a built-in name, a JSON path or a Network, got {type(model).__name__}",
                       field="model", value=repr(model)[:80])


def parse_shape(text: Any) -> tuple[int, ...]:
    """'3x224x224', '3,224,224', (3, 224, 224) → (3, 224, 224): the per-sample input shape, batch excluded."""
    if isinstance(text, (tuple, list)):
        if not all(isinstance(p, int) and not isinstance(p, bool) for p in text):
            raise NetworkError("input shape must be whole numbers, like (3, 224, 224)", field="input_shape",
                               value=text)
        parts = list(text)
    else:
        parts = [p for p in str(text).lower().replace("×", "x").replace(",", "x").replace(" ", "").split("x") if p]
    try:
        shape = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise NetworkError("input shape must look like 3x224x224 (batch excluded)", field="input_shape",
                           value=text) from None
    if not shape or any(d < 1 for d in shape):
        raise NetworkError("input shape needs positive dimensions, like 3x224x224", field="input_shape", value=text)
    return shape


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
    if input_shape is not None and not converted:
        network = network.with_input_shape(parse_shape(input_shape))
    return Report(compile_network(network), batch_size, dtype, optimizer)


def estimate(model: Any, device: Any, batch_size: int = 1, dtype: str = DEFAULT_DTYPE, *,
             optimizer: str = DEFAULT_OPTIMIZER, input_shape: Any = None, **settings) -> paleo.Estimate:
    """PALEO estimate of any model ``analyze`` takes on ``device`` (id, name or Device); ``settings`` as
    ``core.paleo.Estimate`` takes them (ppp, ppp_memory, variant, conv_algorithm, fused, workers, link, …)."""
    report = model if isinstance(model, Report) else analyze(model, input_shape, batch_size, dtype, optimizer)
    return paleo.estimate(report, device, batch_size, dtype, optimizer=optimizer, **settings)


def sweep(model: Any, devices, batch_sizes, dtype: str | None = DEFAULT_DTYPE, *, input_shape: Any = None,
          **kw) -> list[paleo.Estimate]:
    """``core.paleo.sweep`` on any model ``analyze`` takes: every device × batch size on one analysis."""
    report = model if isinstance(model, Report) else analyze(model, input_shape)
    return paleo.sweep(report, devices, batch_sizes, dtype, **kw)


def scaling(model: Any, device: Any, link: Any, workers=(1, 2, 4, 8), batch_size: int = 64, mode: str = "strong",
            *, input_shape: Any = None, **kw) -> list[dict]:
    """``core.paleo.scaling`` (data-parallel speed-up and efficiency) on any model ``analyze`` takes."""
    report = model if isinstance(model, Report) else analyze(model, input_shape)
    return paleo.scaling(report, device, link, workers, batch_size, mode, **kw)
