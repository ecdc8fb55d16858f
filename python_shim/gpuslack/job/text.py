"""The job report as text (text.py): what a person reads first, in a
terminal or a CI log. Every line starts with "gpuslack job: " (grep-able, as
the per-rank summary's "gpuslack: "). Order: the headline (ranks, time
lost), the findings (findings.py: what leaks, what it cost, the fix; each
wrapped at 78 columns after the prefix; a finding's evidence, call sites
and fix rendered by the text summary's own renderer, lib/report/
findings_text.h, through gpuslack.labels), then the tables. Names and
figures are the library's (gpuslack.labels, job/fmt.py)."""
import textwrap

from .. import labels
from . import fmt, load

NODE_ROWS = 16


def category_rows():
    """(key, label) of the host-time table: time lost, then each category
    but "other", named as the library names them (labels.py), the ones not
    lost marked so."""
    lost = labels.lost_keys()
    rows = [("lost_s", "lost (%s)" % " + ".join(labels.category_name(k) for k in lost))]
    return rows + [(k, labels.category_name(k) + ("" if k in lost else " (not lost)"))
                   for k in load.CATEGORIES if k != "other"]


def idle_rows():
    """(key, label) of the GPU idle causes, named as the library names them."""
    return [(k, labels.idle_name(k)) for k in load.IDLE_CAUSES]


class _Rows:
    """Rows asked of the library when first iterated, not at import (a
    process that never renders needs no library)."""

    def __init__(self, build):
        self._build = build

    def __iter__(self):
        return iter(self._build())


CAT_NAMES = _Rows(category_rows)    # html.py's tables iterate these too
IDLE_NAMES = _Rows(idle_rows)


def _worst(d):
    return ", ".join("%d (%s)" % (w["rank"], fmt.seconds(w["value"])) for w in d["worst"][:3])


def _dist_table(rows, title):
    head = [title, "sum", "min", "p50", "max", "worst ranks"]
    body = [[name, fmt.seconds(d["sum"]), fmt.seconds(d["min"]), fmt.seconds(d["p50"]), fmt.seconds(d["max"]),
             _worst(d)] for name, d in rows]
    return _table([head] + body)


def _table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:-1], widths[1:-1])] + [r[-1]]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def render(rep):
    L = []
    ids = ", ".join(rep["job_ids"]) or "(no job id)"
    files = rep["files"]
    L.append("job %s: %d ranks on %d nodes (%d files read, %d skipped)" % (
        ids, rep["ranks"], rep["nodes"], files["read"], len(files["skipped"])))
    tl = rep["time_lost"]
    wall = tl["wall_s"]
    L.append("time lost per rank: p50 %s of p50 wall %s; %s summed over ranks" % (
        fmt.share(tl["lost_share"]["p50"]), fmt.seconds(wall["p50"]), fmt.seconds(tl["lost_s"]["sum"])))
    L += _findings(rep)
    L += _dist_table([(name, tl[k]) for k, name in category_rows()], "host blocked in CUDA calls")
    g = rep["gpu"]
    if g:
        L.append("GPU idle per rank (GPU timeline, %d ranks): p50 %s of its wall, %s summed" % (
            g["ranks"], fmt.share(g["idle_share"]["p50"]), fmt.seconds(g["idle_s"]["sum"])))
        L += _dist_table([("idle", g["idle_s"])] + [(n, g["idle"][k]) for k, n in idle_rows() if g["idle"][k]["sum"] > 0],
                         "GPU idle")
    L += _kernels(rep.get("kernels") or [])
    L += _stragglers(rep["stragglers"])
    L += _nodes(rep["per_node"])
    L += _topology(rep.get("topology"))
    L += _collectives(rep["collectives"])
    L += _memory(rep["memory"])
    if rep["call_sites"]:
        L.append("top call sites across ranks (merged by symbol):")
        for s in rep["call_sites"][:5]:
            L.append("  %s in %d calls to %s at %s (%s, %d ranks)" % (
                fmt.seconds(s["blocked_s"]), s["count"], s["api"], s["symbol"], s["category"], s["ranks"]))
    L += _missing(rep)
    for f in files["skipped"]:
        L.append(load.skipped_line(f["reason"]))
    for n in files["notes"]:
        L.append("note: " + n)
    return "".join("gpuslack job: %s\n" % line for line in L)


WIDTH = 78
FINDINGS_SHOWN = 10


