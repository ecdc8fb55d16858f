"""The job report as one JSON-ready dict (aggregate.py).

What: from the Rank records of load.py, every figure the text, JSON and HTML
report show (docs/job_report.schema.json describes each field). The three
renderers read only this dict, so they never disagree.
"""
import os

from . import findings, load, stats, stragglers

LOST = ("allocation", "copy", "collective")
TIME_GRID = 120          # columns of the over-time figures
REPORT_VERSION = 1


def _dist(ranks, fn, worst=5, largest_is_worst=True):
    return stats.distribution([(r["rank"], fn(r)) for r in ranks], worst, largest_is_worst)


def _time_lost(ranks):
    out = {"lost_s": _dist(ranks, lambda r: r["lost_s"]), "wall_s": _dist(ranks, lambda r: r["wall_s"]),
           "lost_share": _dist(ranks, lambda r: r["lost_s"] / r["wall_s"] if r["wall_s"] else 0.0)}
    for c in load.CATEGORIES:
        out[c] = _dist(ranks, lambda r, c=c: r["categories"][c])
    return out


def _gpu(ranks):
    g = [r for r in ranks if r["gpu"]]
    if not g:
        return None
    out = {"ranks": len(g), "busy_s": _dist(g, lambda r: r["gpu"]["busy_s"]),
           "idle_s": _dist(g, lambda r: r["gpu"]["idle_s"]),
           "idle_share": _dist(g, lambda r: r["gpu"]["idle_s"] / r["gpu"]["wall_s"] if r["gpu"]["wall_s"] else 0.0),
           "idle": {}, "busy": {}}
    for c in load.IDLE_CAUSES:
        out["idle"][c] = _dist(g, lambda r, c=c: r["gpu"]["idle"][c])
    for c in load.BUSY_KINDS:
        out["busy"][c] = _dist(g, lambda r, c=c: r["gpu"]["busy"][c], worst=0)
    return out


def _findings_explain(ranks):
    """How much of the GPU's idle the findings explain, over the job: each
    rank's summary says it ("findings_explain", written by
    lib/report/idle_explained.h, where the rule lives: a rank's findings
    partition its own GPU idle, Note [Each idle second charged once] in
    lib/findings/idle_ledger.h), and this only sums those figures. A rank
    whose timeline measured but whose summary predates the member is
    unknown (unknown_ranks), never re-derived from its findings;
    explained_share is None when no rank says. None when no rank's timeline
    measured."""
    known = [r["findings_explain"] for r in ranks if r["findings_explain"]]
    unknown = sum(1 for r in ranks if r["findings_explain_absent"] and r["gpu"])
    if not known and not unknown:
        return None
    idle = sum(e["gpu_idle_s"] for e in known)
    explained = sum(e["explained_s"] for e in known)
    return {"ranks": len(known), "unknown_ranks": unknown, "gpu_idle_s": idle, "explained_s": explained,
            "explained_share": (explained / idle if idle > 0 else 0.0) if known else None}


KERNEL_ROWS = 10


