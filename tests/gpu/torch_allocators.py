#!/usr/bin/env python3
"""The GPU check of issue 7: one small transformer trained four ways.

    python3 tests/gpu/torch_allocators.py [--steps 200] [--json results.json]

Needs a CUDA GPU, a CUDA-enabled PyTorch and a built libgpuslack.so (found
as the gpuslack package finds it: GPUSLACK_LIBRARY, the installed package,
or build/libgpuslack.so of this checkout; --library overrides). Trains the
same seeded model on the same batches of variable sequence length for a
fixed number of steps, each way in its own process (an allocator is chosen
once per process):

  default     PyTorch's caching allocator
  expandable  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  use         gpuslack.torch.use(): gpuslack's VMM allocator as PyTorch's
              pluggable allocator (stream-ordered, no caching allocator)
  preload     LD_PRELOAD=libgpuslack.so with GPUSLACK_CONF=allocator:vmm:
              PyTorch's caching allocator on top of gpuslack's cudaMalloc

and prints one table: median step time, peak allocated, peak reserved,
utilization (peak allocated / peak reserved), device synchronizations from
frees, final loss and the largest loss difference from `default`. Exits 0
when every way's losses agree with `default` within --tolerance, 1 when
they do not, 2 when it cannot run (no torch, no GPU, no library), 3 when a
way's process failed. Takes about a minute on one H200 (default sizes);
each way has --timeout seconds.

What the columns mean, per way:
- peak allocated: bytes in live tensors at most (torch's
  max_memory_allocated; for `use`, gpuslack's peak of live blocks);
- peak reserved: device memory the allocator talking to the driver held at
  most: torch's max_memory_reserved for default and expandable, gpuslack's
  peak of mapped physical memory for use and preload (under preload,
  torch's own cache sits inside it);
- free syncs: frees that synchronized the device: torch's num_device_free
  (each cudaFree, or unmap of an expandable segment, waits for the GPU);
  for use, the frees gpuslack served with a wait (0 by construction; the
  waits it did under memory pressure are in `stall s`); for preload, the
  cudaFree calls gpuslack passed to the runtime (calls minus frees its
  allocator served).

Numerics: deterministic algorithms (math attention), TF32 off, no dropout; the losses of
the four ways should agree to float32 rounding. The allocator changes only
where tensors live, which can change the kernels cuBLAS picks (alignment)
and so the last bits; --tolerance (relative, default 1e-3) allows for that.

On the simulated device (tests/simcuda: torch.cuda.get_device_name names
"gpusim"; scripts/sim-torch.sh, ctest torch.gpu_script) the same run
works end to end with small sizes, but no kernel is computed: losses are
garbage, so they are not compared (the run says so and exits 0 when every
way ran); memory and the table are still produced, and any lookup the
simulated device could not answer (its `gpusim: unanswered` lines) is
passed on to stderr.

The pure parts (arguments, comparison, table) import nothing outside the
standard library and are unit-tested without torch
(tests/python/test_gpu_script.py).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

WAYS = ("default", "expandable", "use", "preload")
RESULT_PREFIX = "RESULT "
SIMULATED_DEVICE = "gpusim"  # in the simulated device's name (tests/simcuda)
HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python_shim")

EXIT_OK, EXIT_DIFFERENT, EXIT_CANNOT_RUN, EXIT_WAY_FAILED = 0, 1, 2, 3


# --- arguments ---------------------------------------------------------------

def positive_int(text):
    v = int(text)
    if v <= 0:
        raise argparse.ArgumentTypeError("%s is not a positive integer" % text)
    return v


def ways_list(text):
    ways = [w.strip() for w in text.split(",") if w.strip()]
    bad = [w for w in ways if w not in WAYS]
    if bad or not ways:
        raise argparse.ArgumentTypeError("ways are %s; got %r" % (",".join(WAYS), text))
    if ways[0] != "default":
        raise argparse.ArgumentTypeError("the first way must be default: the others are compared with it")
    return ways


def parse_args(argv):
    p = argparse.ArgumentParser(description="Train one small transformer four ways (PyTorch's allocator, "
                                "expandable segments, gpuslack.torch.use(), LD_PRELOAD) and compare them.")
    p.add_argument("--steps", type=positive_int, default=200, help="measured training steps (default 200)")
    p.add_argument("--warmup", type=int, default=10, help="steps before the measured ones (default 10)")
    p.add_argument("--batch", type=positive_int, default=16, help="sequences per batch (default 16)")
    p.add_argument("--min-len", type=positive_int, default=32, help="shortest sequence (default 32)")
    p.add_argument("--max-len", type=positive_int, default=1024, help="longest sequence (default 1024)")
    p.add_argument("--d-model", type=positive_int, default=512)
    p.add_argument("--layers", type=positive_int, default=4)
    p.add_argument("--heads", type=positive_int, default=8)
    p.add_argument("--vocab", type=positive_int, default=8192)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--tolerance", type=float, default=1e-3,
                   help="largest relative difference of any step's loss from default's (default 1e-3)")
    p.add_argument("--ways", type=ways_list, default=list(WAYS),
                   help="comma-separated, default first (default: %s)" % ",".join(WAYS))
    p.add_argument("--library", help="libgpuslack.so to use (default: as the gpuslack package finds it)")
    p.add_argument("--timeout", type=positive_int, default=240, help="seconds per way (default 240)")
    p.add_argument("--json", metavar="FILE", help="also write every result to FILE")
    p.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)  # internal: run one way here
    a = p.parse_args(argv)
    if a.min_len > a.max_len:
        p.error("--min-len %d is above --max-len %d" % (a.min_len, a.max_len))
    if a.warmup < 0:
        p.error("--warmup must be 0 or more")
    if a.d_model % a.heads:
        p.error("--d-model must be a multiple of --heads")
    if not a.tolerance >= 0:
        p.error("--tolerance must be 0 or more")
    return a


def child_argv(args, way):
    """The command line of the process that runs `way`."""
    argv = [sys.executable, os.path.abspath(__file__), "--child", way]
    for name in ("steps", "warmup", "batch", "min_len", "max_len", "d_model", "layers", "heads", "vocab", "seed"):
        argv += ["--" + name.replace("_", "-"), str(getattr(args, name))]
    return argv


def child_env(environ, way, library):
    """The environment of the process that runs `way`."""
    env = {k: v for k, v in environ.items()
           if k not in ("PYTORCH_CUDA_ALLOC_CONF", "GPUSLACK_CONF", "LD_PRELOAD", "GPUSLACK_LIBRARY")}
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # deterministic cuBLAS
    env["PYTHONPATH"] = os.pathsep.join([SHIM] + ([environ["PYTHONPATH"]] if environ.get("PYTHONPATH") else []))
    if way == "expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif way == "use":
        env["GPUSLACK_LIBRARY"] = library
        env["GPUSLACK_CONF"] = "text_summary:off,json_summary:false"
    elif way == "preload":
        env["GPUSLACK_LIBRARY"] = library
        env["LD_PRELOAD"] = library
        env["GPUSLACK_CONF"] = "allocator:vmm,text_summary:off,json_summary:false"
    return env


# --- comparison and table --------------------------------------------------------

def loss_difference(losses, reference):
    """The largest relative difference between two loss curves; inf when
    their lengths differ or a loss is not finite."""
    if len(losses) != len(reference) or not losses:
        return float("inf")
    worst = 0.0
    for a, b in zip(losses, reference):
        if a != a or b != b or a in (float("inf"), float("-inf")):  # NaN or inf
            return float("inf")
        worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
    return worst


def compare(results, tolerance):
    """Lines saying which ways differ from the first beyond `tolerance`
    (empty when all agree). Fills each result's "loss_diff"."""
    problems = []
    reference = results[0]
    for r in results:
        r["loss_diff"] = loss_difference(r["losses"], reference["losses"])
        if r["loss_diff"] > tolerance:
            problems.append("%s: losses differ from %s by %.3g (relative), more than %g" % (
                r["way"], reference["way"], r["loss_diff"], tolerance))
    return problems


