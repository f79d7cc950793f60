"""Reading an ONNX file: its bytes, from a path or from memory, at most ``MAX_ONNX_BYTES`` (a file's size is
checked before it is read), decoded as a protobuf ModelProto by ``onnx.load_model_from_string`` (which never
opens the external files a large model keeps its weights in) and checked: a graph with nodes, every name UTF-8
text."""

from __future__ import annotations

import os
import stat
from typing import Any

from ..errors import NetworkError
from ..registry import shown
from .base import _first_line, _onnx

# protobuf cannot parse a message of 2 GiB or more, so no single-file ONNX model is larger: one that is keeps its
# weights in external files, which are never read here. Refusing a larger file before reading it keeps a 10 GB file
# (or /dev/zero) from being loaded into memory. Uploads in the app are capped lower (.streamlit/config.toml).
MAX_ONNX_BYTES = 2 ** 31 - 1


def _read(source: Any) -> tuple[bytes, str, str]:
    """The bytes of ``source`` (a path or the file's bytes), a name for the network and what messages call it."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > MAX_ONNX_BYTES:
            raise NetworkError(f"the model is {len(data):,} bytes; the limit is {MAX_ONNX_BYTES:,}", field="model",
                               value="<bytes>")
        return data, "onnx_model", "ONNX model"
    if not isinstance(source, (str, os.PathLike)):
        raise NetworkError(f"expected a path to an .onnx file or its bytes, got {type(source).__name__}",
                           field="model", value=shown(source))
    path = os.fspath(source)
    name = os.path.splitext(os.path.basename(path))[0] or "onnx_model"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise NetworkError(f"cannot read the file: {e.strerror or e}", field="model", value=path) from None
    except (TypeError, ValueError) as e:
        raise NetworkError(f"not a file path ({e})", field="model", value=shown(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NetworkError("not a regular file", field="model", value=path)
        if st.st_size > MAX_ONNX_BYTES:
            raise NetworkError(f"the file is {st.st_size:,} bytes; the limit is {MAX_ONNX_BYTES:,}", field="model",
                               value=path)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            data = f.read(MAX_ONNX_BYTES + 1)
    except OSError as e:
        raise NetworkError(f"cannot read the file: {e.strerror or e}", field="model", value=path) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_ONNX_BYTES:
        raise NetworkError(f"the file is over the limit of {MAX_ONNX_BYTES:,} bytes", field="model", value=path)
    return data, name, os.path.basename(path)


def _parse(data: bytes, where: str):
    onnx = _onnx()
    from google.protobuf.message import DecodeError

    if not data:
        raise NetworkError("not an ONNX model: the file is empty", node=where)
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, TypeError, RuntimeError) as e:
        raise NetworkError(f"not an ONNX model: the bytes are not a protobuf ModelProto ({_first_line(e)})",
                           node=where) from None
    if not model.HasField("graph") or not model.graph.node:
        raise NetworkError("not an ONNX model: it has no graph (or a graph without nodes)", node=where,
                           field="graph")
    _check_text(model, where)
    return model


def _check_text(model, where: str) -> None:
    """Every name the converter reads is text: protobuf hands back bytes for a string that is not UTF-8."""
    g = model.graph
    for field, items in (("input", g.input), ("output", g.output), ("initializer", g.initializer),
                         ("value_info", g.value_info)):
        for i, item in enumerate(items):
            if not isinstance(item.name, str):
                raise NetworkError("a name is not UTF-8 text", node=where, field=f"{field}[{i}].name",
                                   value=repr(item.name)[:80])
    for i, node in enumerate(g.node):
        for field, value in (("name", node.name), ("op_type", node.op_type), ("domain", node.domain),
                             *((f"input[{j}]", t) for j, t in enumerate(node.input)),
                             *((f"output[{j}]", t) for j, t in enumerate(node.output)),
                             *((f"attribute[{j}].name", a.name) for j, a in enumerate(node.attribute))):
            if not isinstance(value, str):
                raise NetworkError("a name is not UTF-8 text", node=f"node #{i}", field=field,
                                   value=repr(value)[:80])
    for o in model.opset_import:
        if not isinstance(o.domain, str):
            raise NetworkError("an opset domain is not UTF-8 text", node=where, field="opset_import",
                               value=repr(o.domain)[:80])