def _wrap(text, indent, more=3):
    return textwrap.wrap(text, WIDTH, initial_indent=" " * indent, subsequent_indent=" " * (indent + more),
                         break_on_hyphens=False, break_long_words=False) or [" " * indent]


def findings_explain_unknown(e):
    """"" or why the figure is unknown on some ranks: their summaries
    predate the "findings_explain" member (aggregate._findings_explain)."""
    n = e["unknown_ranks"]
    return "%d rank%s' summaries predate the figure" % (n, "" if n == 1 else "s") if n else ""


def _findings_explain_line(e):
    """The line under the findings' heading: the ranks' "findings_explain"
    figures summed (html.py says the same with the seconds in bold)."""
    if not e["ranks"]:
        return "how much of the GPU's idle they explain is unknown: %s" % findings_explain_unknown(e)
    return "they explain %s of the GPU's %s idle on %d rank%s (%s%s)" % (
        fmt.seconds(e["explained_s"]), fmt.seconds(e["gpu_idle_s"]), e["ranks"], "" if e["ranks"] == 1 else "s",
        fmt.share(e["explained_share"]), "; " + findings_explain_unknown(e) if e["unknown_ranks"] else "")


def _findings(rep):
    fs, n = rep["findings"], rep["ranks"]
    old = rep["missing"]["findings"]
    predate = " (%d of %d ranks' summaries predate findings)" % (old, n) if old else ""
    if not fs:
        return ["findings: none%s" % predate]
    L = ["findings (%d, most costly first)%s:" % (len(fs), predate)]
    L += _wrap(_findings_explain_line(rep["findings_explain"]), 2) if rep.get("findings_explain") else []
    for i, f in enumerate(fs[:FINDINGS_SHOWN]):
        L += _wrap("%d. %s [%s]" % (i + 1, f["title"], f["rule"]), 2, 3)
        L += _wrap(fmt.finding_cost(f, n), 5)
        if f["scope"] == "ranks" and f["ranks"] > 1 and (f["evidence"] or f["where"]):
            L += _wrap("on rank %d, where it cost most:" % f["worst_rank"], 5)
        # Evidence, call sites and fix: the text summary's renderer (labels.py).
        L += labels.render_findings([f], WIDTH, 5, labels.BODY)
    if len(fs) > FINDINGS_SHOWN:
        L.append("  and %d more findings (job-report.json lists all)" % (len(fs) - FINDINGS_SHOWN))
    return L


def _stragglers(s):
    L = []
    basis = {"gpu_timeline": "NCCL kernels' GPU time", "collectives_gpu_estimate": "collectives' GPU estimate",
             "host_collective_time": "host time in NCCL calls"}[s["basis"]]
    if not s["stragglers"]:
        L.append("stragglers: none (collective wait from %s: p50 %s; no rank below it by more than %s)" % (
            basis, fmt.seconds(s["median_wait_s"]), fmt.seconds(s["threshold_s"])))
    else:
        L.append("stragglers: %d of %d ranks hold the others back (collective wait from %s, median %s):" % (
            len(s["stragglers"]), s["ranks"], basis, fmt.seconds(s["median_wait_s"])))
        for x in s["stragglers"][:10]:
            L.append("  rank %d on %s waited %s in collectives, %s less than the median: %s" % (
                x["rank"], x["node"], fmt.seconds(x["wait_s"]), fmt.seconds(x["behind_s"]), "; ".join(x["causes"])))
        if len(s["stragglers"]) > 10:
            L.append("  and %d more stragglers" % (len(s["stragglers"]) - 10))
        L.append("  nodes: %s" % ", ".join("%s (rank%s %s of %d)" % (
            n["node"], "s" if len(n["straggler_ranks"]) > 1 else "", fmt.ranks(n["straggler_ranks"], 4), n["ranks"])
            for n in s["nodes"][:8]))
        L.append("  cost to the others: %s of collective wait beyond the stragglers' own (%s of their wall time)" % (
            fmt.seconds(s["cost_s"]), fmt.share(s["cost_share"])))
    L.append("  least collective wait: %s; most work: %s" % (
        ", ".join(str(x["rank"]) for x in s["least_wait"][:5]), ", ".join(str(x["rank"]) for x in s["most_work"][:5])))
    for t in s["throttled"][:10]:
        L.append("throttled GPU: rank %d on %s (device %s): SM clock %s of max, %s%s" % (
            t["rank"], t["node"], ",".join(map(str, t["devices"])), fmt.share(t["clock_ratio_mean"]),
            ", ".join(t["reasons"]) or "clock below max", "; a straggler" if t["straggler"] else "; not a straggler"))
    return L


