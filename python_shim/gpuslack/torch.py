"""gpuslack as PyTorch's CUDA allocator, and memory statistics in torch's terms.

    import gpuslack.torch
    gpuslack.torch.use()          # before the first CUDA allocation
    ...train...
    print(gpuslack.torch.max_memory_allocated())

`use()` hands every CUDA tensor allocation of the process to gpuslack's VMM
allocator through torch.cuda.memory.CUDAPluggableAllocator, with the
stream-ordered gpuslack_device_alloc/gpuslack_device_free: a freed block is
reused at once on its stream and on other streams once the GPU is done with
it, with no device synchronization. The other way to put gpuslack under
PyTorch, ``LD_PRELOAD`` with ``GPUSLACK_CONF=allocator:vmm``, leaves
PyTorch's caching allocator in place and serves its cudaMalloc calls.

Under a pluggable allocator torch.cuda.memory_stats() and its kin raise;
the functions here answer instead, from gpuslack_device_stats_get. They
accept a device as torch.cuda's do (None: the current device, an int,
"cuda:1", a torch.device); with an int, torch is not needed.

What torch does not forward from Python (its Python class takes only the
alloc and free functions; the other hooks are C++ setters):
- torch.cuda.empty_cache() does nothing: call `empty_cache()` here.
- Tensor.record_stream() does nothing: call `record_stream()` here for a
  tensor used on another stream than the one it was allocated on, or that
  memory may be handed out again while the other stream still uses it.
- torch.cuda.set_per_process_memory_fraction() does nothing: call
  `set_per_process_memory_fraction()` here.

Steps: `mark_steps()` marks a gpuslack step (gpuslack.step()) after each
optimizer step, so that the GPU timeline reports busy and idle per training
step. It is an optimizer step post-hook (torch 2.0's public hooks), which
runs on the training thread, right after optimizer.step() returns, in any
loop, with or without torch.profiler. gpuslack does not read PyTorch's
"ProfilerStep#N" NVTX ranges: torch emits them only under emit_nvtx(), and
reading NVTX would take it from Nsight Systems (lib/ledger/host_activity.h,
Note [Steps without NVTX]).

torch is imported inside these functions only: importing this module costs
nothing and needs no torch.
"""
import ctypes
import weakref

import gpuslack
from . import _lib

__all__ = [
    "empty_cache", "is_used", "mark_steps", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
    "memory_reserved", "memory_stats", "record_stream", "set_per_process_memory_fraction", "use",
]

ALLOC_FN = "gpuslack_device_alloc"
FREE_FN = "gpuslack_device_free"

_used = False


def use():
    """Installs gpuslack as PyTorch's CUDA allocator, for the whole process.

    Must come before the first CUDA allocation (before anything initializes
    CUDA in torch): PyTorch cannot swap an allocator that has served memory.
    Calling it again once installed does nothing. Raises RuntimeError when
    too late, when torch has no CUDA, or when the library lacks the
    stream-ordered functions."""
    global _used
    if _used:
        return
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("gpuslack.torch.use(): torch has no usable CUDA device (torch %s)" % torch.__version__)
    lib = _lib.load()
    for name in (ALLOC_FN, FREE_FN):
        if not lib.has(name):
            raise RuntimeError("gpuslack.torch.use(): %s does not export %s; rebuild libgpuslack.so" % (lib.path, name))
    if torch.cuda.is_initialized():
        raise RuntimeError(_too_late(torch))
    allocator = torch.cuda.memory.CUDAPluggableAllocator(lib.path, ALLOC_FN, FREE_FN)
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:  # "Can't swap an already initialized allocator"
        raise RuntimeError(_too_late(torch)) from e
    _used = True


def _too_late(torch):
    try:
        allocated = torch.cuda.memory_allocated()
    except Exception:  # another pluggable allocator is in place
        allocated = None
    what = "%d bytes of CUDA memory are allocated already" % allocated if allocated else \
        "CUDA is initialized in torch already"
    return ("gpuslack.torch.use() must come before the first CUDA allocation: %s, and PyTorch cannot "
            "swap its allocator after that. Call it first thing, right after `import torch`, or put "
            "gpuslack under the process with `python -m gpuslack run --conf allocator:vmm -- ...`" % what)


def is_used():
    """Whether use() installed gpuslack in this process."""
    return _used