def _kernels(ranks):
    """The top kernels across ranks, by GPU time summed: how their launches
    filled the GPU (docs/gpu-timeline.md, "Launch shapes and waves"), merged
    by name over every rank's top kernels (each rank lists its top ten)."""
    by = {}
    for r in ranks:
        for k in (r["gpu"] or {}).get("kernels", []):
            m = by.setdefault(k["name"], {"name": k["name"], "ranks": set(), "total_s": 0.0, "shaped_s": 0.0,
                                          "weighted": 0.0, "underfilled_s": 0.0, "underfilled_idle_s": 0.0,
                                          "sm_count": 0, "blocks": [], "blocks_per_sm": [], "waves": []})
            m["ranks"].add(r["rank"])
            m["total_s"] += k["total_s"]
            l = k["launch"]
            if not l:
                continue
            m["blocks"] += [load._num(l.get("blocks_min")), load._num(l.get("blocks_max"))]
            if load._num(l.get("sm_count")) > 0 and load._num(l.get("wave_efficiency")) > 0:
                shaped = load._num(l.get("shaped_s"))
                m["sm_count"] = max(m["sm_count"], int(load._num(l.get("sm_count"))))
                m["shaped_s"] += shaped
                m["weighted"] += shaped * load._num(l.get("wave_efficiency"))
                m["underfilled_s"] += load._num(l.get("underfilled_s"))
                m["underfilled_idle_s"] += load._num(l.get("underfilled_idle_s"))
                m["blocks_per_sm"] += [load._num(l.get("blocks_per_sm_min")), load._num(l.get("blocks_per_sm_max"))]
                m["waves"] += [load._num(l.get("waves_min")), load._num(l.get("waves_max"))]
    out = []
    for m in sorted(by.values(), key=lambda m: (-m["total_s"], m["name"]))[:KERNEL_ROWS]:
        row = {"name": m["name"], "ranks": len(m["ranks"]), "total_s": m["total_s"],
               "blocks_min": int(min(m["blocks"])) if m["blocks"] else None,
               "blocks_max": int(max(m["blocks"])) if m["blocks"] else None,
               "sm_count": m["sm_count"] or None,
               "blocks_per_sm_min": int(min(m["blocks_per_sm"])) if m["blocks_per_sm"] else None,
               "blocks_per_sm_max": int(max(m["blocks_per_sm"])) if m["blocks_per_sm"] else None,
               "waves_min": min(m["waves"]) if m["waves"] else None,
               "waves_max": max(m["waves"]) if m["waves"] else None,
               "wave_efficiency": m["weighted"] / m["shaped_s"] if m["shaped_s"] > 0 else None,
               "underfilled_s": m["underfilled_s"], "underfilled_idle_s": m["underfilled_idle_s"]}
        out.append(row)
    return out


def _nodes(ranks, strag):
    nodes = {}
    for r in ranks:
        n = nodes.setdefault(r["host"], {"node": r["host"], "ranks": 0, "wall_s": 0.0, "lost_s": 0.0,
                                         "gpu_idle_s": 0.0, "gpu_wall_s": 0.0, "stragglers": []})
        n["ranks"] += 1
        n["wall_s"] += r["wall_s"]
        n["lost_s"] += r["lost_s"]
        if r["gpu"]:
            n["gpu_idle_s"] += r["gpu"]["idle_s"]
            n["gpu_wall_s"] += r["gpu"]["wall_s"]
    for s in strag["stragglers"]:
        nodes[s["node"]]["stragglers"].append(s["rank"])
    return sorted(nodes.values(), key=lambda n: (-n["lost_s"], n["node"]))


def _topology(ranks):
    """Each node's topology once (docs/summary.md, "Topology"): its links as
    its ranks read them, the GPUs its ranks use (by PCI bus id, with their
    nearest NIC), its NICs; nodes whose topology reads alike are grouped,
    so a 512-node job lists one entry per kind of node. None when no rank
    read one."""
    per_node = {}
    for r in ranks:
        t = r.get("topology")
        if not t or t["status"] != "read":
            continue
        n = per_node.setdefault(r["host"], {"node": r["host"], "ranks": [], "t": t, "gpus": {}})
        n["ranks"].append(r["rank"])
        for g in t["gpus"]:
            n["gpus"].setdefault(g["bus_id"] or "rank %d" % r["rank"], g)
    if not per_node:
        return None
    kinds = {}
    for name in sorted(per_node):
        n = per_node[name]
        t = n["t"]
        active = [x for x in t["nics"] if x["active"]]
        nics = {"ports": len(t["nics"]), "active": len(active),
                "rdma_active": sum(1 for x in active if x["rdma"]),
                "gbit_s": round(sum(x["gbit_s"] for x in active), 3),
                "link_layers": sorted({("RoCE" if x["link_layer"] == "Ethernet" and x["rdma"] else x["link_layer"])
                                       for x in active if x["link_layer"]})}
        gpus = [dict(g, bus_id=k if g["bus_id"] else "") for k, g in sorted(n["gpus"].items())]
        key = (round(t["intra_gbps"], 3), t["intra_is_nvlink"], round(t["inter_gbps"], 3), t["gpus_on_node"],
               tuple(sorted({g["name"] for g in gpus})), tuple((k, str(v)) for k, v in sorted(nics.items())),
               tuple(sorted({g["closeness"] for g in gpus})))
        k = kinds.setdefault(key, {"nodes": [], "ranks": 0, "ranks_per_node": t["ranks_per_node"],
                                   "intra_gbps": t["intra_gbps"], "intra_is_nvlink": t["intra_is_nvlink"],
                                   "intra_from": t["intra_from"], "inter_gbps": t["inter_gbps"],
                                   "inter_from": t["inter_from"], "gpus_on_node": t["gpus_on_node"],
                                   "nics": nics, "gpus": gpus})
        k["nodes"].append(name)
        k["ranks"] += len(n["ranks"])
    shapes = {(r["topology"]["nodes"], r["topology"]["ranks_per_node"]) for r in ranks
              if r.get("topology") and r["topology"]["ranks_per_node"] > 0}
    missing = [r for r in ranks if not r.get("topology") or r["topology"]["status"] != "read"]
    why = ""
    if missing:
        t = missing[0].get("topology")
        why = ("not read: " + t["detail"]) if t else missing[0].get("topology_missing", "")
    return {"kinds": sorted(kinds.values(), key=lambda k: k["nodes"][0]),
            "shapes": [{"nodes": a, "ranks_per_node": b} for a, b in sorted(shapes)],
            "ranks_missing": len(missing), "missing_why": why}