def _kernels(kernels):
    """The top kernels across ranks and how their launches filled the GPU
    ("-" where no rank's records carried a grid or knew its device)."""
    if not kernels:
        return []
    def rng(lo, hi, f=str):
        if lo is None:
            return "-"
        return f(lo) if f(lo) == f(hi) else "%s-%s" % (f(lo), f(hi))
    rows = [("kernel", "ranks", "GPU time", "blocks", "blocks/SM", "waves", "wave eff.")]
    for k in kernels:
        rows.append((k["name"][:60], str(k["ranks"]), fmt.seconds(k["total_s"]), rng(k["blocks_min"], k["blocks_max"]),
                     rng(k["blocks_per_sm_min"], k["blocks_per_sm_max"]),
                     rng(k["waves_min"], k["waves_max"], fmt.waves),
                     fmt.share(k["wave_efficiency"]) if k["wave_efficiency"] is not None else "-"))
    return ["top kernels across ranks (GPU time summed; launch shapes: docs/gpu-timeline.md):"] + _table(rows)


def _nodes(nodes):
    if len(nodes) < 2:
        return []
    rows = [["node", "ranks", "lost", "GPU idle", "stragglers"]]
    for n in nodes[:NODE_ROWS]:
        rows.append([n["node"], str(n["ranks"]), fmt.seconds(n["lost_s"]),
                     fmt.share(n["gpu_idle_s"] / n["gpu_wall_s"]) if n["gpu_wall_s"] else "-",
                     fmt.ranks(n["stragglers"], 4) or "-"])
    more = ["  and %d more nodes" % (len(nodes) - NODE_ROWS)] if len(nodes) > NODE_ROWS else []
    return ["per node (most time lost first):"] + _table(rows) + more


def _topology(t):
    """Each kind of node once: its links per rank, shape, GPUs and NICs."""
    if not t:
        return []
    L = []
    shapes = ", ".join("%d node%s x %d ranks" % (s["nodes"], "" if s["nodes"] == 1 else "s", s["ranks_per_node"])
                       if s["nodes"] else "%d ranks per node" % s["ranks_per_node"] for s in t["shapes"])
    L.append("topology (each kind of node once)%s:" % ("; job shape " + shapes if shapes else ""))
    for k in t["kinds"][:NODE_ROWS]:
        nodes = k["nodes"]
        names = ", ".join(nodes[:4]) + (" and %d more" % (len(nodes) - 4) if len(nodes) > 4 else "")
        L += _wrap("%s (%d node%s, %d ranks read it): within the node %s%s, between nodes %s per rank and "
                   "direction" % (names, len(nodes), "" if len(nodes) == 1 else "s", k["ranks"],
                                  fmt.link_gbps(k["intra_gbps"]),
                                  (" (NVLink)" if k["intra_is_nvlink"] else " (PCIe)") if k["intra_gbps"] > 0 else "",
                                  fmt.link_gbps(k["inter_gbps"])), 2)
        if k["intra_gbps"] <= 0:
            L += _wrap(k["intra_from"], 5)
        if k["inter_gbps"] <= 0:
            L += _wrap(k["inter_from"], 5)
        n = k["nics"]
        L += _wrap("NICs: %d port%s, %d active%s%s" % (
            n["ports"], "" if n["ports"] == 1 else "s", n["active"],
            " (%s)" % "/".join(n["link_layers"]) if n["link_layers"] else "",
            ", %s in all" % fmt.link_gbits(n["gbit_s"]) if n["gbit_s"] else ""), 5)
        for g in k["gpus"][:8]:
            link = ("%d NVLink %d links" % (g["nvlink_links"], g["nvlink_generation"]) if g["nvlink_links"] > 0
                    else "no NVLink" if g["nvlink_links"] == 0 else "NVLink unknown")
            near = " nearest NIC %s (%s)" % (g["nearest_nic"], g["closeness"]) if g["nearest_nic"] else ""
            L += _wrap("GPU %s %s: %s;%s" % (g["bus_id"] or "?", g["name"] or "?", link, near), 5)
        if len(k["gpus"]) > 8:
            L.append("     and %d more GPUs" % (len(k["gpus"]) - 8))
    if len(t["kinds"]) > NODE_ROWS:
        L.append("  and %d more kinds of node" % (len(t["kinds"]) - NODE_ROWS))
    if t["ranks_missing"]:
        L.append("  topology missing on %d ranks: %s" % (t["ranks_missing"], t["missing_why"]))
    return L


