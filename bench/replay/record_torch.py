#!/usr/bin/env python3
"""Records allocation traces of real PyTorch models on the simulated device:
the trace set of bench/traces/ (its README.md says how each was made).

    record_torch.py --build DIR --torch-python PY [--out DIR] [--steps N] [MODEL...]
    record_torch.py --list

scripts/record-traces.sh is the usual way in (it builds the simulated
device and finds the pinned torch). Run by any Python 3.9+; each MODEL is
recorded in a child process of its own under PY (a fresh allocator and a
fresh device each), with LD_LIBRARY_PATH=DIR/simcuda,
GPUSIM_DEVICE_MEMORY=80G (the device's size is a number here: untouched
device memory costs the host nothing) and torch's default caching
allocator. The child turns on torch.cuda.memory._record_memory_history
before the model's first tensor, runs its steps, takes
torch.cuda.memory._snapshot(), drops the stack frames (trace_events.py
needs none; they would be most of the file) and writes
OUT/<model>.pickle.gz (gzip, mtime 0). With no MODEL every model but
`tiny` is recorded. A model recorded twice makes the same requests; the
order of some frees within a step can differ (autograd's backward runs on
a thread of its own), and addresses and timestamps do.

The models are defined here, with seeded shapes: kernels are not computed
on the simulated device (values are garbage), but every tensor torch
allocates and frees is real, so the allocation pattern is the model's.
The first line of each model's docstring is what --list and the README say.

Exit status 1 when a child fails (its stderr's tail is printed).
"""
import argparse
import gzip
import io
import os
import pickle
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ------------------------------------------------------------ the models --
# Run in the child under the torch Python; import torch only there.

def gpt_classes(torch):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, cache=None):
            b, n, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (t.view(b, n, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
            if cache is not None:  # decoding: the cache grows by torch.cat, as many generate loops do
                if "k" in cache:
                    k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
                cache["k"], cache["v"] = k, v
            y = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None or n > 1)
            x = x + self.proj(y.transpose(1, 2).reshape(b, n, d))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self, vocab, d, layers, heads, max_len, checkpoint=False):
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            self.checkpoint = checkpoint

        def forward(self, tokens, caches=None, start=0):
            n = tokens.shape[1]
            x = self.embed(tokens) + self.pos(torch.arange(start, start + n, device=tokens.device))
            for i, block in enumerate(self.blocks):
                if caches is not None:
                    x = block(x, caches[i])
                elif self.checkpoint:
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return self.head(self.ln(x))

    return GPT


def train_gpt(torch, steps, vocab, d, layers, heads, batch, lengths, dtype=None, checkpoint=False, scaler=False):
    GPT = gpt_classes(torch)
    dev = torch.device("cuda")
    model = GPT(vocab, d, layers, heads, max(lengths), checkpoint).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    grad_scaler = torch.amp.GradScaler("cuda") if scaler else None
    rng = random.Random(1)
    for _ in range(steps):
        n = rng.choice(lengths)  # a new sequence length each step, as batches of real text have
        tokens = torch.randint(0, vocab, (batch, n + 1), device=dev)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            logits = model(tokens[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), tokens[:, 1:].reshape(-1))
        if grad_scaler:
            grad_scaler.scale(loss).backward()
            grad_scaler.step(opt)
            grad_scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
        del logits, loss, tokens


def gpt_train_fp32(torch, steps):
    """GPT-style decoder (d 512, 8 layers, 8 heads, vocab 32000, ~58M params) trained in fp32 with AdamW, batch 8, sequence length drawn from 128..512 each step."""
    train_gpt(torch, steps, 32000, 512, 8, 8, 8, [128, 192, 256, 384, 512])


def gpt_train_bf16(torch, steps):
    """GPT-style decoder (d 768, 12 layers, 12 heads, vocab 50304, ~163M params: GPT-2 small's shape, its head untied) trained under autocast bf16 with AdamW (fp32 master weights), batch 4, sequence length drawn from 256..1024 each step."""
    train_gpt(torch, steps, 50304, 768, 12, 12, 4, [256, 384, 512, 768, 1024], dtype=torch.bfloat16)


def gpt_train_fp16_ckpt(torch, steps):
    """GPT-style decoder (d 1024, 16 layers, 16 heads, vocab 32000, ~268M params) trained under autocast fp16 with GradScaler and AdamW, activation checkpointing of every block (torch.utils.checkpoint, non-reentrant), batch 4, sequence length drawn from 512..1024 each step."""
    train_gpt(torch, steps, 32000, 1024, 16, 16, 4, [512, 640, 768, 1024], dtype=torch.float16, checkpoint=True,
              scaler=True)


