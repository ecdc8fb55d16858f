"""Real PyTorch with gpuslack on the simulated device (ctest label `torch`,
Release builds; registered by ../torch_sim.cmake). Runs under the pinned
torch's Python; each check starts fresh processes (cases.py, train.py) and
fails on any lookup the simulated device logs as unanswered.

  run.py use       gpuslack.torch.use(): memory_stats() has torch's keys, and
                   allocated and its peak equal torch's own figures for the
                   same workload on three streams (reserved differs by
                   design); peaks reset; empty_cache; record_stream
                   fences; torch.cuda.graph capture and replay; a capture
                   that frees temporaries keeps them from later tensors
  run.py preload   LD_PRELOAD=libgpuslack.so under torch's default allocator
                   and expandable_segments:True: what the summary shows
  run.py train     train.py (DataLoader, 4 workers) under LD_PRELOAD with
                   allocator:vmm, pin_memory False and True: staged copies
                   and the allocator's figures in the summary
  run.py refork    train.py for 50 epochs, workers re-forked every epoch:
                   finishes (no hang) within its timeout
  run.py launcher  python -m gpuslack run -- python train.py, end to end
  run.py share     torch.multiprocessing shares a CUDA tensor (and a view at
                   an offset) with a spawned process, bytes checked both
                   ways (share.py): under torch's allocator alone, and under
                   LD_PRELOAD with allocator:vmm (the handle is gpuslack's);
                   under gpuslack.torch.use() torch itself refuses
                   (CUDAPluggableAllocator has no shareIpcHandle)
  run.py pyframes  call sites name train.py's lines (Note [Python frames]):
                   the pageable x.to('cuda', non_blocking=True) and
                   torch.cuda.empty_cache's cudaFree (both ops release the
                   GIL) list train.py's frames first, then native ones

Environment (set by ctest): TORCH_PYTHON, SIMCUDA_DIR, GPUSLACK_LIBRARY.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "python_shim")
UNANSWERED = "gpusim: unanswered"
MiB = 1 << 20


class Failed(Exception):
    pass


def check(ok, what, *detail):
    if not ok:
        raise Failed(what + ("".join("\n  %s" % d for d in detail)))


def env_path(name):
    value = os.environ.get(name)
    if not value:
        sys.exit("torch run.py: %s is not set (ctest sets it; see torch_sim.cmake)" % name)
    return value


PY = env_path("TORCH_PYTHON")
if not os.path.exists(PY):
    sys.exit("torch run.py: no torch at %s: run scripts/torch-env.sh (scripts/test.sh does)" % PY)
SIMCUDA, LIBRARY = env_path("SIMCUDA_DIR"), env_path("GPUSLACK_LIBRARY")


def run(args, preload=False, conf="text_summary:off,json_summary:false", alloc_conf=None, out=None,
        timeout=120, cwd=None):
    """Runs `args` (after the torch Python) on the simulated device; returns
    the CompletedProcess, after failing on a non-zero exit or an unanswered
    lookup."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF", "GPUSLACK_CONF", "GPUSLACK_OUTPUT")}
    env["LD_LIBRARY_PATH"] = SIMCUDA + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PYTHONPATH"] = os.pathsep.join([SHIM, HERE])
    env["PYTHONWARNINGS"] = "ignore"  # torch warns that NumPy is not installed
    if conf is not None:
        env["GPUSLACK_CONF"] = conf
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    if preload:
        env["LD_PRELOAD"] = LIBRARY
    if out:
        env["GPUSLACK_OUTPUT"] = out
    label = " ".join(os.path.basename(a) for a in args)
    try:
        r = subprocess.run([PY] + args, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failed("%s: did not finish within %d s (a hang?)" % (label, timeout))
    unanswered = [line for line in r.stderr.splitlines() if UNANSWERED in line]
    check(r.returncode == 0 and not unanswered, "%s: exit %d%s" % (label, r.returncode,
                                                                   ", unanswered lookups" if unanswered else ""),
          "--- stdout", r.stdout, "--- stderr", r.stderr[-6000:])
    return r


def result(r, tag):
    lines = [line for line in r.stdout.splitlines() if line.startswith(tag + ": ")]
    check(lines, "no '%s:' line in the output" % tag, r.stdout)
    return json.loads(lines[-1][len(tag) + 2:])


def case(*args):
    return result(run([os.path.join(HERE, "cases.py")] + list(args)), "case")


def summary(folder):
    files = glob.glob(os.path.join(folder, "gpuslack-*.json"))
    check(len(files) == 1, "expected one summary in %s, found %s" % (folder, files))
    with open(files[0]) as f:
        return json.load(f)


def calls(doc):
    return {c["name"]: c for c in doc["calls"]}


# ---- use() ----

def use():
    theirs, ours = case("stats", "torch"), case("stats", "gpuslack")
    torch_keys = set(theirs["keys"])
    foreign = [k for k in ours["keys"] if not k.startswith("gpuslack.") and k not in torch_keys]
    check(not foreign, "gpuslack.torch.memory_stats() keys that torch's memory_stats() lacks: %s" % foreign)
    for step, t in theirs["steps"].items():
        g = ours["steps"][step]
        # The same tensors: the same bytes allocated, the same peaks.
        check(g["allocated"] == t["allocated"] and g["peak_allocated"] == t["peak_allocated"],
              "%s: gpuslack allocated %d (peak %d), torch %d (peak %d)" % (
                  step, g["allocated"], g["peak_allocated"], t["allocated"], t["peak_allocated"]))
        for who, f in (("gpuslack", g), ("torch", t)):
            check(f["allocated"] <= f["reserved"] <= f["peak_reserved"] and f["peak_allocated"] <= f["peak_reserved"],
                  "%s, %s: figures out of order: %s" % (who, step, f))
    s = ours["steps"]
    check(s["four_live"]["allocated"] == 12 * MiB, "four_live: %s" % s["four_live"])
    check(s["peak_reset"]["peak_allocated"] == s["peak_reset"]["allocated"] == 4 * MiB, "peak_reset: %s" % s["peak_reset"])
    check(s["new_peak"]["peak_allocated"] == 20 * MiB, "new_peak: %s" % s["new_peak"])
    # empty_cache releases down to the pages live blocks touch: the live
    # 4 MiB block holds the one 20 MiB page it opened (Note [Pages mapped
    # whole]; a handle is released only whole, as PyTorch's expandable
    # segments release their 20 MiB pages).
    check(s["empty_cache"]["reserved"] == 20 * MiB < s["new_peak"]["reserved"], "empty_cache: %s, new peak: %s"
          % (s["empty_cache"], s["new_peak"]))
    check(s["all_freed_empty_cache"]["reserved"] == 0, "all freed: %s" % s["all_freed_empty_cache"])
    # What torch does not forward to a pluggable allocator (documented in
    # gpuslack/torch.py): its figures raise, its empty_cache does nothing.
    check(ours["torch_memory_allocated"] == "raises", "torch.cuda.memory_allocated() under use(): %s"
          % ours["torch_memory_allocated"])
    check(s["torch_empty_cache"]["reserved"] == s["new_peak"]["reserved"], "torch.cuda.empty_cache() released memory")
    print("torch run.py use: memory_stats keys are torch's; allocated and peaks equal torch's at %d steps" % len(s))

    fenced = case("record_stream", "gpuslack")
    check(fenced["violations"] == 0 and fenced["status"] == 1 and not fenced["reused"],
          "gpuslack.torch.record_stream did not keep the memory from reuse: %s" % fenced)
    for which in ("torch", "none"):
        # Tensor.record_stream does nothing under a pluggable allocator: the
        # memory goes at once to the next tensor, under the side stream's
        # kernel (why gpuslack.torch.record_stream exists).
        r = case("record_stream", which)
        check(r["reused"] and r["violations"] == 1, "record_stream %s: %s" % (which, r))
    print("torch run.py use: record_stream fences a side stream's use; torch's own does nothing, as documented")

    g = case("graph")
    check(g["output_ptr_nonzero"], "the captured output has no memory: %s" % g)
    b, a = g["before"], g["after"]
    check(a["num_ooms"] == 0 and a["allocated_bytes.all.current"] == b["allocated_bytes.all.current"]
          and a["allocation.all.allocated"] > b["allocation.all.allocated"],
          "torch.cuda.graph under use(): before %s, after %s" % (b, a))
    print("torch run.py use: torch.cuda.graph captured and replayed under use()")

    c = case("capture")
    check(c["error"] is None and c["inside_nonzero"] and c["after_nonzero"] and c["reused"] == 0,
          "capture under use() with temporaries freed inside it (a capture error, a NULL block, or a block "
          "the graph uses handed to a later tensor): %s" % c)
    print("torch run.py use: a capture's freed temporaries stay the graph's; no NULL, no invalidated capture")


# ---- LD_PRELOAD under torch's allocators ----

TENSORS = """
import torch
xs = [torch.empty(n, device="cuda") for n in (1 << 20, 3 << 20, 1 << 18)]
del xs[1]
torch.cuda.synchronize()
print("figures: {\\"reserved\\": %d, \\"allocated\\": %d}" % (torch.cuda.memory_reserved(), torch.cuda.memory_allocated()))
"""


def preload():
    with tempfile.TemporaryDirectory() as d:
        r = run(["-c", TENSORS], preload=True, conf="text_summary:off", out=d)
        f, doc = result(r, "figures"), summary(d)
        c = calls(doc)
        # torch's default allocator: one cudaMalloc per segment, all seen,
        # their bytes what torch reserved; no cudaFree (torch caches).
        check("cudaMalloc" in c and c["cudaMalloc"]["bytes"] == f["reserved"] and "cudaFree" not in c,
              "default allocator: cudaMalloc calls %s, torch reserved %d" % (c.get("cudaMalloc"), f["reserved"]))
        check(doc["allocator"] == [], "allocator rows without allocator:vmm: %s" % doc["allocator"])
    print("torch run.py preload: default allocator: %d cudaMalloc, %d bytes, as torch reserved" % (
        c["cudaMalloc"]["count"], f["reserved"]))
    with tempfile.TemporaryDirectory() as d:
        r = run(["-c", TENSORS], preload=True, conf="text_summary:off", out=d, alloc_conf="expandable_segments:True")
        f, doc = result(r, "figures"), summary(d)
        c = calls(doc)
        # Expandable segments reach the driver's VMM calls (cuMemCreate,
        # cuMemMap, cuMemSetAccess, cuMemAddressReserve) through
        # cudaGetDriverEntryPointByVersion, which hands out gpuslack's hooks
        # (issue 18): each is seen, as allocation, and the bytes torch
        # mapped are the bytes cuMemMap saw (what torch reserved, or more
        # when a segment's handles outlive a trim).
        vmm = ("cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemAddressReserve")
        seen = {n: c[n] for n in vmm if n in c}
        check(f["reserved"] > 0 and set(seen) == set(vmm)
              and all(v["category"] == "allocation" for v in seen.values())
              and seen["cuMemMap"]["bytes"] >= f["reserved"] and seen["cuMemCreate"]["bytes"] >= f["reserved"]
              and doc["categories"]["allocation"]["seconds"] > 0,
              "expandable_segments: VMM calls seen %s (torch reserved %d)" % (seen, f["reserved"]))
    print("torch run.py preload: expandable_segments: %d bytes reserved; seen through the entry points: %s" % (
        f["reserved"], ", ".join("%s %d calls, %d bytes" % (n, v["count"], v["bytes"]) for n, v in seen.items())))


# ---- training ----

TRAIN = os.path.join(HERE, "train.py")


def train():
    for pin in (False, True):
        with tempfile.TemporaryDirectory() as d:
            args = [TRAIN, "--epochs", "2", "--samples", "256", "--batch", "32", "--workers", "4"]
            r = run(args + (["--pin-memory"] if pin else []), preload=True,
                    conf="allocator:vmm,text_summary:off", out=d)
            t, doc = result(r, "train"), summary(d)
            check(t["steps"] == 16 and t["inputs_pinned"] == [pin], "train.py: %s" % t)
            h2d = {}  # by host memory, synchronous and asynchronous calls' rows together
            for c in doc["copies"]:
                if c["kind"] == "H2D":
                    h2d[c["host"]] = h2d.get(c["host"], 0) + c["count"]
            staged = doc["staging"]["h2d"]
            inputs = 2 * t["steps"]  # x and y of every batch
            if pin:
                # Batches come pinned (torch's host allocator: cudaHostAlloc);
                # only the model's parameters are pageable copies.
                check(h2d.get("pinned", 0) == inputs and "cudaHostAlloc" in calls(doc),
                      "pin_memory: copies %s" % h2d)
            else:
                check(h2d.get("pinned", 0) == 0 and h2d["pageable"] >= inputs, "pageable inputs: copies %s" % h2d)
            check(staged["staged"] == h2d["pageable"] and staged["passed"] == 0,
                  "pin_memory %s: pageable H2D %s, staging %s" % (pin, h2d, staged))
            (a,) = doc["allocator"]
            # torch caches on top of gpuslack: its cudaMalloc segments are
            # gpuslack's blocks.
            check(a["allocations"] == calls(doc)["cudaMalloc"]["count"] and a["failed_allocations"] == 0
                  and a["peak_reserved"] >= a["peak_allocated"] >= t["memory_reserved"] > 0,
                  "allocator: %s; torch reserved %d" % ({k: v for k, v in a.items() if k != "timeline"},
                                                         t["memory_reserved"]))
        print("torch run.py train: pin_memory %s: %d H2D copies pageable, %d staged; allocator peak reserved %d" % (
            pin, h2d.get("pageable", 0), staged["staged"], a["peak_reserved"]))


def refork():
    with tempfile.TemporaryDirectory() as d:
        # 50 epochs of 2 batches: DataLoader forks 4 new workers each epoch.
        r = run([TRAIN, "--epochs", "50", "--samples", "64", "--batch", "32", "--workers", "4"], preload=True,
                conf="allocator:vmm,text_summary:off", out=d, timeout=150)
        t = result(r, "train")
        check(t["steps"] == 100, "train.py: %s" % t)
        doc = summary(d)  # the parent's only: the workers make no CUDA call
        check(doc["reason"] == "exit", "summary written for %s" % doc["reason"])
    print("torch run.py refork: 50 epochs of re-forked workers finished")


def launcher():
    with tempfile.TemporaryDirectory() as d:
        r = run(["-m", "gpuslack", "run", "--out", d, "--conf", "allocator:vmm", "--", PY, TRAIN, "--epochs", "1",
                 "--workers", "2"], conf=None, cwd=d)
        t = result(r, "train")
        check(t["steps"] == 8, "train.py: %s" % t)
        where = [line for line in r.stderr.splitlines() if line.startswith("gpuslack: summary in ")]
        check(len(where) == 1, "the launcher did not say where the summary is", r.stderr[-3000:])
        doc = summary(d)
        check(where[0].split()[3] == glob.glob(os.path.join(d, "gpuslack-*.json"))[0]
              and "cudaMalloc" in calls(doc) and doc["allocator"] and doc["staging"]["h2d"]["staged"] > 0,
              "launcher summary: %s" % where[0])
        check("gpuslack: " in r.stderr, "no text summary on stderr")
    print("torch run.py launcher: python -m gpuslack run -- python train.py: %s" % where[0])


# ---- Python frames at call sites ----

PYFRAMES = '''import torch
x = torch.ones(1 << 20)  # pageable, 4 MiB

def to_device(t):
    return t.to("cuda", non_blocking=True)  # MARK to

def release_cache():
    torch.cuda.empty_cache()  # MARK empty

def step():
    y = to_device(x)  # MARK step_to
    z = torch.empty(64 << 20, device="cuda")
    del y, z
    release_cache()  # MARK step
    torch.cuda.synchronize()

for _ in range(3):
    step()
'''


def share():
    def shared(**kw):
        return result(run([os.path.join(HERE, "share.py")] + kw.pop("args", []), timeout=180, **kw), "share")
    for label, r, whose in (
            ("torch alone", shared(), "runtime"),
            ("LD_PRELOAD, allocator:vmm", shared(preload=True, conf="allocator:vmm,text_summary:off,json_summary:false"),
             "gpuslack")):
        check(r.get("handle") == whose, "%s: the IPC handle is not the %s's: %s" % (label, whose, r))
        check(r.get("consumer_saw") is True and r.get("view_offset") == 1000,
              "%s: the consumer did not see the producer's bytes: %s" % (label, r))
        check(r.get("producer_sees") is True and r.get("consumer_exit") == 0,
              "%s: the producer did not see the consumer's bytes: %s" % (label, r))
    r = shared(args=["use"])
    check("CUDAPluggableAllocator does not yet support shareIPcHandle" in r.get("producer_error", ""),
          "gpuslack.torch.use(): torch's pluggable allocator was expected to refuse to share: %s" % r)


def pyframes():
    lines = {}
    for i, text in enumerate(PYFRAMES.splitlines(), 1):
        if "# MARK " in text:
            lines[text.split("# MARK ")[1]] = i
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "train.py"), "w") as f:
            f.write(PYFRAMES)
        r = run(["train.py"], preload=True, cwd=d, out=d,
                conf="allocator:native,text_summary:file,call_site_threshold_us:0,top_call_sites:100")
        doc = summary(d)
        frees = [s["frames"] for s in doc["call_sites"] if s["api"] == "cudaFree"]
        release = "train.py:%d in release_cache (python)" % lines["empty"]
        step = "train.py:%d in step (python)" % lines["step"]
        # empty_cache's cudaFree: torch's Python line, then train.py's,
        # then the native frames.
        named = [f for f in frees if release in f]
        check(named, "no cudaFree call site names %s" % release, *[f[:4] for f in frees])
        f = named[0]
        check(f[0].startswith("torch/cuda/memory.py:") and f[0].endswith(" in empty_cache (python)")
              and f[1:3] == [release, step] and not f[-1].endswith("(python)"),
              "cudaFree from empty_cache: %s" % f)
        # The pageable copy of x.to(), sampled: train.py's line first.
        to = "train.py:%d in to_device (python)" % lines["to"]
        sites = [s["frames"] for s in doc["staging"]["sites"]]
        check(any(s[:2] == [to, "train.py:%d in step (python)" % lines["step_to"]] for s in sites),
              "pageable sites of Tensor.to: %s" % [s[:3] for s in sites])
        text = open(glob.glob(os.path.join(d, "gpuslack-*.txt"))[0]).read()
        check("at " + to in text and "at " + release in text, "the text summary does not show %s" % to, text)
    print("torch run.py pyframes: Tensor.to's pageable copy at %s; cudaFree from empty_cache at %s / %s" % (
        to, f[0], release))


if __name__ == "__main__":
    commands = {"share": share, "use": use, "preload": preload, "train": train, "refork": refork, "launcher": launcher,
                "pyframes": pyframes}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit("usage: run.py " + "|".join(commands))
    try:
        commands[sys.argv[1]]()
    except Failed as e:
        print("torch run.py %s: FAILED: %s" % (sys.argv[1], e))
        sys.exit(1)