def nccl_choice(g):
    """NCCL's algorithm/protocol for a group across ranks: the one choice, or
    "mixed" when ranks differ (NCCL needs every rank to choose alike)."""
    mix = g.get("algo_proto") or []
    if not mix:
        return "-"
    if len(mix) == 1:
        return "-" if mix[0]["algo_proto"] == "unknown" else mix[0]["algo_proto"]
    return "mixed: " + ", ".join("%s on %d" % (m["algo_proto"], m["ranks"]) for m in mix[:3])


def _collectives(c):
    if not c["groups"]:
        return []
    exp = c["expected_busbw_gbps"]
    L = ["collectives across ranks%s:" % (" (expected busbw %s GB/s)" % fmt.gbps(exp) if exp else "")]
    rows = [["comm", "op", "type", "size", "NCCL", "ranks", "calls", "bytes", "GPU", "busbw min", "p50", "max",
             "below exp."]]
    for g in c["groups"]:
        b = g["busbw_gbps"]
        rows.append(["%d ranks" % g["nranks"], g["op"], g["datatype"], fmt.size_bucket(g["size_bucket"]),
                     nccl_choice(g),
                     str(g["ranks"]), str(g["count"]), fmt.nbytes(g["bytes"]), fmt.seconds(g["gpu_s"]),
                     fmt.gbps(b["min"]), fmt.gbps(b["p50"]), fmt.gbps(b["max"]),
                     str(g["below_expected_count"]) if exp else "-"])
    L += _table(rows)
    statuses = c.get("profiler") or []
    if statuses:
        L.append("  NCCL profiler plugin: " + "; ".join("%s on %d rank%s" % (p["status"], p["ranks"],
                                                                           "" if p["ranks"] == 1 else "s")
                                                     for p in statuses))
    for g in c["groups"]:
        if g["below_expected"]:
            more = g["below_expected_count"] - min(8, len(g["below_expected"]))
            L.append("  %s %s below %s GB/s: ranks %s%s (slowest first)" % (
                g["op"], fmt.size_bucket(g["size_bucket"]), fmt.gbps(exp),
                ", ".join(str(x["rank"]) for x in g["below_expected"][:8]), " and %d more" % more if more else ""))
    return L


def _memory(m):
    L = []
    a = m["allocator"]
    if a:
        L.append("vmm allocator on %d ranks: peak reserved p50 %s, max %s (rank %s); peak allocated p50 %s; "
                 "OOM retries %d" % (a["ranks"], fmt.nbytes(a["peak_reserved_bytes"]["p50"]),
                                     fmt.nbytes(a["peak_reserved_bytes"]["max"]),
                                     a["peak_reserved_bytes"]["worst"][0]["rank"],
                                     fmt.nbytes(a["peak_allocated_bytes"]["p50"]), a["oom_retries"]))
    for o in m["allocator_status"]["off"]:  # allocator:vmm selected, off there (issue 28, point 5)
        L.append("vmm allocator off on %d ranks (%d devices; ranks %s): %s" % (
            o["ranks"], o["devices"], fmt.ranks(o["example_ranks"]), o["why"]))
    p = m["pinned"]
    if p:
        L.append("pinned heap on %d ranks: peak pinned p50 %s, max %s; fallbacks %d" % (
            p["ranks"], fmt.nbytes(p["peak_pinned_bytes"]["p50"]), fmt.nbytes(p["peak_pinned_bytes"]["max"]),
            p["fallbacks"]))
    return L


def _missing(rep):
    L = []
    n, why = rep["missing"], rep["missing_why"]
    if n["gpu_timeline"]:
        L.append("GPU figures missing on %d of %d ranks (host-side figures only there): %s" % (
            n["gpu_timeline"], rep["ranks"], why.get("gpu_timeline", "")))
    if n["device_health"]:
        L.append("device health missing on %d of %d ranks (throttling cannot be checked there): %s" % (
            n["device_health"], rep["ranks"], why.get("device_health", "")))
    if n["series"]:
        L.append("figures over time missing on %d of %d ranks" % (n["series"], rep["ranks"]))
    return L