def decode_gpt(torch, model, steps, batch, prompts, new_tokens, vocab):
    """`steps` requests: a prompt of a length drawn from `prompts`, then
    `new_tokens` greedy decoding steps with a per-layer KV cache grown by
    torch.cat (a new, longer cache tensor every step, as many generate loops do)."""
    dev = torch.device("cuda")
    rng = random.Random(2)
    with torch.inference_mode():
        for _ in range(steps):
            n = rng.choice(prompts)
            tokens = torch.randint(0, vocab, (batch, n), device=dev)
            caches = [{} for _ in model.blocks]
            logits = model(tokens, caches)
            out = [logits[:, -1].argmax(-1, keepdim=True)]
            for i in range(new_tokens):
                logits = model(out[-1], caches, start=n + i)
                out.append(logits[:, -1].argmax(-1, keepdim=True))
            result = torch.cat(out, dim=1)
            del caches, logits, out, result, tokens


def gpt_decode_bf16(torch, steps):
    """GPT-style decoder (d 1024, 16 layers, 16 heads, vocab 32000, ~268M params) in bf16, inference: `steps` requests of batch 8, each a prompt of 128..512 tokens (drawn) then 128 greedy decoding steps with a per-layer KV cache grown by torch.cat."""
    model = gpt_classes(torch)(32000, 1024, 16, 16, 1024).to(torch.device("cuda"), torch.bfloat16).eval()
    decode_gpt(torch, model, steps, 8, [128, 256, 384, 512], 128, 32000)


def gpt_decode_large_bf16(torch, steps):
    """GPT-style decoder (d 2048, 24 layers, 16 heads, vocab 32000, ~1.34B params) made in bf16 on the device, inference: `steps` requests of batch 4, each a prompt of 512..2048 tokens (drawn) then 64 greedy decoding steps with a per-layer KV cache grown by torch.cat."""
    with torch.device("cuda"):  # made on the device, as large models are loaded
        dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            model = gpt_classes(torch)(32000, 2048, 24, 16, 2048 + 64).eval()
        finally:
            torch.set_default_dtype(dtype)
    decode_gpt(torch, model, steps, 4, [512, 1024, 1536, 2048], 64, 32000)


