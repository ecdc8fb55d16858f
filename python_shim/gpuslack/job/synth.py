"""Rank files for a synthetic job, made from real summaries (synth.py).

    python -m gpuslack.job.synth --from SUMMARY.json... --ranks N --out DIR
        [--seed S] [--ranks-per-node 8] [--slow R,...] [--throttled R,...]
        [--restarted R,...] [--bad-files]

What: N per-rank summary files as a job of N ranks would write them
(gpuslack-<job>-rank<R>.json, JOB_CONTRACT.md's "job", "device_health" and
"series" fields), each a copy of one of the real demo summaries given with
its figures varied: seeded noise on every rank, and a synchronous job's
arithmetic so that the figures agree with each other. Each rank computes for
about the same time and meets the others at the all-reduce; a slow rank
(--slow) spends extra host time before each collective (host-bound GPU
idle), a throttled rank (--throttled) computes slower at 85% of its SM clock;
every rank then waits in the collective until the last one arrives, so the
slow and throttled ranks wait least and the rest wait for them (the NCCL
kernels' busy time, lower bus bandwidth). Findings (the summary's
"findings", lib/report/finding.h): a template's are scaled to the rank's
wall time; generate(findings=) replaces them per rank (finding() makes one);
generate(nccl_env=) sets a rank's NCCL variables (default: NCCL_ALGO Tree on
the last node of a job of several nodes, Ring elsewhere). --restarted writes, for those
ranks, an older restart-0 file beside the restart-1 one; --bad-files adds an
empty, a truncated, a non-JSON, a foreign and a future-schema file.

When: the merge's tests and benchmark (bench/merge_bench.py), until real
multi-rank runs provide the folder. Deterministic for a seed.
"""
import argparse
import copy
import json
import os
import random
import sys

REASONS_THROTTLED = ["sw_thermal", "hw_slowdown"]


def _device_timeline(template_dev, device, wall, busy_compute, busy_comm, idle):
    d = copy.deepcopy(template_dev) if template_dev else {
        "idle_sites": [], "top_kernels": [], "short_kernel_busy_s": 0, "kernels": 0, "launches": 0,
        "steps": {"from_marks": False, "count": 0, "busy_share_p50": 0, "busy_share_p99": 0, "wall_p50_s": 0,
                  "wall_p99_s": 0, "worst": []}}
    copies, memsets = 0.002, 0.001
    d.update({"device": device, "wall_s": wall, "busy_s": busy_compute + busy_comm + copies + memsets,
              "idle_s": sum(idle.values()),
              "busy": {"compute": busy_compute, "communication": busy_comm, "copies": copies, "memsets": memsets},
              "idle": idle})
    return d


