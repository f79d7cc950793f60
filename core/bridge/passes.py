"""The three timed passes on one module (``_Runner``) and per-layer timing (``_LayerHooks``).

Per-layer timing (``per_layer=True``) runs extra hooked forwards: a forward pre-hook and a forward hook on every leaf
module (a module without children) read the clock (synchronising first on a GPU, or recording CUDA events). The sum
of the layers is shown next to the whole forward: they differ, as PALEO (Qi et al. 2017) and Lu et al. (2017,
"Modeling the resource requirements of convolutional neural networks on mobile devices") point out, by the work no
leaf module owns (functional ops such as ``torch.flatten`` or ``out += identity`` in a forward), Python and dispatch
overhead between layers, the hooks' own cost, and caches that are warm or cold depending on what ran before.
"""

from __future__ import annotations

from ..errors import CalcError
from ..precision import OPTIMIZERS as _OPTIMIZER_TABLE
from .measuring import Clock, synchronize
from .memory import _tensor_bytes

# == the passes ===================================================================================================

def _loss(out, torch):
    if isinstance(out, torch.Tensor):
        return out.float().mean()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        parts = [_loss(o, torch) for o in out if isinstance(o, (torch.Tensor, list, tuple, dict))]
        parts = [p for p in parts if p is not None]
        return sum(parts) if parts else None
    return None


OPTIMIZERS = tuple(_OPTIMIZER_TABLE)


def _optimizer(name: str, params, torch):
    cls, kwargs = _OPTIMIZER_TABLE[name].torch
    return getattr(torch.optim, cls)(params, **dict(kwargs))


class _Runner:
    """The three passes on one module and input; each run times only its own region with ``clock``."""

    def __init__(self, module, x, optimizer: str, clock: Clock, torch):
        self.m, self.x, self.clock, self.torch = module, x, clock, torch
        self.params = [p for p in module.parameters() if p.requires_grad]
        self.optimizer_name = optimizer
        self.opt = None

    def _zero(self):
        for p in self.params:
            p.grad = None

    def _fwd_loss(self):
        loss = _loss(self.m(self.x), self.torch)
        if loss is None or not loss.requires_grad:
            raise CalcError("the module has no trainable parameters or no tensor output, so there is no backward "
                            "pass to time", field="passes", value="backward")
        return loss

    def forward(self):
        self.m.eval()
        with self.torch.no_grad(), self.clock():
            self.m(self.x)

    def backward(self):
        self.m.train()
        self._zero()
        loss = self._fwd_loss()
        with self.clock():
            loss.backward()

    def train_step(self):
        self.m.train()
        if self.opt is None:
            self.opt = _optimizer(self.optimizer_name, self.params, self.torch)
        with self.clock():
            self.opt.zero_grad(set_to_none=True)
            self._fwd_loss().backward()
            self.opt.step()

    def resident(self, pass_name: str) -> int:
        # gradients are left out: every pass starts from none (backward and the train step free them first; a
        # gradient freed inside the profiled run has no record, so counting it here would count it twice)
        tensors = [*self.m.parameters(), *self.m.buffers(), self.x]
        if pass_name == "train_step" and self.opt is not None:
            tensors += [v for st in self.opt.state.values() for v in st.values() if hasattr(v, "untyped_storage")]
        return _tensor_bytes(tensors)


class _LayerHooks:
    """Forward pre/post hooks on every leaf module; per forward, seconds per module name (summed over calls)."""

    def __init__(self, module, clock: Clock):
        self.clock = clock
        self.marks: list = []
        self.stack: list = []
        self.handles = []
        leaves = [(name or type(m).__name__, m) for name, m in module.named_modules() if not any(m.children())]
        self.names = [n for n, _ in leaves]
        for name, m in leaves:
            self.handles.append(m.register_forward_pre_hook(lambda mod, inp, n=name: self._pre(n)))
            self.handles.append(m.register_forward_hook(lambda mod, inp, out, n=name: self._post(n)))

    def _pre(self, name):
        self.stack.append(self.clock.mark())

    def _post(self, name):
        self.marks.append((name, self.stack.pop(), self.clock.mark()))

    def collect(self) -> dict:
        synchronize(self.clock.dev)
        out: dict = {}
        for name, a, b in self.marks:
            out[name] = out.get(name, 0.0) + self.clock.between(a, b)
        self.marks, self.stack = [], []
        return out

    def remove(self):
        for h in self.handles:
            h.remove()
