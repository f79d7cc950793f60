"""Every op the engine knows, one module per family: one ``register(OpRule(...))`` each, shape, cost, parameters,
memory and formula together, with how it becomes PyTorch (``to_torch``) and which PyTorch calls import to it
(``imports``), placed next to the rule they serve. Families that share a rule (activations, pools) come from small
factories; what several families use is in ``_common``. Adding an op touches its family's module (or a new module
in this package, which is found by itself) and its tests, nothing else.

Shapes here are per sample: ``ctx.x == (C, H, W)`` for an NCHW tensor. Dimension attributes (``dim``,
``start_dim``, ``dims``) count the batch as dim 0, as PyTorch does; ``_common._sample_dim`` converts them.

FLOP conventions for ops without MACs are stated in each family's tables, per element, with the operations counted.
Forward FLOPs are for inference mode (BatchNorm folded to one scale and shift, dropout the identity); backward FLOPs
are those of a training-mode backward pass.

Importing this package imports every module in it, and so registers every op: the families in ``_FAMILIES``, in
that order, which is the order of ``core.registry.REGISTRY`` (the docs, the goldens and the app list ops in it),
then any other module of the package, by name.
"""

from __future__ import annotations

import importlib
import pkgutil

# Imported by name, not with ``from . import …``: an import sorter puts those names in alphabetical order, which
# would change the registration order.
_FAMILIES = ("conv", "linear", "matmul", "activation", "normalization", "pooling", "elementwise", "shape",
             "reduction", "attention")

for _name in _FAMILIES + tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)
                                      if not m.name.startswith("_") and m.name not in _FAMILIES)):
    importlib.import_module(f"{__name__}.{_name}")