def _rank_doc(template, rank, n, args, rng, arrive_max, plan):
    doc = copy.deepcopy(template)
    node = rank // args.ranks_per_node
    host = "node%03d" % node
    local = rank % args.ranks_per_node
    compute, host_extra, comm, tail = plan[rank]
    wait = comm + arrive_max - (compute + host_extra)
    wall = arrive_max + comm + tail
    base_wall = template["wall_s"] or 1.0
    f = wall / base_wall
    doc.update({"host": host, "pid": 10000 + rank, "rank": rank, "local_rank": local, "wall_s": wall})
    lost = 0.0
    for c, v in doc["categories"].items():
        v["seconds"] = v["seconds"] * f * rng.uniform(0.9, 1.1)
        v["share"] = v["seconds"] / wall
        if c in ("allocation", "copy", "collective"):
            lost += v["seconds"]
    doc["lost_s"], doc["lost_share"] = lost, lost / wall
    for s in doc.get("call_sites") or []:
        s["blocked_s"] *= f * rng.uniform(0.8, 1.2)
    if args.findings is not None:
        doc["findings"] = args.findings(rank, wall)
        if doc["findings"] is None:
            del doc["findings"]
    for x in doc.get("findings") or []:
        if not isinstance(x, dict) or not isinstance(x.get("cost_s"), (int, float)):
            continue                 # a malformed entry, kept as it is
        if args.findings is None:
            x["cost_s"] *= f
            x["gpu_idle_s"] = x["gpu_idle_s"] * f if isinstance(x.get("gpu_idle_s"), (int, float)) else None
        x["cost_share"] = min(1.0, x["cost_s"] / wall)
    idle_total = max(0.0, wall - compute - wait - 0.003)
    weights = {"host_bound": 0.3, "launch_bound": 0.05, "allocation": 0.35, "copies": 0.1, "collectives": 0.02,
               "sync": 0.15, "other": 0.03}
    idle_base = idle_total - host_extra
    idle = {k: max(0.0, idle_base) * w * rng.uniform(0.8, 1.2) for k, w in weights.items()}
    idle["host_bound"] += host_extra
    scale = idle_total / (sum(idle.values()) or 1.0)
    idle = {k: v * scale for k, v in idle.items()}
    t = doc.get("gpu_timeline") or {}
    tdev = (t.get("devices") or [None])[0]
    t.update({"status": "measured", "detail": "", "how_to_enable": "",
              "devices": [_device_timeline(tdev, local, wall, compute, wait, idle)]})
    doc["gpu_timeline"] = t
    # "findings_explain" as the library writes it (lib/report/idle_explained.h):
    # the findings' gpu_idle_s, here at most the idle, since a test's findings
    # need not partition it; absent with "findings" (a summary from before
    # both); generate(findings_explain=) replaces it.
    doc.pop("findings_explain", None)
    if "findings" in doc:
        mine = sum(x["gpu_idle_s"] for x in doc["findings"]
                   if isinstance(x, dict) and isinstance(x.get("gpu_idle_s"), (int, float)))
        doc["findings_explain"] = {"gpu_idle_s": idle_total, "explained_s": min(mine, idle_total)}
    if args.findings_explain is not None:
        e = args.findings_explain(rank, idle_total)
        if e is None:
            doc.pop("findings_explain", None)
        else:
            doc["findings_explain"] = e
    col = doc.get("collectives")
    if isinstance(col, dict):
        busbw = None
        for row in col["rows"]:
            row["busbw_gbps"] = row["busbw_gbps"] * comm / wait * rng.uniform(0.97, 1.03)
            row["algbw_gbps"] = row["busbw_gbps"]
            row["gpu_s"] = row["gpu_s"] * wait / comm
            busbw = busbw or row["busbw_gbps"]
        col["gpu_s_estimated"] = wait
        col["communicators"] = [{"nranks": n, "rank": rank, "device": local, "alive": False, "aborted": False}]
        for row in col["rows"]:
            row["nranks"] = n
        col["env"] = args.nccl_env(rank) if args.nccl_env else {
            "NCCL_IB_HCA": "mlx5", "NCCL_ALGO": "Tree" if node == (n - 1) // args.ranks_per_node and n > args.ranks_per_node else "Ring"}
        col["warnings"] = ["all-reduce ran at %.1f GB/s bus bandwidth, expected %.1f" % (busbw, args.expected_busbw)] \
            if busbw is not None and busbw < args.expected_busbw / 2 else []
    for a in doc.get("allocator") or []:
        a["device"] = local
        for k in ("peak_allocated", "peak_reserved"):
            a[k] = int(a[k] * rng.uniform(0.9, 1.3))
        a.pop("timeline", None)
    doc["allocator"] = (doc.get("allocator") or [])[:1]
    throttled = rank in args.throttled
    ratio = 0.85 if throttled else rng.uniform(0.97, 1.0)
    samples = max(1, int(wall))
    doc["job"] = {"id": args.job_id, "id_from": "SLURM_JOB_ID", "rank": rank, "rank_from": "SLURM_PROCID",
                  "local_rank": local, "world_size": n, "node_rank": node, "node": host, "restart": 0,
                  "launcher": "slurm", "nccl_ranks": [{"nranks": n, "rank": rank}]}
    doc["device_health"] = {"status": "measured", "detail": "", "devices": [{
        "device": local, "name": "NVIDIA H200", "uuid": "GPU-%08x-0000-0000-0000-%012x" % (node, rank),
        "samples": samples, "sm_clock_mhz_mean": 1980.0 * ratio, "sm_clock_mhz_min": 1980.0 * min(ratio, 0.99) * 0.95,
        "sm_clock_max_mhz": 1980.0, "clock_ratio_mean": ratio,
        "throttled_samples": int(samples * 0.7) if throttled else 0,
        "throttle_reasons": REASONS_THROTTLED if throttled else ["gpu_idle"],
        "temperature_c_mean": 84.0 if throttled else rng.uniform(55, 68),
        "temperature_c_max": 88.0 if throttled else rng.uniform(65, 75),
        "power_w_mean": rng.uniform(450, 600), "power_limit_w": 700.0, "memory_used_bytes_max": 0}]}
    doc["job"].update({"local_world_size": args.ranks_per_node, "nodes": (n + args.ranks_per_node - 1) // args.ranks_per_node})
    doc["topology"] = _topology(local, n, args.ranks_per_node)
    buckets = args.series_buckets
    dt = wall / buckets
    idle_share = idle_total / wall
    used_peak = 30e9 * rng.uniform(0.9, 1.1)
    shares, used, clock = [], [], []
    for i in range(buckets):
        dip = 0.35 if (buckets * 0.4 <= i < buckets * 0.45) else 0.0   # a job-wide input stall
        shares.append(round(min(1.0, max(0.0, idle_share + dip + rng.uniform(-0.05, 0.05))), 4))
        used.append(int(used_peak * min(1.0, 0.3 + i / (0.3 * buckets))))
        clock.append(round(ratio * rng.uniform(0.98, 1.0), 4))
    doc["device_health"]["devices"][0]["memory_used_bytes_max"] = max(used)
    doc["series"] = {"interval_s": dt, "t0_s": 0.0, "devices": [
        {"device": local, "gpu_idle_share": shares, "memory_used_bytes": used, "sm_clock_ratio": clock}],
        "reserved_bytes": [int(u * 0.9) for u in used] if doc["allocator"] else [],
        "allocated_bytes": [int(u * 0.7) for u in used] if doc["allocator"] else []}
    return doc


def _topology(local, n, per_node):
    """An HGX H200 node's topology as rank `local` of it reads it: its GPU
    (18 NVLink 4 links) behind one PCIe switch with its NDR NIC, 8 of them."""
    bus = 0x18 + 0x10 * local
    nodes = (n + per_node - 1) // per_node

    def place(b, numa):
        return {"bus_id": "0000:%02x:00.0" % b, "numa_node": numa,
                "pci_path": ["pci0000:%02x" % (bus - 3), "0000:%02x:01.0" % (bus - 3), "0000:%02x:00.0" % b],
                "place_unknown": ""}
    numa = 0 if local < 4 else 1
    gpu = dict(place(bus, numa), device=local, name="NVIDIA H200", nvlink_links=18, nvlink_generation=4,
               nvlink_gbps=450.0, pcie_generation=5, pcie_width=16, pcie_max_generation=5, pcie_max_width=16,
               pcie_gbps=63.0153846, peers=[], unknown="")
    nics = [dict(place(0x19 + 0x10 * i, 0 if i < 4 else 1), name="mlx5_%d" % i, port=1, rdma=True,
                 link_layer="InfiniBand", netdev="", state="ACTIVE", active=True, gbit_s=400.0,
                 rate_from="/sys/class/infiniband/mlx5_%d/ports/1/rate" % i, unknown="") for i in range(8)]
    return {"status": "read", "detail": "", "links": {
        "intra_gbps": 450.0, "intra_is_nvlink": True,
        "intra_from": "measured: NVML: GPU %d has 18 NVLink 4 links up, 25 GB/s each per direction" % local,
        "inter_gbps": 50.0, "inter_from": "measured: 8 active RDMA ports (InfiniBand), 3200 Gb/s over the node's 8 GPUs (NVML)",
        "nodes": nodes, "ranks_per_node": per_node,
        "shape_from": "measured: SLURM_NTASKS_PER_NODE=%d, SLURM_JOB_NUM_NODES=%d" % (per_node, nodes)},
        "sysfs_root": "/", "gpus_on_node": 8, "gpus_unknown": "", "gpus": [gpu], "nics_unknown": "", "nics": nics,
        "affinity": [{"device": local, "nic": "mlx5_%d" % local, "port": 1, "closeness": "same_pcie_switch"}],
        "corrupt": []}


def finding(rule, cost_s, title=None, gpu_idle_s=None, evidence=(), where=(), fix=None):
    """One finding as a rank's summary holds it (cost_share is set from the
    rank's wall time when written)."""
    return {"rule": rule, "title": title or "%s leaks time" % rule, "cost_s": cost_s, "cost_share": 0.0,
            "gpu_idle_s": gpu_idle_s, "evidence": [{"name": k, "value": v} for k, v in evidence],
            "where": [list(site) for site in where], "fix": fix or "fix %s" % rule}


def generate(templates, out_dir, n, seed=1, ranks_per_node=8, slow=(), throttled=(), restarted=(),
             job_id="4242", expected_busbw=0.3, series_buckets=60, findings=None, nccl_env=None,
             findings_explain=None):
    """Writes n rank files into out_dir; returns their paths. findings:
    f(rank, wall_s) -> the rank's findings list (or None: no "findings"
    member, a summary from before them); nccl_env: f(rank) -> its NCCL
    variables; findings_explain: f(rank, gpu_idle_s) -> the rank's
    "findings_explain" member (or None: none, a summary from before it)."""
    args = argparse.Namespace(ranks_per_node=ranks_per_node, slow=set(slow), throttled=set(throttled),
                              job_id=job_id, expected_busbw=expected_busbw, series_buckets=series_buckets,
                              findings=findings, nccl_env=nccl_env, findings_explain=findings_explain)
    rng = random.Random(seed)
    os.makedirs(out_dir, exist_ok=True)
    base = min(t["wall_s"] for t in templates) or 10.0
    plan = {}
    for r in range(n):
        compute = 0.5 * base * rng.uniform(0.98, 1.02) * (1 / 0.85 if r in args.throttled else 1.0)
        host_extra = 0.15 * base if r in args.slow else 0.0
        plan[r] = (compute, host_extra, 0.1 * base, 0.2 * base * rng.uniform(0.95, 1.05))
    arrive_max = max(c + h for c, h, _, _ in plan.values())
    paths = []
    for r in range(n):
        doc = _rank_doc(templates[r % len(templates)], r, n, args, rng, arrive_max, plan)
        versions = [doc]
        if r in restarted:
            old = copy.deepcopy(doc)
            old["wall_s"] *= 0.3
            old["started_utc"] = "2026-01-01T00:00:00Z"
            doc["job"]["restart"] = 1
            versions = [old, doc]
        for d in versions:
            k = d["job"]["restart"]
            name = "gpuslack-%s-rank%d%s.json" % (job_id, r, "-restart%d" % k if k else "")
            path = os.path.join(out_dir, name)
            with open(path, "w") as f:
                json.dump(d, f, separators=(",", ":"))
            paths.append(path)
    return paths


def write_bad_files(out_dir, template):
    """An empty, a truncated, a non-JSON, a foreign and a future-schema file;
    returns {file name: what it is}."""
    text = json.dumps(template)
    bad = {"gpuslack-bad-empty.json": "", "gpuslack-bad-truncated.json": text[:len(text) // 2],
           "gpuslack-bad-notjson.json": "gpuslack: 12% of 3 s lost\n",
           "gpuslack-bad-foreign.json": json.dumps({"name": "package.json", "version": "1.0.0"}),
           "gpuslack-bad-future.json": json.dumps(dict(template, schema_version=2))}
    for name, body in bad.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(body)
    return bad


def _ranks(s):
    return [int(x) for x in s.split(",") if x.strip()] if s else []


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m gpuslack.job.synth", description=__doc__.split("\n\n")[2].strip())
    p.add_argument("--from", dest="templates", nargs="+", required=True, metavar="SUMMARY.json")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ranks-per-node", type=int, default=8)
    p.add_argument("--slow", type=_ranks, default=[])
    p.add_argument("--throttled", type=_ranks, default=[])
    p.add_argument("--restarted", type=_ranks, default=[])
    p.add_argument("--bad-files", action="store_true")
    a = p.parse_args(argv)
    templates = []
    for t in a.templates:
        with open(t) as f:
            templates.append(json.load(f))
    paths = generate(templates, a.out, a.ranks, a.seed, a.ranks_per_node, a.slow, a.throttled, a.restarted)
    if a.bad_files:
        write_bad_files(a.out, templates[0])
    print("synth: %d rank files in %s" % (len(paths), a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
