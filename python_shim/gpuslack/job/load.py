"""Reading per-rank summary files for the job report (load.py).

What: turns the summary JSON files of a job's ranks (docs/summary.md) into
compact Rank records that the rest of gpuslack.job reads, and says which
files it could not use and why. Only the figures the report needs are kept
(a few KiB per rank), so 4,096 ranks fit in well under a gigabyte.

When: first step of `python -m gpuslack merge`. Files written before the
job fields existed (no "job", "device_health", "series", "findings") load as
well: their missing sections are None and the report says so.

Bad files never stop the merge: a file the library's summary reader refuses
(empty, truncated, not JSON, nested too deep, NaN, over 1 GiB, foreign JSON
or a future schema) is one Skipped entry with that reader's one line, the
line `python -m gpuslack report` prints for it. Several files of the same rank (elastic restarts) keep
the latest restart; the others become notes.
"""
import glob
import os
import re

from .. import report

SCHEMA_VERSION = 1
CATEGORIES = ("allocation", "copy", "collective", "sync", "other")
IDLE_CAUSES = ("host_bound", "launch_bound", "allocation", "copies", "collectives", "sync", "other")
BUSY_KINDS = ("compute", "communication", "copies", "memsets")


class Skipped(Exception):
    """A file the merge cannot use; str() is the one-line reason."""


def expand(paths):
    """The summary files named by paths: a folder gives its *.json files."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            # The merge's own job-report.json, when written into the folder, is not a rank.
            files.extend(f for f in sorted(glob.glob(os.path.join(p, "*.json")))
                         if os.path.basename(f) != "job-report.json")
        else:
            files.append(p)
    return files


def _parse(path):
    """The document, read as `report` reads it (report.load): a file the
    library's reader refuses is Skipped with that reader's one line."""
    try:
        return report.load(path)
    except report.NoLibrary:
        raise
    except report.ReportError as e:
        line = str(e)
        raise Skipped(line if path in line else "%s: %s" % (path, line))


def skipped_line(reason):
    """How a skipped file is shown (stderr, the text and HTML reports): the
    reason is the reader's line, which names the file."""
    return "skipped: " + reason


def _num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def _gpu(doc):
    t = doc.get("gpu_timeline")
    if not isinstance(t, dict):
        return None, "absent (a summary from before the GPU timeline)"
    if t.get("status") != "measured" or not t.get("devices"):
        return None, "%s: %s" % (t.get("status", "?"), t.get("detail") or "no device measured")
    g = {"wall_s": 0.0, "busy_s": 0.0, "idle_s": 0.0, "busy": dict.fromkeys(BUSY_KINDS, 0.0),
         "idle": dict.fromkeys(IDLE_CAUSES, 0.0), "devices": len(t["devices"]), "kernels": []}
    for d in t["devices"]:
        for k in d.get("top_kernels") or []:
            if isinstance(k, dict) and isinstance(k.get("name"), str):
                launch = k.get("launch") if isinstance(k.get("launch"), dict) else None
                g["kernels"].append({"name": k["name"], "total_s": _num(k.get("total_s")), "launch": launch})
        g["wall_s"] += _num(d.get("wall_s"))
        g["busy_s"] += _num(d.get("busy_s"))
        g["idle_s"] += _num(d.get("idle_s"))
        for k in BUSY_KINDS:
            g["busy"][k] += _num((d.get("busy") or {}).get(k))
        for k in IDLE_CAUSES:
            g["idle"][k] += _num((d.get("idle") or {}).get(k))
    return g, ""


def _health(doc):
    h = doc.get("device_health")
    if not isinstance(h, dict):
        return None, "absent (a summary from before device health)"
    if h.get("status") != "measured":
        return None, "%s: %s" % (h.get("status", "?"), h.get("detail") or "")
    devs = []
    for d in h.get("devices") or []:
        devs.append({"device": d.get("device", 0), "name": d.get("name", ""),
                     "throttled_samples": int(_num(d.get("throttled_samples"))),
                     "samples": int(_num(d.get("samples"))),
                     "clock_ratio_mean": _num(d.get("clock_ratio_mean")) or 1.0,
                     "throttle_reasons": [r for r in d.get("throttle_reasons") or []
                                          if r not in ("gpu_idle", "applications_clocks")],
                     "temperature_c_max": _num(d.get("temperature_c_max")),
                     "power_w_mean": _num(d.get("power_w_mean"))})
    return devs, ""