def mib(n):
    return "-" if n is None else "%.1f MiB" % (n / 2.0 ** 20)


def format_table(results):
    """The table of every way, as lines of aligned text."""
    header = ["way", "step ms (median)", "peak allocated", "peak reserved", "utilization", "free syncs", "stall s",
              "final loss", "loss diff"]
    rows = [header]
    for r in results:
        util = (r["peak_allocated"] / r["peak_reserved"]) if r.get("peak_reserved") else None
        rows.append([r["way"], "%.2f" % statistics.median(r["step_ms"]) if r["step_ms"] else "-",
                     mib(r.get("peak_allocated")), mib(r.get("peak_reserved")),
                     "-" if util is None else "%.1f%%" % (100 * util),
                     "-" if r.get("free_syncs") is None else "%d" % r["free_syncs"],
                     "-" if r.get("stall_s") is None else "%.3f" % r["stall_s"],
                     "%.6f" % r["losses"][-1] if r["losses"] else "-",
                     "-" if "loss_diff" not in r else "%.2e" % r["loss_diff"]])
    width = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        lines.append("  ".join(c.ljust(width[i]) if i == 0 else c.rjust(width[i]) for i, c in enumerate(row)).rstrip())
    lines.insert(1, "  ".join("-" * w for w in width))
    return lines