def _collectives(ranks, expected_arg):
    expected = expected_arg or max([r["collectives"]["expected_busbw_gbps"] for r in ranks if r["collectives"]] or [0.0])
    groups = {}
    for r in ranks:
        for row in (r["collectives"] or {}).get("rows", []):
            key = (row["nranks"], row["op"], row["datatype"], row["size_bucket"])
            g = groups.setdefault(key, {"nranks": key[0], "op": key[1], "datatype": key[2], "size_bucket": key[3],
                                        "ranks": 0, "count": 0, "bytes": 0.0, "gpu_s": 0.0, "_bw": [], "_choice": {}})
            g["ranks"] += 1
            # NCCL's algorithm/protocol per rank: every rank must make the same choice.
            choice = (row["algo"] + "/" + row["proto"]) if row["algo"] else "unknown"
            g["_choice"].setdefault(choice, []).append(r["rank"])
            g["count"] += row["count"]
            g["bytes"] += row["bytes"]
            g["gpu_s"] += row["gpu_s"]
            if row["timed"] and row["busbw_gbps"] > 0:
                g["_bw"].append((r["rank"], row["busbw_gbps"]))
    out = []
    for key in sorted(groups):
        g = groups.pop(key)
        bw = g.pop("_bw")
        choice = g.pop("_choice")
        g["algo_proto"] = [{"algo_proto": k, "ranks": len(v), "example_ranks": sorted(v)[:8]}
                           for k, v in sorted(choice.items(), key=lambda x: (-len(x[1]), x[0]))]
        g["busbw_gbps"] = stats.distribution(bw, worst=5, largest_is_worst=False)
        below = sorted((p for p in bw if expected and p[1] < expected), key=lambda p: (p[1], p[0]))
        g["below_expected_count"] = len(below)
        g["below_expected"] = [{"rank": rk, "busbw_gbps": v} for rk, v in below[:20]]
        out.append(g)
    profiler = {}
    for r in ranks:
        if r["collectives"]:
            profiler.setdefault(r["collectives"].get("profiler") or "unknown", []).append(r["rank"])
    return {"expected_busbw_gbps": expected, "ranks_with_collectives": sum(1 for r in ranks if r["collectives"]),
            "groups": out,
            "profiler": [{"status": k, "ranks": len(v), "example_ranks": sorted(v)[:8]}
                         for k, v in sorted(profiler.items(), key=lambda x: (-len(x[1]), x[0]))]}


def _nccl_env(ranks):
    with_env = [r for r in ranks if r["collectives"]]
    names = sorted({k for r in with_env for k in r["collectives"]["env"]})
    diffs = []
    for n in names:
        values = {}
        for r in with_env:
            values.setdefault(r["collectives"]["env"].get(n, "(unset)"), []).append(r["rank"])
        if len(values) > 1:
            diffs.append({"name": n, "values": [{"value": v, "ranks": len(rs), "example_ranks": rs[:8]}
                                                for v, rs in sorted(values.items(), key=lambda x: -len(x[1]))]})
    return diffs


