"""PyTorch DistributedDataParallel over NCCL, across processes, on the
simulated device under gpuslack (ctest `torch.ddp`, label `torch`, Release
builds; registered by ../torch_sim.cmake). Runs under the pinned torch's
Python docs/deploy.md's torchrun recipe (its block `torchrun`, read from the
page: the page's commands are the tested ones):

    python3 -m gpuslack run --out gpuslack-out -- torchrun --standalone --nproc_per_node 4 train.py --steps 3
    python3 -m gpuslack merge gpuslack-out --out gpuslack-out/report

with the torch's Python for python3, its torchrun, ddp.py for train.py and a
temporary folder for gpuslack-out; GPUSLACK_CONF=collective_timing_every:1,
text_summary:off; GPUSIM_DEVICE_COUNT=4 and the simulated libraries first on
LD_LIBRARY_PATH (torchrun's rank processes inherit both and LD_PRELOAD;
the pinned torch has no nvidia-nccl wheel, so its libtorch_cuda.so finds
the simulated libnccl.so.2 there: scripts/torch-env.sh). Each rank runs
ProcessGroupNCCL's real path on the simulated NCCL's communicators across
processes (tests/simcuda/README.md, "Across processes"). Then checks:

  - the 4 ranks finished, each on cuda:LOCAL_RANK, and wrote one summary
    each (torchrun's own process makes no CUDA call and writes none);
  - each summary: the job is torchrun's, rank 0..3 of 4, an NCCL
    communicator of 4 ranks and the subgroup's of 2 (ncclCommSplit across
    processes, whose all-reduce summed the right values), both on the
    rank's device; a collectives section
    whose all-reduce rows (4 ranks, every call timed, GPU time > 0) carry
    exactly `steps` x the gradient bytes in the gradient buckets (each
    step all-reduces every gradient once), in buckets of tens of MiB, and
    the broadcast of the parameters at DDP's construction;
  - `python -m gpuslack merge` merges the 4 into one job report: 4 ranks,
    world size 4, collectives from 4 ranks, all-reduce groups of 4 and 2
    ranks whose calls and bytes are the sum of the ranks'.

    ddp_run.py [--algo-proto]

--algo-proto also checks NCCL's algorithm and protocol on the rows
(algo_proto() below; the 4-rank rows): the figures engineer P's profiler plugin adds
(CollectiveRow.algo/.proto, docs/summary.md). NOT yet registered with
ctest: the lead adds the flag to torch.ddp's command when the plugin
lands.

Environment (set by ctest): TORCH_PYTHON, SIMCUDA_DIR, GPUSLACK_LIBRARY.
"""
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SHIM = os.path.join(ROOT, "python_shim")
DDP = os.path.join(HERE, "ddp.py")
UNANSWERED = "gpusim: unanswered"
RANKS = 4
STEPS = 3
MiB = 1 << 20


class Failed(Exception):
    pass


def check(ok, what, *detail):
    if not ok:
        raise Failed(what + ("".join("\n  %s" % d for d in detail)))


def env_path(name):
    value = os.environ.get(name)
    if not value:
        sys.exit("torch ddp_run.py: %s is not set (ctest sets it; see torch_sim.cmake)" % name)
    return value


def environment():
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "GPUSLACK_CONF", "GPUSLACK_OUTPUT", "PYTORCH_CUDA_ALLOC_CONF")
           and not k.startswith(("GPUSIM_", "NCCL_", "TORCHELASTIC_", "MASTER_"))}
    env["LD_LIBRARY_PATH"] = env_path("SIMCUDA_DIR") + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
                                                       else "")
    env["GPUSLACK_LIBRARY"] = env_path("GPUSLACK_LIBRARY")
    env["PYTHONPATH"] = SHIM
    env["PYTHONWARNINGS"] = "ignore"  # torch warns that NumPy is not installed
    env["GPUSIM_DEVICE_COUNT"] = str(RANKS)
    env["OMP_NUM_THREADS"] = "1"  # what torchrun sets anyway, without its warning
    return env