def is_simulated(device_name):
    """Whether a device name is the simulated device's, whose kernels compute nothing."""
    return SIMULATED_DEVICE in (device_name or "")


def simulator_lines(stderr):
    """The simulated device's own lines in a way's stderr (unanswered lookups)."""
    return [line for line in stderr.splitlines() if line.startswith("gpusim:")]


def parse_result(stdout):
    """The result a way's process printed (its last RESULT line), or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return None


# --- one way, in its own process --------------------------------------------------

def batch_lengths(args):
    """The sequence length of every step, the same for every way."""
    import random

    rng = random.Random(args.seed)
    return [rng.randint(args.min_len, args.max_len) for _ in range(args.warmup + args.steps)]


def train(args):
    """Runs `args.child`'s way in this process; returns its result dict."""
    way = args.child
    if way == "use":
        import gpuslack.torch

        gpuslack.torch.use()  # before torch touches CUDA
    import time

    import torch

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    # The math attention is deterministic; the fused kernels' backward is not.
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    device = torch.device("cuda", 0)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(args.vocab, args.d_model)
            self.pos = torch.nn.Embedding(args.max_len, args.d_model)
            layer = torch.nn.TransformerEncoderLayer(args.d_model, args.heads, 4 * args.d_model, dropout=0.0,
                                                     batch_first=True, norm_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, args.layers, enable_nested_tensor=False)
            self.head = torch.nn.Linear(args.d_model, args.vocab)

        def forward(self, tokens):
            n = tokens.shape[1]
            mask = torch.nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device)
            h = self.embed(tokens) + self.pos(torch.arange(n, device=tokens.device))
            return self.head(self.encoder(h, mask=mask, is_causal=True))

    model = Model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.Generator().manual_seed(args.seed + 1)
    losses, step_ms = [], []
    for step, n in enumerate(batch_lengths(args)):
        tokens = torch.randint(0, args.vocab, (args.batch, n + 1), generator=data).to(device, non_blocking=False)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        value = loss.item()  # waits for the step
        if step >= args.warmup:
            step_ms.append((time.perf_counter() - t0) * 1e3)
            losses.append(value)
    torch.cuda.synchronize()
    result = {"way": way, "losses": losses, "step_ms": step_ms, "torch": torch.__version__,
              "device_name": torch.cuda.get_device_name(0)}
    result.update(memory_figures(way, torch))
    return result


