"""Data-parallel training as PyTorch's DistributedDataParallel runs it over NCCL (``comm_model="ddp"``).

DDP groups the gradients into buckets (the first 1 MiB, then ``bucket_mb`` MiB) in the order the backward makes them
and all-reduces each bucket as soon as its last gradient is ready, on a stream of its own: the all-reduce overlaps
the rest of the backward and what is left of it after the backward's last layer (at least the last bucket) is
exposed. The bytes are the dtype DDP reduces: the parameters' (fp32 under autocast's mixed precision).
One all-reduce of S bytes over K GPUs in a ring: 2(K−1)/K · S / B + 2(K−1)·α, B the bus bandwidth NCCL reaches on
the link (``Interconnect.allreduce_bandwidth``, nccl-tests' busbw; else the datasheet rate × ``bus_share``), α its
latency per hop. Over several nodes, hierarchically: a ring inside each node, then a ring between the nodes at
their network rate (``nics`` × ``node_link``). Each step also waits for its slowest worker: ``jitter`` · √(2 ln K)
of the host's time issuing the step's kernels (the expected maximum of K equal, noisy host times; per input
pipeline), plus a fixed ``sync_s``.
Decoding on the CPU (``input_pipeline="cpu"``), a step lasts at least the time the node's ``cpu_cores`` take to
decode its images; DALI decodes on the GPUs.

``comm_model="paleo"`` keeps PALEO's term: the whole all-reduce after the backward at the link's datasheet rate, in
the gradients' storage bytes. Fitted figures: ``dp_params.json`` (``benchmarks/fit_multigpu.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from math import log, sqrt
from pathlib import Path
from typing import Sequence

from .choices import ALLREDUCE, COMM_MODELS, INPUT_PIPELINES, REDUCE_DTYPES
from .communication import allreduce_time, gradient_allreduce_s
from .devices import Interconnect
from .errors import CalcError
from .precision import Precision
from .settings import check_link, check_link_figures, check_ppp, check_workers, choice

MIB = 1024 * 1024
FIRST_BUCKET_BYTES = 1 * MIB        # torch.distributed's _DEFAULT_FIRST_BUCKET_BYTES
PARAMS_FILE = Path(__file__).with_name("dp_params.json")
REDUCE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@lru_cache(maxsize=1)
def dp_params() -> dict:
    """The fitted figures of the DDP model (``dp_params.json``)."""
    return json.loads(PARAMS_FILE.read_text())


def typical_error() -> dict:
    """The DDP model's held-out error on published multi-GPU throughput (``dp_params.json``'s ``held_out``):
    scaling efficiency in percentage points, median and p90 of |error|, the signed median, and what it was
    measured on."""
    return dict(dp_params()["held_out"])


def _positive_int(value, field: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise CalcError(f"must be an integer from 1 to {most:,}", field=field, value=value)
    return value


@dataclass(frozen=True)
class DataParallel:
    """The data-parallel settings of an estimate, checked (each bad value a CalcError naming its field)."""

    workers: int = 1
    link: Interconnect | None = None
    ppp_comm: float = 1.0
    allreduce: str = "ring"
    comm_model: str = "ddp"
    bucket_mb: float = 25.0
    reduce_dtype: str = "auto"
    input_pipeline: str = "synthetic"
    cpu_cores: int | None = None
    nodes: int = 1
    node_link: Interconnect | None = None
    nics: int = 1

    def __post_init__(self):
        check_link(check_workers(self.workers), self.link)
        check_ppp(self.ppp_comm, "ppp_comm")
        choice(self.allreduce, ALLREDUCE, "allreduce")
        choice(self.comm_model, COMM_MODELS, "comm_model")
        choice(self.reduce_dtype, REDUCE_DTYPES, "reduce_dtype")
        choice(self.input_pipeline, INPUT_PIPELINES, "input_pipeline")
        b = self.bucket_mb
        if isinstance(b, bool) or not isinstance(b, (int, float)) or not 0.001 <= b <= 1e6:
            raise CalcError("must be a number of MiB from 0.001 to 1,000,000 (DDP's default: 25)", field="bucket_mb",
                            value=b)
        _positive_int(self.nodes, "nodes", self.workers)
        _positive_int(self.nics, "nics", 64)
        if self.cpu_cores is not None:
            _positive_int(self.cpu_cores, "cpu_cores", 100_000)
        if self.input_pipeline == "cpu" and self.cpu_cores is None:
            raise CalcError(f"a {self.input_pipeline} input pipeline needs the host's CPU cores per node",
                            field="cpu_cores", value=None)
        if self.workers % self.nodes:
            raise CalcError(f"{self.workers} workers do not split evenly over {self.nodes} nodes", field="nodes",
                            value=self.nodes)
        if self.nodes > 1 and self.comm_model == "paleo":
            raise CalcError("PALEO's all-reduce has one link for every worker; several nodes need comm_model ddp",
                            field="nodes", value=self.nodes)
        if self.nodes > 1 and not isinstance(self.node_link, Interconnect):
            raise CalcError("several nodes need the network between them (node_link)", field="node_link",
                            value=None if self.node_link is None else type(self.node_link).__name__)
        for lk in (self.link, self.node_link):
            if lk is not None:
                check_link_figures(lk)

    @property
    def active(self) -> bool:
        """Whether anything here changes a single worker's step on synthetic data."""
        return self.workers > 1 or self.input_pipeline != "synthetic"

    def kwargs(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Bucket:
    nbytes: float
    layers: tuple[str, str]     # the first and last layer whose gradients it holds, in backward order
    ready_s: float              # from the start of the backward
    start_s: float
    end_s: float


@dataclass(frozen=True)
class DataParallelStep:
    """What data parallelism adds to one worker's training step, and why."""

    comm_model: str
    workers: int
    nodes: int
    reduce_bytes: int           # per gradient element
    gradient_bytes: float       # per worker, all buckets
    bus_bandwidth: float        # bytes/s used inside a node
    bandwidth_from: str
    allreduce_s: float          # every bucket's all-reduce, overlapped or not
    exposed_s: float            # the all-reduce still running after the backward's last layer
    sync_s: float               # waiting for the slowest worker, plus a fixed cost per step
    input_wait_s: float         # the host's decoding beyond the GPU's step
    reads_data: bool = False    # a real-data input pipeline is modelled
    buckets: tuple[Bucket, ...] = ()

    @property
    def overlapped_s(self) -> float:
        return self.allreduce_s - self.exposed_s

    @property
    def communication_s(self) -> float:
        """What the gradients' exchange adds to the step: the exposed all-reduce and the synchronisation."""
        return self.exposed_s + self.sync_s

    @property
    def terms(self) -> tuple[str, ...]:
        """The names of the terms added to the step, in words."""
        out = []
        if self.workers > 1 and self.comm_model == "paleo":
            out.append("all-reduce after the backward (PALEO, datasheet rate)")
        elif self.workers > 1:
            out += [f"all-reduce of {len(self.buckets)} DDP buckets overlapping the backward ({self.bandwidth_from})",
                    "synchronisation with the slowest worker (the host's jitter)"]
        if self.reads_data:
            out.append("input pipeline (host decode)")
        return tuple(out)

    def to_dict(self) -> dict:
        return {"comm_model": self.comm_model, "workers": self.workers, "nodes": self.nodes,
                "reduce_bytes_per_gradient": self.reduce_bytes, "gradient_bytes": self.gradient_bytes,
                "bus_bandwidth": self.bus_bandwidth, "bandwidth_from": self.bandwidth_from,
                "allreduce_s": self.allreduce_s, "overlapped_s": self.overlapped_s, "exposed_s": self.exposed_s,
                "sync_s": self.sync_s, "input_wait_s": self.input_wait_s, "buckets": len(self.buckets),
                "terms": list(self.terms)}


def reduce_bytes(dp: DataParallel, precision: Precision) -> int:
    """Bytes per gradient element the all-reduce moves: ``reduce_dtype``, or under ``auto`` the gradients DDP
    holds (fp32 master gradients under mixed precision; PALEO's model: the gradients' storage bytes)."""
    if dp.reduce_dtype != "auto":
        return REDUCE_BYTES[dp.reduce_dtype]
    if dp.comm_model == "ddp" and precision.master:
        return precision.master
    return precision.grad


def achieved(link: Interconnect, ppp_comm: float, params: dict | None = None) -> tuple[Interconnect, str]:
    """``link`` at the bandwidth NCCL reaches on it and NCCL's latency per hop, and where the bandwidth is from."""
    p = params or dp_params()
    if link.allreduce_bandwidth:
        bw, why = link.allreduce_bandwidth, f"NCCL bus bandwidth measured on {link.name}"
    else:
        bw, why = link.bandwidth * p["bus_share"], f"{p['bus_share']:.0%} of {link.name}'s datasheet rate"
    if ppp_comm != 1:
        why += f" × PPP {ppp_comm:g}"
    return replace(link, bandwidth=bw * ppp_comm, latency=link.latency or p["hop_latency_s"]), why


def allreduce_s(nbytes: float, dp: DataParallel, params: dict | None = None) -> float:
    """One all-reduce of ``nbytes`` per worker under DDP: a ring (or tree) inside a node, and between nodes."""
    algorithm = dp.allreduce
    intra, _ = achieved(dp.link, 1.0, params) if dp.link else (None, "")
    per_node = dp.workers // dp.nodes
    t = allreduce_time(nbytes, per_node, intra, dp.ppp_comm, algorithm) if per_node > 1 else 0.0
    if dp.nodes > 1:
        net, _ = achieved(dp.node_link, 1.0, params)
        net = replace(net, bandwidth=net.bandwidth * dp.nics)
        t += allreduce_time(nbytes, dp.nodes, net, dp.ppp_comm, algorithm)
    return t


def buckets(layers: Sequence[tuple[str, float, int]], elem_bytes: int, bucket_mb: float) -> list[tuple]:
    """DDP's buckets from ``layers`` (name, backward seconds, trainable parameters) in forward order: (bytes, first
    layer, last layer, seconds from the backward's start at which its last gradient is ready)."""
    out, t, size, first, cap = [], 0.0, 0.0, None, FIRST_BUCKET_BYTES
    last = None
    for name, seconds, params in reversed(layers):
        t += seconds
        if not params:
            continue
        size += params * elem_bytes
        first, last = first or name, name
        if size >= cap:
            out.append((size, first, last, t))
            size, first, cap = 0.0, None, bucket_mb * MIB
    if size:
        out.append((size, first, last, t))
    return out


def ddp_step(layers: Sequence[tuple[str, float, int]], compute_s: float, batch: int, dp: DataParallel,
             precision: Precision, params: dict | None = None, host_s: float = 0.0) -> DataParallelStep:
    """What DDP adds to one worker's step of ``compute_s`` seconds (forward, backward, update): ``layers`` as in
    ``buckets``; ``host_s``: the seconds the host spends issuing the step's kernels (``Estimate.host_s``);
    ``params``: figures other than ``dp_params()``'s (a fit tries them)."""
    p = params or dp_params()
    nbytes = reduce_bytes(dp, precision)
    backward_s = sum(s for _, s, _ in layers)
    made, end, total = [], 0.0, 0.0
    link, why = achieved(dp.link, dp.ppp_comm, p) if dp.link else (None, "")
    why = why if dp.workers > dp.nodes else ""
    if dp.workers > 1:
        for size, first, last, ready in buckets(layers, nbytes, dp.bucket_mb):
            t = allreduce_s(size, dp, p)
            start = max(ready, end)
            end = start + t
            total += t
            made.append(Bucket(size, (first, last), ready, start, end))
    exposed = max(0.0, end - backward_s) if made else 0.0
    # the all-reduce is where workers wait for each other: no gradients, no exchange and no waiting
    sync = p["sync_s"] + p["jitter"][dp.input_pipeline] * sqrt(2 * log(dp.workers)) * host_s if made else 0.0
    return DataParallelStep("ddp", dp.workers, dp.nodes, nbytes, sum(b.nbytes for b in made),
                            link.bandwidth if link else 0.0, why, total,
                            exposed, sync, input_wait_s(dp, batch, compute_s + exposed + sync, p),
                            dp.input_pipeline != "synthetic", tuple(made))


def decode_s(dp: DataParallel, batch: int, params: dict | None = None) -> float:
    """Seconds the node's CPU cores take to decode one step's images for its GPUs (0: synthetic data, or DALI,
    which decodes on the GPUs)."""
    rate = (params or dp_params())["decode_images_per_core_s"].get(dp.input_pipeline)
    return batch * (dp.workers // dp.nodes) / (dp.cpu_cores * rate) if rate else 0.0


def input_wait_s(dp: DataParallel, batch: int, gpu_step_s: float, params: dict | None = None) -> float:
    """How much longer than ``gpu_step_s`` the host takes to decode one step's images: the loader runs ahead of
    the GPUs, so only its excess over their step is waited for."""
    return max(0.0, decode_s(dp, batch, params) - gpu_step_s)


def paleo_step(trainable: int, compute_s: float, batch: int, dp: DataParallel,
               precision: Precision) -> DataParallelStep:
    """PALEO's term: the whole all-reduce after the backward, at the link's datasheet rate, over one link."""
    nbytes = reduce_bytes(dp, precision)
    t = gradient_allreduce_s(trainable * nbytes, dp.workers, dp.link, dp.ppp_comm, dp.allreduce) if dp.link else 0.0
    return DataParallelStep("paleo", dp.workers, dp.nodes, nbytes, trainable * nbytes if dp.workers > 1 else 0,
                            dp.link.bandwidth * dp.ppp_comm if dp.link else 0.0,
                            f"{dp.link.name}'s datasheet rate" if dp.link else "", t, t, 0.0,
                            input_wait_s(dp, batch, compute_s + t), dp.input_pipeline != "synthetic")