def _memory(ranks):
    a = [r for r in ranks if r["memory"]["allocator"]]
    p = [r for r in ranks if r["memory"]["pinned"]]
    out = {"allocator": None, "pinned": None, "per_rank": []}
    if a:
        out["allocator"] = {"ranks": len(a),
                            "peak_reserved_bytes": _dist(a, lambda r: r["memory"]["allocator"]["peak_reserved"]),
                            "peak_allocated_bytes": _dist(a, lambda r: r["memory"]["allocator"]["peak_allocated"]),
                            "stall_s": _dist(a, lambda r: r["memory"]["allocator"]["stall_s"]),
                            "oom_retries": sum(r["memory"]["allocator"]["oom_retries"] for r in a)}
    if p:
        out["pinned"] = {"ranks": len(p), "peak_pinned_bytes": _dist(p, lambda r: r["memory"]["pinned"]["peak_pinned"]),
                         "stall_s": _dist(p, lambda r: r["memory"]["pinned"]["stall_s"]),
                         "fallbacks": sum(r["memory"]["pinned"]["fallbacks"] for r in p)}
    out["allocator_status"] = _allocator_status(ranks)
    for r in ranks:
        al, pi = r["memory"]["allocator"], r["memory"]["pinned"]
        if al or pi:
            out["per_rank"].append({"rank": r["rank"], "peak_reserved_bytes": al["peak_reserved"] if al else None,
                                    "peak_allocated_bytes": al["peak_allocated"] if al else None,
                                    "peak_pinned_bytes": pi["peak_pinned"] if pi else None})
    return out


def _allocator_status(ranks):
    """How many ranks selected allocator:vmm, and where it is off (the
    summaries' allocator_status): one row per reason, with its ranks and
    devices, most ranks first."""
    vmm = [r for r in ranks if (r["memory"].get("allocator_status") or {}).get("selected") == "vmm"]
    by = {}
    for r in vmm:
        for o in r["memory"]["allocator_status"]["off"]:
            g = by.setdefault(o["why"], {"why": o["why"], "ranks": set(), "devices": 0})
            g["ranks"].add(r["rank"])
            g["devices"] += 1
    off = [{"why": g["why"], "ranks": len(g["ranks"]), "devices": g["devices"], "example_ranks": sorted(g["ranks"])[:8]}
           for g in sorted(by.values(), key=lambda g: (-len(g["ranks"]), g["why"]))]
    return {"vmm_selected_ranks": len(vmm), "off": off}