def cnn_train_bf16(torch, steps):
    """ResNet-style CNN (stem + 4 stages of 2 residual blocks, 64..512 channels, ~11M params, ResNet-18's shape) trained under autocast bf16 with SGD momentum, batch 64 of 3x224x224 images, channels_last; cuDNN off (torch's own convolutions)."""
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                                      nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Residual(cin, cout, stride), Residual(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    dev = torch.device("cuda")
    model = nn.Sequential(*layers).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        x = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (64,), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, y, loss


def gpt_train_overlap_bf16(torch, steps):
    """GPT-style decoder (d 512, 8 layers, 8 heads, vocab 32000, ~58M params) trained under autocast bf16 with AdamW, batch 8 as 4 microbatches of sequence length 128..512 (drawn each step): each next microbatch's tokens made on a side stream while the current one runs (record_stream), and the gradients packed into 16 MiB buckets and scaled on a communication stream after backward, as overlapped data loading and gradient all-reduce do: three streams."""
    GPT = gpt_classes(torch)
    dev = torch.device("cuda")
    model = GPT(32000, 512, 8, 8, 512).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    load, comm = torch.cuda.Stream(), torch.cuda.Stream()
    main = torch.cuda.current_stream()
    rng = random.Random(3)
    bucket_elems = (16 << 20) // 4

    def next_tokens(n):
        with torch.cuda.stream(load):
            return torch.randint(0, 32000, (2, n + 1), device=dev)

    for _ in range(steps):
        n = rng.choice([128, 192, 256, 384, 512])
        tokens = next_tokens(n)
        for micro in range(4):
            main.wait_stream(load)
            cur = tokens
            cur.record_stream(main)
            if micro < 3:
                tokens = next_tokens(n)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(cur[:, :-1])
                loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, 32000), cur[:, 1:].reshape(-1))
            (loss / 4).backward()
            del logits, loss, cur
        comm.wait_stream(main)
        with torch.cuda.stream(comm):
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            i = 0
            while i < len(grads):
                group, elems = [], 0
                while i < len(grads) and (not group or elems + grads[i].numel() <= bucket_elems):
                    group.append(grads[i])
                    elems += grads[i].numel()
                    i += 1
                bucket = torch.cat([g.reshape(-1) for g in group])
                bucket.mul_(0.5)
                off = 0
                for g in group:
                    g.copy_(bucket[off:off + g.numel()].view_as(g))
                    off += g.numel()
                del bucket
        main.wait_stream(comm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        del tokens


def tiny(torch, steps):
    """A tiny GPT-style decoder (d 64, 2 layers, vocab 256) trained in fp32 with AdamW, batch 2, sequence length 16..64: the recorder's test."""
    train_gpt(torch, steps, 256, 64, 2, 4, 2, [16, 32, 64])


# name -> (function, steps by default)
MODELS = {
    "gpt-train-fp32": (gpt_train_fp32, 6),
    "gpt-train-bf16": (gpt_train_bf16, 6),
    "gpt-train-fp16-ckpt": (gpt_train_fp16_ckpt, 6),
    "gpt-decode-bf16": (gpt_decode_bf16, 2),
    "gpt-decode-large-bf16": (gpt_decode_large_bf16, 2),
    "cnn-train-bf16": (cnn_train_bf16, 4),
    "gpt-train-overlap-bf16": (gpt_train_overlap_bf16, 6),
    "tiny": (tiny, 3),
}


def strip(snapshot):
    """The snapshot without stack frames (trace_events.py reads none)."""
    for trace in snapshot.get("device_traces", []):
        for e in trace:
            e.pop("frames", None)
    for s in snapshot.get("segments", []):
        for b in s.get("blocks", []):
            b.pop("frames", None)
    return snapshot


def record(name, steps, out):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    # The simulated device has no cuDNN (CUDNN_STATUS_NOT_INITIALIZED): torch's
    # own convolutions (and attention without the cuDNN backend) run instead,
    # with their own workspaces.
    torch.backends.cudnn.enabled = False
    torch.backends.cuda.enable_cudnn_sdp(False)
    torch.cuda.init()
    # No stack context: trace_events.py reads none, and frames would be most of the file.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=10 ** 8)
    torch.manual_seed(0)
    t0 = time.monotonic()
    MODELS[name][0](torch, steps)
    torch.cuda.synchronize()
    snapshot = strip(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(enabled=None)
    data = pickle.dumps(snapshot, protocol=4)
    with open(out + ".part", "wb") as f:  # a failed run leaves no half trace under the name
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, filename="") as z:
            z.write(data)
    os.replace(out + ".part", out)
    events = sum(len(t) for t in snapshot["device_traces"])
    print("%s: %d steps, %d events, peak allocated %.0f MiB, peak reserved %.0f MiB, %.1f s -> %s (%d bytes)"
          % (name, steps, events, torch.cuda.max_memory_allocated() / 2.0 ** 20,
             torch.cuda.max_memory_reserved() / 2.0 ** 20, time.monotonic() - t0, out, os.path.getsize(out)),
          flush=True)


# ------------------------------------------------------------ the parent --

def sim_env(build):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF")}
    simcuda = os.path.join(build, "simcuda")
    env["LD_LIBRARY_PATH"] = simcuda + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["GPUSIM_DEVICE_MEMORY"] = "80G"
    env["PYTHONWARNINGS"] = "ignore"  # torch warns that NumPy is not installed
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*", help="models to record (default: all but tiny)")
    ap.add_argument("--list", action="store_true", help="list the models and what each runs")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--torch-python")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "traces"))
    ap.add_argument("--steps", type=int, help="steps (requests, for decoding) per model (default: each model's own)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.list:
        for name, (fn, steps) in MODELS.items():
            print("%-20s %d steps: %s" % (name, steps, fn.__doc__.split("\n")[0]))
        return 0
    unknown = [m for m in args.models + ([args.worker] if args.worker else []) if m not in MODELS]
    if unknown:
        ap.error("unknown model %s (--list shows them)" % ", ".join(unknown))
    if args.steps is not None and args.steps < 1:
        ap.error("--steps must be >= 1")
    if args.worker:
        return record(args.worker, args.steps or MODELS[args.worker][1], args.out)
    if not args.torch_python:
        ap.error("--torch-python is needed (scripts/torch-env.sh prints it)")
    os.makedirs(args.out, exist_ok=True)
    failed = 0
    for name in args.models or [m for m in MODELS if m != "tiny"]:
        out = os.path.join(os.path.abspath(args.out), name + ".pickle.gz")
        cmd = [args.torch_python, "-B", os.path.abspath(__file__), "--worker", name, "--out", out]
        if args.steps:
            cmd += ["--steps", str(args.steps)]
        r = subprocess.run(cmd, env=sim_env(os.path.abspath(args.build)), capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            failed = 1
            print("record_torch: %s failed (exit %d):\n%s" % (name, r.returncode, r.stderr[-4000:]), file=sys.stderr)
    return failed


if __name__ == "__main__":
    sys.exit(main())
