"""Which bytes of a CPU forward pass land on fresh pages: a replay of its allocations through glibc's malloc.

On Linux a tensor's memory comes from glibc ``malloc``; memory the process has not touched yet page-faults on
first write (the kernel zeroes and maps each 4 KiB page, ~1.3–1.9 GB/s against ~20 GB/s for a copy), and whether
an output lands on fresh pages depends on the allocator's state (docs/cpu-calibration.md). So this module replays
a forward pass's allocations through a model of glibc's main arena (``malloc/malloc.c``, as ``mallopt(3)`` says):

* a block of at least the mmap threshold is ``mmap``-ed: all its bytes are fresh. Freeing it raises the threshold to
  its size when it is larger, up to ``mmap_max`` (``DEFAULT_MMAP_THRESHOLD_MAX``: 32 MiB on 64-bit), and sets the
  trim threshold to twice the new threshold. Both start at 128 KiB;
* a smaller block takes the smallest free heap chunk that holds it (freed neighbours coalesce), else it is carved
  from the top of the heap; bytes beyond those the heap has touched before are fresh;
* when a free (of at least 64 KiB once merged with free neighbours) leaves the free space at the top of the heap at
  or above the trim threshold, the heap is trimmed back to 128 KiB of padding (``M_TOP_PAD``): those pages are fresh
  again next time.

What each layer allocates is its rule's ``cpu_alloc`` (``core.ops``; measured as minor page faults per call): a
oneDNN conv allocates reordered copies besides its output, max pooling its int64 indices; a node marked ``inplace``
(``nn.ReLU(inplace=True)``, ``out += identity``) and a view allocate nothing; every other layer allocates its output.
A tensor is freed after its last consumer; the network's input is the caller's and stays.

The pass is replayed ``passes`` times on one heap (timed runs follow warm-up runs), from a fresh process's
thresholds or, ``warm``, from where an earlier block of ``mmap_max`` left them; the last pass's fresh bytes per node
are charged at the device's page-fault rate (``alloc_bandwidth``, ``core.terms``). Not modelled: glibc's
small-block bins and fragmentation by Python's own objects, and other allocators (jemalloc, tcmalloc, a GPU's).
"""

from __future__ import annotations

from functools import lru_cache

from .registry import numel

MIB = 2 ** 20
START_THRESHOLD = 128 * 1024      # M_MMAP_THRESHOLD and M_TRIM_THRESHOLD before any adjustment
TOP_PAD = 128 * 1024              # M_TOP_PAD: what a trim leaves at the top of the heap
ALIGN = 64                        # PyTorch's CPU allocations are 64-byte aligned
HEADER = 16                       # a chunk's size field and alignment slack, in the size glibc compares
PAGE = 4096
TRIM_CHECK = 64 * 1024            # FASTBIN_CONSOLIDATION_THRESHOLD: only a free this large (merged) may trim
SPLIT_MIN = 4096                  # a remainder smaller than this stays with the chunk (keeps the list short)