def doc_commands(torchrun, out, report):
    """docs/deploy.md's torchrun block as two argument lists for launch():
    the run and the merge, with this test's torchrun, ddp.py and folders
    for the page's torchrun, train.py, gpuslack-out and gpuslack-out/report."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
    import doc_blocks
    text = doc_blocks.block("torchrun")
    lines = [shlex.split(line) for line in text.splitlines() if line.strip()]
    check(len(lines) == 2 and all(l[:3] == ["python3", "-m", "gpuslack"] for l in lines)
          and [l[3] for l in lines] == ["run", "merge"],
          "docs/deploy.md's torchrun block is not `python3 -m gpuslack run ...` then `... merge ...`", text)
    subst = {"torchrun": torchrun, "train.py": DDP, "gpuslack-out": out, "gpuslack-out/report": report}
    run, merge = ([subst.get(a, a) for a in l[1:]] for l in lines)
    check(torchrun in run and DDP in run and out in run and run[run.index("--nproc_per_node") + 1] == str(RANKS)
          and run[-2:] == ["--steps", str(STEPS)] and merge[-3:] == [out, "--out", report],
          "docs/deploy.md's torchrun block: expected torchrun, --nproc_per_node %d, train.py --steps %d, "
          "gpuslack-out and a merge of it into gpuslack-out/report" % (RANKS, STEPS), text)
    return run, merge


def launch(py, args, env, label, timeout):
    t0 = time.monotonic()
    try:
        r = subprocess.run([py] + args, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise Failed("%s: did not finish within %d s (a hang?)" % (label, timeout),
                     "--- stderr", (e.stderr or b"")[-6000:])
    unanswered = [line for line in r.stderr.splitlines() if UNANSWERED in line]
    check(r.returncode == 0 and not unanswered,
          "%s: exit %d%s" % (label, r.returncode, ", unanswered lookups" if unanswered else ""),
          "--- stdout", r.stdout[-3000:], "--- stderr", r.stderr[-8000:])
    return r, time.monotonic() - t0


def rank_lines(stdout):
    out = {}
    for line in stdout.splitlines():
        if line.startswith("ddp: "):
            d = json.loads(line[5:])
            out[d["rank"]] = d
    return out


def check_rank(doc, line):
    rank = doc["rank"]
    job = doc["job"]
    check(job["launcher"] == "torchrun" and job["world_size"] == RANKS and job["local_rank"] == rank,
          "rank %d: job %s" % (rank, job))
    # The default group's communicator and the subgroup's (ncclCommSplit:
    # 2 ranks, this rank's index among them), both on cuda:LOCAL_RANK.
    comms = sorted(doc["collectives"]["communicators"], key=lambda c: -c["nranks"])
    check([(c["nranks"], c["rank"], c["device"]) for c in comms] == [(RANKS, rank, rank), (2, rank // 2, rank)],
          "rank %d: communicators %s (4 ranks and the subgroup's 2, on cuda:%d)" % (rank, comms, rank))
    check(line["group"] == list(range(rank % 2, RANKS, 2)) and line["group_sum"] == [4.0 + 2 * (rank % 2)] * 4,
          "rank %d: subgroup %s all-reduced %s (its ranks' rank + 1 summed)" % (rank, line["group"], line["group_sum"]))
    rows = doc["collectives"]["rows"]
    check([r for r in rows if r["nranks"] == 2] and all(r["op"] == "all-reduce" for r in rows if r["nranks"] == 2),
          "rank %d: no subgroup all-reduce row: %s" % (rank, rows))
    rows = [r for r in rows if r["nranks"] == RANKS]
    allreduce = [r for r in rows if r["op"] == "all-reduce"]
    check(allreduce, "rank %d: rows %s" % (rank, rows))
    for r in allreduce:
        check(r["timed"] == r["count"] > 0 and r["gpu_s"] > 0 and r["busbw_gbps"] > 0,
              "rank %d: an all-reduce row not timed (collective_timing_every:1): %s" % (rank, r))
    # The gradient buckets: every gradient all-reduced once per step, in
    # buckets of tens of MiB (bucket_cap_mb; DDP's first iteration may use
    # one bucket for all). The small ones are dist.barrier()'s.
    buckets = [r for r in allreduce if r["bytes"] / r["count"] >= MiB]
    grad = sum(r["bytes"] for r in buckets)
    check(grad == STEPS * line["grad_bytes"], "rank %d: gradient all-reduces carried %d bytes, %d steps x %d expected"
          % (rank, grad, STEPS, line["grad_bytes"]), *buckets)
    check(all(r["bytes"] / r["count"] >= 10 * MiB for r in buckets), "rank %d: buckets under 10 MiB: %s" % (rank, buckets))
    # DDP's construction broadcasts the parameters from rank 0.
    check(any(r["op"] == "broadcast" and r["bytes"] >= line["grad_bytes"] for r in rows),
          "rank %d: no broadcast of the parameters: %s" % (rank, rows))
    return allreduce


def check_job(job, docs):
    check(job["ranks"] == RANKS and job["world_size"] == RANKS and not job["files"]["skipped"],
          "job report: ranks %s, world size %s, files %s" % (job["ranks"], job["world_size"], job["files"]))
    c = job["collectives"]
    check(c["ranks_with_collectives"] == RANKS, "job report: collectives on %s ranks" % c["ranks_with_collectives"])
    groups = [g for g in c["groups"] if g["op"] == "all-reduce"]
    check({g["nranks"] for g in groups} == {2, RANKS}, "job report: all-reduce groups %s" % groups)
    for what in ("count", "bytes"):
        merged = sum(g[what] for g in groups)
        ranks = sum(r[what] for d in docs for r in d["collectives"]["rows"] if r["op"] == "all-reduce")
        check(merged == ranks, "job report: all-reduce %s %s, the ranks' sum %s" % (what, merged, ranks))
    check(sum(g["gpu_s"] for g in groups) > 0, "job report: no all-reduce GPU time", groups)
    return groups


# ---- NCCL's algorithm and protocol (for the lead: enabled at merge) ----
#
# NCCL's names (src/include/device.h ncclAlgoStr / ncclProtoStr), which the
# profiler plugin passes as strings; compared without case.
ALGORITHMS = {"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"}
PROTOCOLS = {"ll", "ll128", "simple"}


def algo_proto(docs):
    """Every all-reduce row of every rank names NCCL's algorithm and protocol
    (CollectiveRow.algo/.proto, filled by the profiler plugin), one of NCCL's;
    the ranks agree per row (NCCL makes one choice per collective on every
    rank); and the collectives section's per-algorithm rows (`algorithms`,
    AlgoProtoRow) account for every timed all-reduce call. Returns a short
    description of what NCCL chose."""
    chosen = {}
    for doc in docs:
        rank = doc["rank"]
        c = doc["collectives"]
        check(c.get("profiler", "").startswith("on"), "rank %d: profiler plugin %r" % (rank, c.get("profiler")))
        for r in (r for r in c["rows"] if r["op"] == "all-reduce" and r["nranks"] == RANKS):
            algo, proto = r.get("algo", ""), r.get("proto", "")
            check(algo.lower() in ALGORITHMS and proto.lower() in PROTOCOLS,
                  "rank %d: all-reduce row without NCCL's algorithm/protocol: %s" % (rank, r))
            chosen.setdefault((r["datatype"], r["size_bucket"]), set()).add((algo, proto))
        rows = [a for a in c.get("algorithms", []) if a["op"] == "all-reduce" and a["nranks"] == RANKS]
        check(rows and all(a["nranks"] == RANKS and a["calls"] > 0 for a in rows),
              "rank %d: collectives.algorithms for all-reduce: %s" % (rank, rows))
        timed = sum(r["timed"] for r in c["rows"] if r["op"] == "all-reduce" and r["nranks"] == RANKS)
        check(sum(a["calls"] for a in rows) >= timed, "rank %d: algorithms rows count %d all-reduce calls, %d timed"
              % (rank, sum(a["calls"] for a in rows), timed))
    split = {k: v for k, v in chosen.items() if len(v) > 1}
    check(not split, "ranks disagree on NCCL's choice: %s" % split)
    return ", ".join("%s/%s at bucket %d" % (*next(iter(v)), k[1]) for k, v in sorted(chosen.items()))


def main(argv):
    if argv not in ([], ["--algo-proto"]):
        sys.exit("usage: ddp_run.py [--algo-proto]")
    py = env_path("TORCH_PYTHON")
    if not os.path.exists(py):
        sys.exit("torch ddp_run.py: no torch at %s: run scripts/torch-env.sh (scripts/test.sh does)" % py)
    torchrun = os.path.join(os.path.dirname(py), "torchrun")
    env = environment()
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        report = os.path.join(out, "report")
        run, merge = doc_commands(torchrun, out, report)
        env["GPUSLACK_CONF"] = "collective_timing_every:1,text_summary:off"
        # --standalone: a free port on localhost for the rendezvous and the
        # TCPStore (no clash with a test running beside this one).
        r, took = launch(py, run, env, "torchrun ddp.py", timeout=240)
        lines = rank_lines(r.stdout)
        check(sorted(lines) == list(range(RANKS)) and all(
            l["device"] == "cuda:%d" % k and l["steps"] == STEPS and l["world_size"] == RANKS for k, l in lines.items()),
            "ranks that finished: %s" % lines, r.stdout[-3000:])
        files = sorted(glob.glob(os.path.join(out, "gpuslack-*.json")))
        check(len(files) == RANKS, "expected %d summaries, found %s" % (RANKS, files))
        docs = []
        for f in files:
            with open(f) as fh:
                docs.append(json.load(fh))
        docs.sort(key=lambda doc: doc["rank"])
        check([doc["rank"] for doc in docs] == list(range(RANKS)), "summaries' ranks %s" % [d["rank"] for d in docs])
        per_rank = [check_rank(doc, lines[doc["rank"]]) for doc in docs]

        launch(py, merge, env, "gpuslack merge", timeout=60)
        with open(os.path.join(report, "job-report.json")) as fh:
            job = json.load(fh)
        groups = check_job(job, docs)
        chosen = algo_proto(docs) if argv else None

    calls = sum(r["count"] for r in per_rank[0])
    print("torch ddp_run.py: torchrun --nproc_per_node %d, DDP over NCCL, %d steps in %.1f s: %d all-reduces per rank"
          " (%s), merged into %d job groups%s" % (
              RANKS, STEPS, took, calls,
              ", ".join("%d x %.1f MiB" % (r["count"], r["bytes"] / r["count"] / MiB) for r in per_rank[0]),
              len(groups), "; NCCL chose " + chosen if chosen else ""))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Failed as e:
        print("torch ddp_run.py: FAILED: %s" % e)
        sys.exit(1)