def _call_sites(ranks, top=10):
    merged = {}
    for r in ranks:
        for key, (blocked, count) in r["sites"].items():
            m = merged.setdefault(key, [0.0, 0, 0])
            m[0] += blocked
            m[1] += count
            m[2] += 1
    order = sorted(merged.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    return [{"category": k[0], "api": k[1], "symbol": k[2], "blocked_s": v[0], "count": v[1], "ranks": v[2]}
            for k, v in order]


HEAT_ROWS = 256          # rows of the GPU idle heatmap: ranks binned past this
BAND_SAMPLE = 512        # ranks a memory band's p50 is taken from


def _timeline(ranks):
    """GPU idle share per rank (binned past HEAT_ROWS ranks) and memory bands
    (p50 and max over ranks), on one time grid of TIME_GRID columns."""
    s = [r for r in ranks if r["series"]]
    if not s:
        return None
    end = max(r["series"]["t0_s"] + r["series"]["interval_s"] * max(
        len(r["series"]["gpu_idle_share"]), len(r["series"]["reserved_bytes"]),
        len(r["series"]["memory_used_bytes"]), 1) for r in s)
    step = end / TIME_GRID if end > 0 else 1.0
    t = [step * (i + 0.5) for i in range(TIME_GRID)]
    index_cache = {}

    def sample(r, name):
        v, t0, dt = r["series"][name], r["series"]["t0_s"], r["series"]["interval_s"]
        if not v:
            return None
        idx = index_cache.get((t0, dt))
        if idx is None:
            idx = index_cache[(t0, dt)] = [int((x - t0) / dt) if x >= t0 else -1 for x in t]
        n = len(v)
        return [v[i] if 0 <= i < n else None for i in idx]
    idle = [(r["rank"], sample(r, "gpu_idle_share")) for r in s]
    idle = [(k, v) for k, v in idle if v]
    rows = []
    for a, b in stats.bins(len(idle), HEAT_ROWS) if idle else []:
        group = idle[a:b]
        cols = []
        for i in range(TIME_GRID):
            vals = [v[i] for _, v in group if v[i] is not None]
            cols.append(round(sum(vals) / len(vals), 4) if vals else None)
        rows.append({"first_rank": group[0][0], "last_rank": group[-1][0], "gpu_idle_share": cols})

    def band(name):
        sampled = [v for v in (sample(r, name) for r in s) if v]
        if not sampled:
            return None
        # p50 from at most BAND_SAMPLE ranks spread evenly (sorting every
        # column of 4,096 ranks is most of a large merge); max from all.
        every = max(1, len(sampled) // BAND_SAMPLE)
        p50, mx = [], []
        for i, col in enumerate(zip(*sampled)):
            present = [x for x in col if x is not None]
            mx.append(max(present) if present else None)
            c = sorted(present[::every])
            p50.append(stats.percentile(c, 50) if c else None)
        return {"p50": p50, "max": mx}
    return {"t_s": t, "step_s": step, "ranks": len(s), "idle_rows": rows,
            "memory_used_bytes": band("memory_used_bytes"), "reserved_bytes": band("reserved_bytes"),
            "allocated_bytes": band("allocated_bytes")}


def build(ranks, skipped, notes, expected_busbw=0.0):
    strag = stragglers.find(ranks)
    missing = {"gpu_timeline": sum(1 for r in ranks if not r["gpu"]),
               "device_health": sum(1 for r in ranks if r["health"] is None),
               "series": sum(1 for r in ranks if not r["series"]),
               "job": sum(1 for r in ranks if not r["has_job"]),
               "findings": sum(1 for r in ranks if r["findings"] is None)}
    why = {}
    for r in ranks:
        if not r["gpu"]:
            why.setdefault("gpu_timeline", r["gpu_missing"])
        if r["health"] is None:
            why.setdefault("device_health", r["health_missing"])
    timeline = _timeline(ranks)
    per_rank = []
    for r in ranks:
        w, k = stragglers.wait_and_work(r, strag["basis"])
        per_rank.append({"rank": r["rank"], "node": r["host"], "file": os.path.basename(r["file"]),
                         "restart": r["restart"], "wall_s": r["wall_s"], "lost_s": r["lost_s"],
                         "categories": r["categories"],
                         "gpu_busy_s": r["gpu"]["busy_s"] if r["gpu"] else None,
                         "gpu_idle_s": r["gpu"]["idle_s"] if r["gpu"] else None,
                         "gpu_idle": r["gpu"]["idle"] if r["gpu"] else None,
                         "collective_wait_s": w, "work_s": k,
                         "throttled": bool(stragglers.throttled(r))})
    job_ids = sorted({r["job_id"] for r in ranks if r["job_id"]})
    return {
        "report_version": REPORT_VERSION, "job_ids": job_ids,
        "files": {"read": len(ranks) + sum(r["restarts_seen"] - 1 for r in ranks),
                  "skipped": [{"file": f, "reason": why_} for f, why_ in skipped], "notes": notes},
        "ranks": len(ranks), "nodes": len({r["host"] for r in ranks}),
        "world_size": max([r["world_size"] for r in ranks] or [-1]),
        "missing": missing, "missing_why": why, "findings": findings.build(ranks, strag),
        "findings_explain": _findings_explain(ranks),
        "time_lost": _time_lost(ranks), "gpu": _gpu(ranks), "kernels": _kernels(ranks),
        "per_node": _nodes(ranks, strag),
        "stragglers": strag, "collectives": _collectives(ranks, expected_busbw),
        "nccl_env_differences": _nccl_env(ranks), "memory": _memory(ranks),
        "call_sites": _call_sites(ranks), "timeline": timeline, "per_rank": per_rank,
        "topology": _topology(ranks),
    }