def _device_index(device):
    """torch.cuda's device argument as an index; imports torch only when it
    must (None, or a torch.device)."""
    if isinstance(device, bool):
        raise TypeError("device must be an int, a str, a torch.device or None, not bool")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind != "cuda":
            raise ValueError("not a CUDA device: %r" % device)
        if index:
            return int(index)
        device = None
    index = getattr(device, "index", None)
    if device is not None and getattr(device, "type", "cuda") != "cuda":
        raise ValueError("not a CUDA device: %r" % (device,))
    if index is not None:
        return int(index)
    import torch

    return torch.cuda.current_device()


def memory_stats(device=None):
    """torch.cuda.memory_stats()'s keys that gpuslack can answer, for the
    VMM allocator on `device`; {} when it has served nothing there (as torch
    answers before CUDA is initialized).

    allocated_bytes.all.{current,peak}  bytes in live blocks
    reserved_bytes.all.{current,peak}   physical memory mapped (blocks and cache)
    allocation.all.{current,allocated,freed}  blocks live now, served, freed
    num_alloc_retries                   allocations retried after trimming or waiting
    num_ooms                            allocations that failed after every retry
    num_device_alloc, num_device_free   physical granules mapped, released
    num_sync_all_streams                0: gpuslack never synchronizes to free
    gpuslack.pending_free_blocks, gpuslack.largest_free_bytes, gpuslack.stall_s
                                        gpuslack's own figures (see gpuslack.h)
    """
    s = gpuslack.device_stats(_device_index(device))
    if s is None:
        return {}
    return {
        "allocated_bytes.all.current": s["allocated"],
        "allocated_bytes.all.peak": s["peak_allocated"],
        "allocation.all.allocated": s["allocations"],
        "allocation.all.current": s["allocations"] - s["frees"],
        "allocation.all.freed": s["frees"],
        "gpuslack.largest_free_bytes": s["largest_free"],
        "gpuslack.pending_free_blocks": s["pending_free"],
        "gpuslack.stall_s": s["stall_s"],
        "num_alloc_retries": s["oom_retries"],
        "num_device_alloc": s["granules_mapped"],
        "num_device_free": s["granules_unmapped"],
        "num_ooms": s["failed_allocations"],
        "num_sync_all_streams": 0,
        "reserved_bytes.all.current": s["reserved"],
        "reserved_bytes.all.peak": s["peak_reserved"],
    }


def memory_allocated(device=None):
    """Bytes in live blocks on `device` (torch.cuda.memory_allocated)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """Most bytes in live blocks at once (torch.cuda.max_memory_allocated)."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Physical memory mapped on `device` now (torch.cuda.memory_reserved)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    """Most physical memory mapped at once (torch.cuda.max_memory_reserved)."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None):
    """Restarts the peaks from the current figures
    (torch.cuda.reset_peak_memory_stats)."""
    _lib.load().reset_peak_stats(_device_index(device))


def empty_cache():
    """Releases every cached granule on every device (gpuslack_reset), as
    torch.cuda.empty_cache() would if torch forwarded it."""
    _lib.load().reset()


def set_per_process_memory_fraction(fraction, device=None):
    """Caps the physical memory gpuslack maps on `device` at `fraction`
    (0 < fraction <= 1) of the device's memory; past it, allocations fail
    as out of memory."""
    _lib.load().set_memory_fraction(float(fraction), _device_index(device))


def record_stream(tensor, stream):
    """Marks `tensor`'s memory as used on `stream` (a torch.cuda.Stream),
    like Tensor.record_stream: when the tensor is freed, its memory is not
    handed out again until the work queued on `stream` until then is done."""
    base = tensor.untyped_storage().data_ptr()
    _lib.load().record_stream(ctypes.c_void_p(base), ctypes.c_void_p(stream.cuda_stream))


def mark_steps(optimizer=None):
    """Marks a gpuslack step after every step of `optimizer` (a
    torch.optim.Optimizer), or, with none given, after every step of the
    first optimizer that steps in this process (a loop with several
    optimizers, a GAN's two, counts the first one's steps only: one mark per
    iteration). With gradient accumulation a step is an optimizer step.

    Returns the hook's handle: `handle.remove()` stops the marks. Harmless
    without gpuslack (gpuslack.step() then does nothing). Needs torch 2.0 or
    later (optimizer step hooks)."""
    if optimizer is not None:
        return optimizer.register_step_post_hook(_after_step)
    from torch.optim.optimizer import register_optimizer_step_post_hook

    first = []

    def after_any_step(opt, args, kwargs):
        if not first:
            first.append(weakref.ref(opt))
        if first[0]() is opt:
            gpuslack.step()

    return register_optimizer_step_post_hook(after_any_step)


def _after_step(optimizer, args, kwargs):
    gpuslack.step()