def _topology(doc):
    """The node's topology as this rank read it (docs/summary.md, "Topology"):
    (record, "") or (None, why)."""
    t = doc.get("topology")
    if not isinstance(t, dict):
        return None, ("null: device_health:off or a secure process" if "topology" in doc
                      else "absent (a summary from before the topology)")
    links = t.get("links") if isinstance(t.get("links"), dict) else {}
    rec = {"status": _text(t.get("status")), "detail": _text(t.get("detail")),
           "intra_gbps": _num(links.get("intra_gbps")), "intra_is_nvlink": links.get("intra_is_nvlink") is True,
           "intra_from": _text(links.get("intra_from")), "inter_gbps": _num(links.get("inter_gbps")),
           "inter_from": _text(links.get("inter_from")), "nodes": int(_num(links.get("nodes"))),
           "ranks_per_node": int(_num(links.get("ranks_per_node"))), "shape_from": _text(links.get("shape_from")),
           "gpus_on_node": int(_num(t.get("gpus_on_node"))), "gpus": [], "nics": []}
    nearest = {}
    for a in _list(t.get("affinity")):
        if isinstance(a, dict):
            nearest[a.get("device")] = (_text(a.get("nic")), _text(a.get("closeness")))
    for g in _list(t.get("gpus")):
        if not isinstance(g, dict):
            continue
        nic, close = nearest.get(g.get("device"), ("", "unknown"))
        rec["gpus"].append({"bus_id": _text(g.get("bus_id")), "name": _text(g.get("name")),
                            "numa_node": int(_num(g.get("numa_node"))) if isinstance(g.get("numa_node"), int) else -1,
                            "nvlink_links": g.get("nvlink_links") if isinstance(g.get("nvlink_links"), int) else -1,
                            "nvlink_generation": int(_num(g.get("nvlink_generation"))),
                            "nvlink_gbps": _num(g.get("nvlink_gbps")), "pcie_gbps": _num(g.get("pcie_gbps")),
                            "nearest_nic": nic, "closeness": close})
    for n in _list(t.get("nics")):
        if isinstance(n, dict):
            rec["nics"].append({"name": _text(n.get("name")), "port": int(_num(n.get("port"))),
                                "rdma": n.get("rdma") is not False, "link_layer": _text(n.get("link_layer")),
                                "active": n.get("active") is True, "gbit_s": _num(n.get("gbit_s"))})
    return rec, ""


def _floats(v):
    """A list of numbers as floats; [] when it is not one."""
    try:
        return [float(x) for x in v] if isinstance(v, list) else []
    except (TypeError, ValueError):
        return []


def _series(doc):
    s = doc.get("series")
    if not isinstance(s, dict) or not _num(s.get("interval_s")):
        return None
    idle, used = [], []
    for d in s.get("devices") or []:
        if isinstance(d, dict):
            idle.append(_floats(d.get("gpu_idle_share")))
            used.append(_floats(d.get("memory_used_bytes")))
    idle, used = [x for x in idle if x], [x for x in used if x]
    if len(idle) > 1:   # the mean over the rank's devices
        idle = [[sum(col) / len(col) for col in zip(*idle)]]
    if len(used) > 1:   # the sum over the rank's devices
        used = [[sum(col) for col in zip(*used)]]
    return {"interval_s": _num(s["interval_s"]), "t0_s": _num(s.get("t0_s")),
            "gpu_idle_share": idle[0] if idle else [], "memory_used_bytes": used[0] if used else [],
            "reserved_bytes": _floats(s.get("reserved_bytes")), "allocated_bytes": _floats(s.get("allocated_bytes"))}


def _symbol(frame):
    """'main+0x99e (train_loop)' -> 'main (train_loop)'; 'lib.so+0x12' -> 'lib.so'."""
    m = re.match(r"^(.*?)\+0x[0-9a-fA-F]+(.*)$", frame)
    return (m.group(1) + m.group(2)) if m else frame


