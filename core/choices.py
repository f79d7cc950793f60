"""Every closed list of choices a user picks from, declared once. The CLI, the pages, timing and calibration import
these instead of spelling the options again (precisions and optimizers live with their byte tables in
``core.precision``; classes of work in ``core.registry.WORK_CLASSES``).
"""

from __future__ import annotations

VARIANTS = ("auto", "paleo", "roofline", "predicted")     # PALEO sums compute and memory; roofline takes their max;
#                                predicted: the fitted GPU model (core.gpu_model); auto (the default): predicted where
#                                it applies (core.variants.auto_variant), else PALEO
FITTED_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")      # compute precisions the GPU model was fitted on
LAUNCHES = ("eager", "cuda_graphs")     # how kernels reach the GPU in the predicted model: eager PyTorch (the host
#                                         pays a fitted cost per kernel call) or CUDA Graphs (a captured pass replayed:
#                                         no per-call host cost; the GPU's own few-µs gap per kernel is not modelled)
PROCESSES = ("fresh", "warm")        # the process a calibrated Linux CPU's times are for: a script's first network
#                                     (glibc's allocator at its start) or one that has run others (its mmap threshold
#                                     raised to the 32 MiB ceiling: a notebook, the app, a loop over networks)
CONV_ALGORITHMS = ("direct", "fft", "winograd", "auto")   # auto: the fewest FLOPs among those that apply
ALLREDUCE = ("ring", "tree", "parameter_server")          # data-parallel gradient all-reduce schemes
COMM_MODELS = ("ddp", "paleo")      # data parallelism as DDP runs it (buckets overlapping the backward, NCCL's
#                                     achieved bandwidth, synchronisation), or PALEO's all-reduce after the backward
REDUCE_DTYPES = ("auto", "fp32", "fp16", "bf16")          # what the gradient all-reduce moves (auto: DDP's choice)
INPUT_PIPELINES = ("synthetic", "cpu", "dali")            # where a step's images come from
SCALING_MODES = ("strong", "weak")                        # strong: global batch split; weak: per-worker batch kept
DEFAULT_OPTIMIZER = "sgd_momentum"
DEFAULT_DTYPE = "fp32"
