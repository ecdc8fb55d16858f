#!/usr/bin/env python3
"""Starts a multi-rank job of the demo (bench/demo/train_loop.cc) on the simulated CUDA device.

Each rank is its own process with the environment torchrun gives it (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, GROUP_RANK = rank // ranks-per-node, MASTER_ADDR/PORT, TORCHELASTIC_RUN_ID) plus
GPUSLACK_JOB_ID, runs under LD_PRELOAD=libgpuslack.so, and writes its summary into one shared folder.
The ranks' all-reduces really couple them (the simulated NCCL across processes, tests/simcuda/README.md):
a slow rank (--slow-rank, --slow-ms) makes the others wait in their collectives, as on a cluster. A
throttled device (--throttle-rank) gets GPUSIM_NVML_THROTTLE=<device>:<spec> in its rank's environment.
A node's hostname cannot be faked: node identity is GROUP_RANK (and GPUSIM_DEVICE_COUNT = ranks per node,
so LOCAL_RANK is a device of its "node"); the simulated NCCL learns it from GPUSIM_NODE (= GROUP_RANK), so a
communicator's shape is nodes x ranks per node. --env KEY=VALUE (repeatable) sets more variables in every
rank (the simulated fabric's GPUSIM_* knobs, NCCL_ALGO, ...).

    scripts/simulate_job.py --build build --ranks 8 --ranks-per-node 4 --slow-rank 5 --slow-ms 40 \\
        --throttle-rank 2 --out /tmp/job

Prints the folder and each rank's exit status; exits 0 when every rank succeeded. Per-rank logs and the
rendezvous file go to <out>/launcher/, out of the summaries' way. Standard library only.
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="build folder (train_loop, libgpuslack.so, simcuda/)")
    p.add_argument("--ranks", type=int, default=8, help="world size (default 8)")
    p.add_argument("--ranks-per-node", type=int, default=4, help="local ranks per simulated node (default 4)")
    p.add_argument("--out", help="shared output folder (default: a new one under the temp folder)")
    p.add_argument("--job-id", help="GPUSLACK_JOB_ID and TORCHELASTIC_RUN_ID (default sim-<time>)")
    p.add_argument("--steps", type=int, default=12, help="demo steps (default 12)")
    p.add_argument("--warmup", type=int, default=2, help="demo warm-up steps (default 2)")
    p.add_argument("--grad-mib", type=int, default=4, help="gradients all-reduced per step, MiB (default 4)")
    p.add_argument("--hidden", type=int, default=128, help="demo hidden size (default 128: light host work)")
    p.add_argument("--batch", type=int, default=2, help="demo batch (default 2)")
    p.add_argument("--slow-rank", type=int, help="the rank whose host work is delayed each step")
    p.add_argument("--slow-ms", type=int, default=50, help="its delay per step, ms (default 50)")
    p.add_argument("--throttle-rank", type=int, help="the rank whose device throttles (simulated NVML)")
    p.add_argument("--throttle", default="0.85:sw_thermal",
                   help="GPUSIM_NVML_THROTTLE after '<device>:' (default 0.85:sw_thermal)")
    p.add_argument("--conf", default="", help="more GPUSLACK_CONF entries (output_dir is set)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="a variable for every rank (repeatable): GPUSIM_NET_GBPS=50, NCCL_ALGO=Tree, ...")
    p.add_argument("--no-preload", action="store_true", help="run without libgpuslack.so")
    p.add_argument("--nccl-timeout", type=float, default=60, help="GPUSIM_NCCL_TIMEOUT_S (default 60)")
    p.add_argument("--timeout", type=float, default=300, help="seconds before every rank is killed")
    p.add_argument("demo_args", nargs="*", help="after --: more train_loop arguments")
    a = p.parse_args(argv)
    if a.ranks < 1 or a.ranks_per_node < 1:
        p.error("--ranks and --ranks-per-node must be positive")
    for kv in a.env:
        if "=" not in kv or not kv.split("=", 1)[0]:
            p.error(f"--env takes KEY=VALUE, not {kv!r}")
    for name in ("slow_rank", "throttle_rank"):
        v = getattr(a, name)
        if v is not None and not 0 <= v < a.ranks:
            p.error(f"--{name.replace('_', '-')} must be a rank below {a.ranks}")
    return a


def rank_env(a, rank, out, rendezvous, job_id):
    build = os.path.abspath(a.build)
    env = dict(os.environ)
    local = rank % a.ranks_per_node
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(local), "WORLD_SIZE": str(a.ranks),
        "LOCAL_WORLD_SIZE": str(a.ranks_per_node), "GROUP_RANK": str(rank // a.ranks_per_node),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": job_id, "TORCHELASTIC_RESTART_COUNT": "0", "GPUSLACK_JOB_ID": job_id,
        "TRAIN_LOOP_RENDEZVOUS": rendezvous,
        "GPUSIM_DEVICE_COUNT": str(a.ranks_per_node), "GPUSIM_NODE": str(rank // a.ranks_per_node),
        "GPUSIM_NCCL_TIMEOUT_S": str(a.nccl_timeout),
        "LD_LIBRARY_PATH": os.path.join(build, "simcuda") + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""),
    })
    env.update(kv.split("=", 1) for kv in a.env)
    conf = f"output_dir:{out}" + ("," + a.conf if a.conf else "")
    env["GPUSLACK_CONF"] = conf
    if not a.no_preload:
        env["LD_PRELOAD"] = os.path.join(build, "libgpuslack.so")
    if a.throttle_rank == rank:
        env["GPUSIM_NVML_THROTTLE"] = f"{local}:{a.throttle}"
    return env


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    build = os.path.abspath(a.build)
    demo = os.path.join(build, "train_loop")
    for need in (demo, os.path.join(build, "simcuda")) + (() if a.no_preload else (os.path.join(build, "libgpuslack.so"),)):
        if not os.path.exists(need):
            print(f"simulate_job: {need} not found: build it first (scripts/build.sh {a.build})", file=sys.stderr)
            return 2
    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="gpuslack-job-")
    os.makedirs(out, exist_ok=True)
    launcher = os.path.join(out, "launcher")
    rendezvous = os.path.join(launcher, "rendezvous")
    os.makedirs(rendezvous, exist_ok=True)
    for stale in os.listdir(rendezvous):  # an earlier job's id would send ranks to a dead rendezvous
        os.unlink(os.path.join(rendezvous, stale))
    job_id = a.job_id or time.strftime("sim-%Y%m%d-%H%M%S")
    cmd = [demo, "--world-from-env", "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--grad-mib", str(a.grad_mib), "--hidden", str(a.hidden), "--batch", str(a.batch)]
    if a.slow_rank is not None:
        cmd += ["--slow-rank", str(a.slow_rank), "--slow-ms", str(a.slow_ms)]
    cmd += a.demo_args
    procs = []
    for rank in range(a.ranks):
        log = open(os.path.join(launcher, f"rank{rank}.log"), "w")
        procs.append((subprocess.Popen(cmd, env=rank_env(a, rank, out, rendezvous, job_id), stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True), log))
    deadline = time.monotonic() + a.timeout
    codes = [None] * a.ranks
    while None in codes:
        for i, (p, _) in enumerate(procs):
            if codes[i] is None:
                codes[i] = p.poll()
        if None not in codes:
            break
        if time.monotonic() > deadline:
            for i, (p, _) in enumerate(procs):
                if codes[i] is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    codes[i] = p.wait()
            print(f"simulate_job: ranks still running after {a.timeout:g} s were killed", file=sys.stderr)
            break
        time.sleep(0.05)
    for _, log in procs:
        log.close()
    failed = [i for i, c in enumerate(codes) if c != 0]
    print(f"simulate_job: job {job_id}: {a.ranks} ranks, {a.ranks_per_node} per node"
          + (f", rank {a.slow_rank} slow by {a.slow_ms} ms per step" if a.slow_rank is not None else "")
          + (f", rank {a.throttle_rank}'s device throttled ({a.throttle})" if a.throttle_rank is not None else ""))
    for i, c in enumerate(codes):
        status = "ok" if c == 0 else f"exit {c} (log: {os.path.join(launcher, f'rank{i}.log')})"
        print(f"simulate_job: rank {i}: {status}")
    print(f"simulate_job: summaries in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