def _collectives(doc):
    c = doc.get("collectives")
    if not isinstance(c, dict):
        return None
    rows = [{"op": r.get("op", "?"), "datatype": r.get("datatype", "?"), "size_bucket": int(_num(r.get("size_bucket"))),
             "nranks": int(_num(r.get("nranks"))), "count": int(_num(r.get("count"))),
             "bytes": _num(r.get("bytes")), "gpu_s": _num(r.get("gpu_s")), "timed": int(_num(r.get("timed"))),
             "busbw_gbps": _num(r.get("busbw_gbps")), "algbw_gbps": _num(r.get("algbw_gbps")),
             # NCCL's choice (its profiler plugin); "" before it or when unknown.
             "algo": str(r.get("algo") or ""), "proto": str(r.get("proto") or ""),
             "channels": _num(r.get("channels"))}
            for r in c.get("rows") or []]
    expected = 0.0
    for w in c.get("warnings") or []:
        m = re.search(r"expected ([0-9.]+)", w)
        if m:
            expected = max(expected, float(m.group(1)))
    return {"rows": rows, "env": dict(c.get("env") or {}), "gpu_s_estimated": _num(c.get("gpu_s_estimated")),
            "expected_busbw_gbps": expected, "profiler": str(c.get("profiler") or ""),
            "communicators": [(int(_num(x.get("nranks"))), int(_num(x.get("rank")))) for x in c.get("communicators") or []]}


def _memory(doc):
    alloc = [a for a in doc.get("allocator") or [] if isinstance(a, dict)]
    m = {"allocator": None, "pinned": None}
    if alloc:
        m["allocator"] = {k: sum(_num(a.get(k)) for a in alloc)
                          for k in ("peak_allocated", "peak_reserved", "oom_retries", "stall_s", "failed_allocations")}
        m["allocator"]["devices"] = len(alloc)
    p = doc.get("pinned")
    if isinstance(p, dict):
        m["pinned"] = {k: _num(p.get(k)) for k in ("peak_pinned", "peak_live", "cap", "fallbacks", "stall_s")}
    # The allocator selected and the devices it is off on, with why (issue
    # 28, point 5); None in summaries from before it.
    st = doc.get("allocator_status")
    m["allocator_status"] = None
    if isinstance(st, dict):
        m["allocator_status"] = {"selected": _text(st.get("selected")),
                                 "off": [{"device": int(_num(o.get("device"))), "why": _text(o.get("why"))}
                                         for o in _list(st.get("off")) if isinstance(o, dict)]}
    return m


def _text(x):
    return x if isinstance(x, str) else ""


def _list(x):
    return x if isinstance(x, list) else []


def _findings(doc):
    """The rank's findings (docs/summary.schema.json "findings"), None when
    the summary predates them. An entry without a rule name is dropped; a
    member of the wrong type reads as empty, as elsewhere in this file."""
    f = doc.get("findings")
    if not isinstance(f, list):
        return None
    out = []
    for x in f:
        if not isinstance(x, dict) or not _text(x.get("rule")):
            continue
        idle = x.get("gpu_idle_s")          # null (or -1): the timeline did not measure it
        idle = float(idle) if isinstance(idle, (int, float)) and not isinstance(idle, bool) and idle >= 0 else None
        out.append({"rule": x["rule"], "title": _text(x.get("title")), "cost_s": max(0.0, _num(x.get("cost_s"))),
                    "cost_share": min(1.0, max(0.0, _num(x.get("cost_share")))),
                    "gpu_idle_s": idle,
                    "evidence": [{"name": _text(e.get("name")), "value": _text(e.get("value"))}
                                 for e in _list(x.get("evidence")) if isinstance(e, dict)],
                    "where": [[_text(fr) for fr in site] for site in _list(x.get("where")) if isinstance(site, list)],
                    "fix": _text(x.get("fix"))})
    return out


def _findings_explain(doc):
    """How much of the rank's GPU idle its findings explain, as the library
    wrote it ("findings_explain", lib/report/idle_explained.h, the one place
    its rule lives): ({"gpu_idle_s", "explained_s"} or None, absent). None
    when null (the timeline did not measure) or not an object; absent True
    when the summary predates the member, so the job report says unknown for
    it rather than deriving it here. A figure past the rank's idle, which
    the library never writes, reads as its idle."""
    if "findings_explain" not in doc:
        return None, True
    e = doc["findings_explain"]
    if not isinstance(e, dict):
        return None, False
    idle = max(0.0, _num(e.get("gpu_idle_s")))
    return {"gpu_idle_s": idle, "explained_s": min(idle, max(0.0, _num(e.get("explained_s"))))}, False


