"""ONNX's shape inference, in a helper process: a child Python started once and kept (``_INFERENCE``), sent each
skeleton graph (no weights) and answering with the shapes at batch 1 (strict: an inference error is the file's)
and at batch ``PROBE_BATCH``. A crash or a hang of the helper is a ``NetworkError``; the next import starts a
fresh one. ``_inference_message`` reads onnx's InferenceError text as (node, op type, reason)."""

from __future__ import annotations

import re

from ..errors import NetworkError
from .base import PROBE_BATCH


def _inference_message(error: str) -> tuple[str | None, str | None, str]:
    """(node, op type, reason) from onnx's InferenceError text: "[ShapeInferenceError] Inference error(s):
    (op_type:Conv, node name: conv1): [ShapeInferenceError] Attribute strides must only contain positive values"."""
    text = " ".join(str(error).split())
    m = re.search(r"\(op_type:([\w.]+), node name: ([^)]*)\): (?:\[\w+\] )?(.*)", text)
    if m:
        return m.group(2) or None, m.group(1), m.group(3)[:300]
    m = re.search(r"node name (\S+?)\.? (.*)", text)
    if m:
        return m.group(1), None, text[:300]
    return None, None, text.replace("[ShapeInferenceError] ", "")[:300]


# onnx's C++ shape inference can abort the whole process on a malformed file (a failed assertion in its Slice rule
# on a fuzzed model): it runs in a helper process, started once and kept, so that a bad upload ends the helper, not
# the app or the CLI. The helper gets the graph without its weights; it answers with the shapes at batch 1 (strict:
# an inference error is the file's) and at batch PROBE_BATCH.

INFERENCE_TIMEOUT_S = 120      # onnx infers a ResNet-152 in well under a second
INFERENCE_MEMORY = 4 * 2 ** 30  # address space the helper may take: the graph comes without its weights

_HELPER = r"""
import json, struct, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (%(memory)d, %(memory)d))
except Exception:
    pass
import onnx
from onnx import shape_inference


def dims(t):
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return None
    out = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in t.tensor_type.shape.dim]
    return None if None in out else out


def shapes(g):
    return {v.name: dims(v.type) for v in list(g.input) + list(g.value_info) + list(g.output)}


read, write = sys.stdin.buffer.read, sys.stdout.buffer
while True:
    head = read(8)
    if len(head) < 8:
        break
    model = onnx.load_model_from_string(read(struct.unpack("<Q", head)[0]))
    try:
        first = shapes(shape_inference.infer_shapes(model, strict_mode=True, data_prop=True).graph)
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = %(batch)d
        try:
            second = shapes(shape_inference.infer_shapes(model, strict_mode=False, data_prop=True).graph)
        except Exception:
            second = {}
        reply = {"s1": first, "s2": second}
    except shape_inference.InferenceError as e:
        reply = {"error": str(e)}
    except Exception as e:
        reply = {"failed": "%%s: %%s" %% (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
    body = json.dumps(reply).encode()
    write.write(struct.pack("<Q", len(body)) + body)
    write.flush()
"""


class _Inference:
    """The helper process, shared by every import in this process (one request at a time)."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()
        self.proc = None

    def _start(self):
        import atexit
        import subprocess
        import sys

        code = _HELPER % {"memory": INFERENCE_MEMORY, "batch": PROBE_BATCH}
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        atexit.register(self._stop)          # the helper ends with this process

    def _stop(self) -> str:
        proc, self.proc = self.proc, None
        if proc is None:
            return "not started"
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            try:
                pipe.close()
            except OSError:          # a write that the dead helper never read
                pass
        return f"signal {-code}" if code < 0 else f"exit code {code}"

    def _read(self, n: int, deadline: float) -> bytes:
        import os
        import select
        import time

        fd, out = self.proc.stdout.fileno(), b""
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError
            out += chunk
        return out

    def run(self, skeleton: bytes, label: str) -> dict:
        import json
        import struct
        import time

        with self.lock:
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self._start()
                self.proc.stdin.write(struct.pack("<Q", len(skeleton)) + skeleton)
                self.proc.stdin.flush()
                deadline = time.monotonic() + INFERENCE_TIMEOUT_S
                size = struct.unpack("<Q", self._read(8, deadline))[0]
                return json.loads(self._read(size, deadline))
            except TimeoutError:
                self._stop()
                raise NetworkError(f"ONNX shape inference did not finish within {INFERENCE_TIMEOUT_S} s",
                                   node=label) from None
            except (EOFError, BrokenPipeError, OSError, ValueError) as e:
                how = self._stop()
                if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):
                    raise NetworkError(f"cannot run ONNX shape inference: {e}", node=label) from None
                raise NetworkError(f"ONNX shape inference crashed on this model ({how}): the file is malformed",
                                   node=label) from None


_INFERENCE = _Inference()
