"""Bodies of the gpuslack.torch.use() tests (run.py use), each run in its own
process on the simulated device: `python cases.py NAME [ARG]` prints one
line, `case: {...}` (JSON), for run.py to compare. use() must come before
CUDA is initialized, so every case starts from a fresh interpreter.

Kernels are simulated busy work, values garbage: nothing here reads a
tensor's contents. What is checked is memory (sizes, addresses, the
allocator's figures) and ordering (the simulated busy kernel counts writes
into memory it owns while it runs).
"""
import ctypes
import json
import os
import sys

import torch

import gpuslack.torch as gt

MiB = 1 << 20


def say(**out):
    print("case: " + json.dumps(out, sort_keys=True), flush=True)


def stats(allocator):
    """One workload on three streams, with its memory figures at each step,
    under torch's allocator ("torch": torch.cuda's functions) or gpuslack's
    ("gpuslack": use(), then gpuslack.torch's)."""
    if allocator == "gpuslack":
        gt.use()
        m = gt
    else:
        m = torch.cuda
    steps, keys = {}, set()

    def figures(name):
        s = m.memory_stats()
        keys.update(s)
        steps[name] = {"allocated": m.memory_allocated(), "peak_allocated": m.max_memory_allocated(),
                       "reserved": m.memory_reserved(), "peak_reserved": m.max_memory_reserved()}

    main, s1, s2 = torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.Stream()
    a = torch.empty(MiB, device="cuda")                      # 4 MiB, main stream
    for s in (s1, s2):
        s.wait_stream(main)
    with torch.cuda.stream(s1):
        b = torch.empty(3 * MiB // 4, device="cuda")         # 3 MiB on s1
        b2 = a + 1                                           # 4 MiB on s1, a kernel
    with torch.cuda.stream(s2):
        c = torch.ones(256 * 1024, device="cuda")            # 1 MiB on s2, a fill kernel
    figures("four_live")
    with torch.cuda.stream(s1):
        del b, b2                                            # freed on s1
    del c                                                    # freed on s2's tensor, from the main stream
    torch.cuda.synchronize()
    figures("three_freed")
    m.reset_peak_memory_stats()
    figures("peak_reset")
    with torch.cuda.stream(s2):
        d = torch.empty(4 * MiB, device="cuda")              # 16 MiB: a new peak
        del d
    torch.cuda.synchronize()
    figures("new_peak")
    out = {"steps": steps, "keys": sorted(keys)}
    if allocator == "gpuslack":
        # What torch does not forward to a pluggable allocator (see torch.py).
        try:
            torch.cuda.memory_allocated()
            out["torch_memory_allocated"] = "answers"
        except RuntimeError:
            out["torch_memory_allocated"] = "raises"
        torch.cuda.empty_cache()
        figures("torch_empty_cache")
    m.empty_cache()
    figures("empty_cache")
    del a
    torch.cuda.synchronize()
    m.empty_cache()
    figures("all_freed_empty_cache")
    say(**out)


def record_stream(which):
    """A tensor that a side stream still uses is freed on the main stream,
    and a tensor of its size is written at once on the main stream: the
    simulated busy kernel on the side stream owns the first one's memory
    for 200 ms and counts any write into it. `which` marks the use with
    gpuslack.torch.record_stream ("gpuslack"), Tensor.record_stream
    ("torch"), or not at all ("none")."""
    gt.use()
    sim = ctypes.CDLL(os.path.join(os.environ["SIMCUDA_DIR"], "libgpusim.so"))
    sim.gpusim_busy_kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint,
                                       ctypes.c_uint32, ctypes.POINTER(ctypes.c_int)]
    sim.gpusim_busy_kernel_violations.restype = ctypes.c_long
    n = MiB // 4  # 1 MiB of float32
    side = torch.cuda.Stream()
    x = torch.empty(n, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    status = ctypes.c_int(0)
    err = sim.gpusim_busy_kernel(side.cuda_stream, x.data_ptr(), x.nbytes, 200_000, 0x5A, ctypes.byref(status))
    assert err == 0, err
    if which == "gpuslack":
        gt.record_stream(x, side)
    elif which == "torch":
        x.record_stream(side)
    freed = x.data_ptr()
    del x
    y = torch.empty(n, device="cuda")
    y.copy_(torch.empty(n).fill_(1.0))  # a copy moves bytes: a write into y's memory now
    torch.cuda.synchronize()
    say(which=which, reused=y.data_ptr() == freed, violations=sim.gpusim_busy_kernel_violations(),
        status=status.value)


class Dense(torch.nn.Module):
    """y = x W + b without cuBLAS (which cannot load on the simulated device)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) / n_in ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return (x.unsqueeze(-1) * self.weight).sum(-2) + self.bias


def graph():
    """torch.cuda.graph capture of a model's forward pass under use(), after
    warm-up on a side stream (as torch's documentation does it), and
    replays; the figures before and after."""
    gt.use()
    model = torch.nn.Sequential(Dense(64, 32), torch.nn.ReLU(), torch.nn.LayerNorm(32), Dense(32, 10)).cuda()
    x = torch.randn(32, 64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            y = model(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    before = gt.memory_stats()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    for _ in range(5):
        g.replay()
    torch.cuda.synchronize()
    after = gt.memory_stats()
    say(before=before, after=after, output_bytes=y.nbytes, output_ptr_nonzero=y.data_ptr() != 0)


def capture():
    """torch.cuda.graph capture of temporaries that are freed inside it, under
    use() with no hook (no LD_PRELOAD): the capture must survive, no tensor
    may get NULL, and no address the graph used may go to a tensor made
    after it (a replay would write into it)."""
    gt.use()
    n = 256 * 1024
    x = torch.ones(n, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            warm = x * 2
    torch.cuda.current_stream().wait_stream(side)
    del warm
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    inside, error = [], None
    try:
        with torch.cuda.graph(g):
            tmp = torch.zeros(n, device="cuda")
            tmp2 = x * 2
            out = tmp + tmp2
            inside = [tmp.data_ptr(), tmp2.data_ptr(), out.data_ptr()]
            del tmp, tmp2
        g.replay()
        torch.cuda.synchronize()
    except RuntimeError as e:
        error = str(e).splitlines()[0]
    after = [torch.empty(n, device="cuda") for _ in range(6)]
    nbytes = n * 4
    reused = sorted({a.data_ptr() for a in after for p in inside if p < a.data_ptr() + nbytes and a.data_ptr() < p + nbytes})
    say(error=error, inside_nonzero=bool(inside) and all(inside), reused=len(reused),
        after_nonzero=all(a.data_ptr() for a in after))


if __name__ == "__main__":
    name, args = sys.argv[1], sys.argv[2:]
    {"stats": stats, "record_stream": record_stream, "graph": graph, "capture": capture}[name](*args)