class Heap:
    """glibc's main arena, reduced to what decides fresh pages for large blocks (see the module docstring)."""

    def __init__(self, mmap_max: int, warm: bool = False):
        self.mmap_max = mmap_max
        # warm: an mmap-ed block of about mmap_max was freed before (by another network in this process)
        self.mmap_threshold, self.trim_threshold = (mmap_max, 2 * mmap_max) if warm else (START_THRESHOLD,) * 2
        self.chunks: list[list] = []    # [start, size, free], in address order, below the top
        self.top = 0                    # where the top chunk starts
        self.mapped = 0                 # heap end: bytes obtained from the OS (sbrk)
        self.touched = 0                # heap bytes written since they were last handed back
        self.fresh = 0                  # fresh bytes so far

    def malloc(self, size: int) -> list:
        size = -(-size // ALIGN) * ALIGN
        if size + HEADER >= self.mmap_threshold:
            self.fresh += size
            return ["mmap", -(-(size + HEADER) // PAGE) * PAGE, False]      # whole pages, header included
        fits = [c for c in self.chunks if c[2] and c[1] >= size]
        if fits:
            chunk = min(fits, key=lambda c: c[1])
            if chunk[1] - size >= SPLIT_MIN:
                self.chunks.insert(self.chunks.index(chunk) + 1, [chunk[0] + size, chunk[1] - size, True])
                chunk[1] = size
            chunk[2] = False
            return chunk
        start, end = self.top, self.top + size
        if end > self.touched:
            self.fresh += end - max(self.touched, start)
            self.touched = end
        self.mapped = max(self.mapped, end + TOP_PAD)
        chunk = [start, size, False]
        self.chunks.append(chunk)
        self.top = end
        return chunk

    def free(self, chunk: list) -> None:
        if chunk[0] == "mmap":
            if self.mmap_threshold < chunk[1] <= self.mmap_max:
                self.mmap_threshold, self.trim_threshold = chunk[1], 2 * chunk[1]
            return
        k = self.chunks.index(chunk)
        chunk[2] = True
        if k + 1 < len(self.chunks) and self.chunks[k + 1][2]:
            chunk[1] += self.chunks.pop(k + 1)[1]
        if k > 0 and self.chunks[k - 1][2]:
            self.chunks[k - 1][1] += self.chunks.pop(k)[1]
            chunk = self.chunks[k - 1]
        merged = chunk[1]
        if self.chunks and self.chunks[-1][2]:
            self.top = self.chunks.pop()[0]
        if merged >= TRIM_CHECK and self.mapped - self.top >= self.trim_threshold:
            self.mapped = self.top + TOP_PAD
            self.touched = min(self.touched, self.mapped)


def layer_allocations(info, batch: int, act_bytes: int, weight_bytes: int) -> tuple[tuple, int]:
    """(steps, output bytes) of one node's forward call: its rule's ``cpu_alloc`` (a step is ``("alloc", size)``
    for a temporary block, ``("free", j)`` for the j-th temporary, or ``("out",)`` for the output). Views and nodes
    that move no data allocate nothing; output bytes are 0 when the output is the input's block."""
    if not info.moves_data:
        return (), 0
    steps = tuple(info.rule.cpu_alloc(info.ctx, batch, act_bytes, weight_bytes))
    return steps, (info.out_elems * batch * act_bytes if ("out",) in steps else 0)


@lru_cache(maxsize=128)
def fresh_bytes(compiled, batch: int, act_bytes: int, weight_bytes: int, mmap_max: int,
                passes: int = 4, warm: bool = False) -> tuple[int, ...]:
    """Fresh bytes each node of ``compiled`` writes in a warmed-up forward pass at ``batch``, in node order;
    ``warm``: in a process whose earlier work left glibc's thresholds at their ceiling (``Heap``)."""
    nodes = compiled.nodes
    plan = [layer_allocations(n, batch, act_bytes, weight_bytes) for n in nodes]
    owner: dict[str, str] = {}          # node → the node whose block holds its output (views, in-place ops)
    for n, (_, out) in zip(nodes, plan):
        owner[n.name] = n.name if out or not n.inputs else owner.get(n.inputs[0], n.inputs[0])
    dies_at: dict[str, int] = {}
    for k, n in enumerate(nodes):
        for name in n.inputs:
            dies_at[owner.get(name, name)] = k
    frees = [[] for _ in nodes]
    for root, k in dies_at.items():
        frees[k].append(root)
    heap = Heap(mmap_max, warm)
    per_node = [0] * len(nodes)
    for _ in range(passes):
        live: dict[str, list] = {}
        for k, (n, (steps, out)) in enumerate(zip(nodes, plan)):
            before = heap.fresh
            temps = []
            for step in steps:
                if step[0] == "alloc":
                    temps.append(heap.malloc(step[1]))
                elif step[0] == "free":
                    heap.free(temps[step[1]])
                else:
                    live[n.name] = heap.malloc(out)
            for root in frees[k]:
                if root in live:
                    heap.free(live.pop(root))
            per_node[k] = heap.fresh - before
        for b in live.values():                      # the outputs, dropped by the caller
            heap.free(b)
    return tuple(per_node)


def backward_fresh_bytes(compiled, batch: int, act_bytes: int, weight_bytes: int, mmap_threshold: float) -> tuple:
    """Per node, the backward pass's bytes written to fresh pages: after ``zero_grad(set_to_none=True)`` every
    gradient is a new tensor, and each of at least ``mmap_threshold`` bytes is ``mmap``-ed by glibc, so all its bytes
    are fresh — each input gradient the node computes, and its weight gradient (its trainable parameters as one
    block: the bias beside the weight is small). Smaller blocks are taken as reused heap memory (the replay above
    covers the forward pass only)."""
    out = []
    for node in compiled.nodes:
        fresh = 0
        if node.needs_grad and node.moves_data:
            blocks = [numel(sh) * batch * act_bytes for sh, g in zip(node.in_shapes, node.grad_in) if g]
            blocks.append(node.params.trainable * weight_bytes)
            fresh = sum(b for b in blocks if b >= mmap_threshold)
        out.append(fresh)
    return tuple(out)
