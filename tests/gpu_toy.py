"""The toy GPU the GPU-model tests compute by hand (test_gpu_model.py, test_gpu_fit.py): round numbers, and a
two-layer network on it."""

from core import Network, Node
from core.devices import Device

# round numbers so every time below is checked by hand
TOY = Device(id="toy-gpu", name="Toy GPU", vendor="test", kind="GPU", year=2020,
             peak_flops={"fp32": 1e9, "fp16": 4e9}, memory_bandwidth=1e8, memory_capacity=1e9,
             source="hand-made for tests", note="", architecture="volta", sm_count=10)
TOY_PARAMS = {"conv": 0.5, "grouped_conv": 0.25, "linear": 0.5, "tensor_tf32": 0.5, "tensor_fp16": 0.5,
              "memory": 0.8, "overhead_s": 1e-5, "backward": 0.5, "backward_weight": 0.25}


def two_layer() -> Network:
    return Network.make("two", {"x": (4,)}, [Node.make("fc", "linear", "x", out_features=8),
                                             Node.make("act", "relu", "fc")])