def memory_figures(way, torch):
    if way in ("default", "expandable"):
        s = torch.cuda.memory_stats(0)
        return {"peak_allocated": torch.cuda.max_memory_allocated(0), "peak_reserved": torch.cuda.max_memory_reserved(0),
                "free_syncs": s.get("num_device_free", 0), "stall_s": None}
    import gpuslack

    d = gpuslack.device_stats(0) or {}
    if way == "use":
        return {"peak_allocated": d.get("peak_allocated"), "peak_reserved": d.get("peak_reserved"),
                "free_syncs": 0, "stall_s": d.get("stall_s")}
    doc = gpuslack.stats() or {}
    frees = sum(c["count"] for c in doc.get("calls", []) if c["name"] == "cudaFree")
    served = sum(a["frees"] for a in doc.get("allocator", []))
    return {"peak_allocated": torch.cuda.max_memory_allocated(0), "peak_reserved": d.get("peak_reserved"),
            "free_syncs": max(frees - served, 0), "stall_s": d.get("stall_s"),
            "torch_peak_reserved": torch.cuda.max_memory_reserved(0)}


# --- the whole check ------------------------------------------------------------------

def find_library(args):
    if args.library:
        return os.path.abspath(args.library) if os.path.isfile(args.library) else None
    sys.path.insert(0, SHIM)
    try:
        import gpuslack

        return gpuslack.library_path()
    except Exception as e:  # LibraryNotFound, or no package at all
        print("torch_allocators: %s" % e, file=sys.stderr)
        return None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child:
        print(RESULT_PREFIX + json.dumps(train(args)), flush=True)
        return EXIT_OK
    library = None
    if any(w in ("use", "preload") for w in args.ways):
        library = find_library(args)
        if library is None:
            print("torch_allocators: no libgpuslack.so (build it, or pass --library)", file=sys.stderr)
            return EXIT_CANNOT_RUN
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available(), "
                            "'torch %s sees no CUDA device' % torch.__version__"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("torch_allocators: cannot run: %s" % (probe.stderr.strip().splitlines() or ["?"])[-1], file=sys.stderr)
        return EXIT_CANNOT_RUN
    results = []
    for way in args.ways:
        print("torch_allocators: %s ..." % way, file=sys.stderr, flush=True)
        try:
            r = subprocess.run(child_argv(args, way), env=child_env(os.environ, way, library), capture_output=True,
                               text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print("torch_allocators: %s: took more than %d s" % (way, args.timeout), file=sys.stderr)
            return EXIT_WAY_FAILED
        result = parse_result(r.stdout) if r.returncode == 0 else None
        if result is None:
            print("torch_allocators: %s failed (exit %d):\n%s" % (way, r.returncode, r.stderr[-4000:]), file=sys.stderr)
            return EXIT_WAY_FAILED
        for line in simulator_lines(r.stderr):
            print("torch_allocators: %s: %s" % (way, line), file=sys.stderr)
        results.append(result)
    simulated = is_simulated(results[0]["device_name"])
    problems = [] if simulated else compare(results, args.tolerance)
    print("torch_allocators: %d steps (+%d warmup), batch %d, sequence length %d..%d, d_model %d, %d layers; "
          "torch %s on %s" % (args.steps, args.warmup, args.batch, args.min_len, args.max_len, args.d_model,
                              args.layers, results[0]["torch"], results[0]["device_name"]))
    for line in format_table(results):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(args).items() if k != "child"}, "results": results}, f,
                      indent=1)
    for p in problems:
        print("torch_allocators: " + p, file=sys.stderr)
    if simulated:
        print("torch_allocators: every way ran on the simulated device (%s): kernels compute nothing there, so the "
              "losses are garbage and were not compared" % results[0]["device_name"])
        return EXIT_OK
    print("torch_allocators: %s" % ("results agree within %g" % args.tolerance if not problems else "FAILED"))
    return EXIT_DIFFERENT if problems else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