def rank_of(doc):
    job = doc.get("job") if isinstance(doc.get("job"), dict) else {}
    r = job.get("rank", doc.get("rank", -1))
    return int(r) if isinstance(r, int) else -1


def extract(doc, path):
    """The Rank record of one parsed summary: what the report reads."""
    job = doc.get("job") if isinstance(doc.get("job"), dict) else None
    cats = doc.get("categories") or {}
    gpu, gpu_why = _gpu(doc)
    health, health_why = _health(doc)
    topology, topology_why = _topology(doc)
    explain, explain_absent = _findings_explain(doc)
    sites = {}
    for s in doc.get("call_sites") or []:
        frames = s.get("frames") or []
        key = (s.get("category", "?"), s.get("api", "?"), _symbol(frames[0]) if frames else "??")
        acc = sites.setdefault(key, [0.0, 0])
        acc[0] += _num(s.get("blocked_s"))
        acc[1] += int(_num(s.get("count")))
    rank = rank_of(doc)
    return {
        "file": path, "rank": rank, "host": (job or {}).get("node") or doc.get("host", "?"), "pid": doc.get("pid", 0),
        "local_rank": doc.get("local_rank", -1), "job_id": (job or {}).get("id", ""),
        "world_size": (job or {}).get("world_size", -1), "restart": int(_num((job or {}).get("restart"))),
        "started_utc": doc.get("started_utc", ""), "wall_s": _num(doc.get("wall_s")), "lost_s": _num(doc.get("lost_s")),
        "categories": {k: _num((cats.get(k) or {}).get("seconds")) for k in CATEGORIES},
        "gpu": gpu, "gpu_missing": gpu_why, "health": health, "health_missing": health_why,
        "has_job": job is not None, "series": _series(doc), "collectives": _collectives(doc),
        "memory": _memory(doc), "sites": sites, "findings": _findings(doc),
        "findings_explain": explain, "findings_explain_absent": explain_absent,
        "topology": topology, "topology_missing": topology_why,
    }


def _read_one(path):
    """(path, Rank record or None, why skipped)."""
    try:
        doc = _parse(path)
    except Skipped as e:
        return path, None, str(e)
    try:
        return path, extract(doc, path), ""
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        return path, None, "%s is not a gpuslack summary: a member of the wrong type (%s)" % (path, e)


PARALLEL_FROM = 256     # files; fewer are read in this process


def _read_all(files):
    """Every file read and extracted: by a pool of processes (one per CPU, at
    most 8) past PARALLEL_FROM files, since parsing JSON is most of a large
    merge's time and each record sent back is a few KiB; in order."""
    workers = min(8, os.cpu_count() or 1)
    if len(files) >= PARALLEL_FROM and workers > 1:
        try:
            import multiprocessing
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                return pool.map(_read_one, files, chunksize=32)
        except (OSError, ValueError, ImportError):
            pass   # no fork or no pool here: read them in this process
    return [_read_one(f) for f in files]


def load(paths):
    """(ranks, skipped, notes): ranks sorted by rank, one per rank (latest
    restart); skipped [(file, reason)]; notes: lines about dropped restarts."""
    report.check_library()
    records, skipped = [], []
    for path, rec, why in _read_all(expand(paths)):
        if rec is None:
            skipped.append((path, why))
        else:
            records.append(rec)
    by_rank, notes, unranked = {}, [], []
    for r in records:
        if r["rank"] < 0:
            unranked.append(r)
            continue
        by_rank.setdefault(r["rank"], []).append(r)
    ranks = []
    for rank in sorted(by_rank):
        group = sorted(by_rank[rank], key=lambda r: (r["restart"], r["started_utc"], r["file"]))
        keep = group[-1]
        for old in group[:-1]:
            notes.append("rank %d: %s (restart %d) superseded by %s (restart %d)" % (
                rank, os.path.basename(old["file"]), old["restart"], os.path.basename(keep["file"]), keep["restart"]))
        keep["restarts_seen"] = len(group)
        ranks.append(keep)
    # Files without a rank (a single-process run): numbered after the ranked ones.
    nxt = (ranks[-1]["rank"] + 1) if ranks else 0
    for r in unranked:
        notes.append("%s has no rank: reported as rank %d" % (os.path.basename(r["file"]), nxt))
        r["rank"], r["restarts_seen"] = nxt, 1
        ranks.append(r)
        nxt += 1
    return ranks, skipped, notes
