"""CNN performance calculator: the engine.

Pure Python: importing ``core`` imports neither torch nor streamlit. ``from core import analyze``.
"""

from .api import analyze, estimate, load_network, parse_shape, scaling, sweep
from .edit import EditResult, channel_groups, edit
from .errors import CalcError, DeviceError, NetworkError
from .graph import Compiled, compile_network
from .ir import SCHEMA_VERSION, Network, Node
from .precision import OPTIMIZERS, PRECISIONS
from .registry import FLOPS_PER_MAC, REGISTRY
from .report import CONVENTION, Layer, Report
from .zoo import names as builtin_names

__all__ = [
    "analyze", "estimate", "sweep", "scaling", "load_network", "parse_shape", "edit", "EditResult", "channel_groups",
    "CalcError", "DeviceError", "NetworkError",
    "compile_network", "Compiled", "Network", "Node", "SCHEMA_VERSION", "PRECISIONS", "OPTIMIZERS",
    "FLOPS_PER_MAC", "REGISTRY", "CONVENTION", "Layer", "Report", "builtin_names",
]
