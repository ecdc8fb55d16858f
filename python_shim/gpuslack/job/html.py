"""The job report as one self-contained HTML file (html.py).

Nothing is fetched: the CSS is inline, the charts are inline SVG (svg.py),
and there is no script at all, so the page opens offline, from a file://
URL or a CI artifact, with no console errors. Tables are bounded (worst
ranks, top nodes) and charts aggregate past a few dozen ranks (bars) or a
few hundred (heatmap rows), so the page stays small at 4,096 ranks.
"""
import html

from . import fmt, load, stats, svg
from .text import CAT_NAMES, IDLE_NAMES, findings_explain_unknown, nccl_choice

MAX_BARS = 48
TABLE_ROWS = 20

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f5f6f8;color:#1d2329}
header{background:#1f2a37;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px}header p{margin:0;color:#c9d2dc}
main{padding:16px 28px;max-width:1160px}
section{background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:14px 18px;margin:0 0 16px}
h2{font-size:17px;margin:0 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:0 0 16px}
.card{flex:1;background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:10px 14px;min-width:120px}
.card b{display:block;font-size:24px}.card span{color:#5b6670;font-size:12px}
.bad b{color:#c0392b}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 10px;border-bottom:1px solid #eceef1;text-align:right;white-space:nowrap}
th{background:#f0f2f5}td:first-child,th:first-child{text-align:left}
td.l,th.l,td:last-child{text-align:left;white-space:normal}
td:last-child{min-width:8em}
.straggler{background:#fdecea}
.note{color:#5b6670;font-size:13px}
.warn{color:#8a4b00;font-size:13px}
ul{margin:4px 0 4px 18px;padding:0}li{margin:2px 0}
.finding{border-left:4px solid #c0392b;padding:4px 12px;margin:0 0 12px}
.finding.unmeasured{border-left-color:#8a4b00}
.finding h3{font-size:15px;margin:0 0 4px}.finding .rule{color:#5b6670;font-weight:normal;font-size:12px}
.finding p{margin:3px 0;font-size:13px}.finding ul{margin:3px 0 3px 18px;font-size:13px}.finding code{white-space:pre-wrap}
.fix{background:#eef7ee;padding:4px 8px;border-radius:4px}
"""

HOST_SEGMENTS = [("allocation", "allocation", "#e74c3c"), ("copy", "copies", "#f39c12"),
                 ("collective", "collectives (host)", "#8e44ad"), ("sync", "waiting for the GPU", "#3498db"),
                 ("other", "other CUDA calls", "#95a5a6")]
GPU_SEGMENTS = [("compute", "compute and copies", "#27ae60"), ("communication", "communication (NCCL)", "#2e86de"),
                ("host_bound", "idle: host-bound", "#e67e22"),
                ("launch_bound", "idle: launch-bound", "#f5b041"), ("allocation", "idle: allocation", "#e74c3c"),
                ("copies_idle", "idle: copies", "#f1948a"), ("collectives", "idle: collectives", "#af7ac5"),
                ("sync", "idle: sync", "#85c1e9"), ("other", "idle: other", "#bdc3c7")]


def _e(s):
    return html.escape(str(s), quote=True)


def _table(head, rows, cls=None):
    out = ["<table><tr>%s<th class=\"l\">%s</th></tr>" % ("".join("<th>%s</th>" % _e(h) for h in head[:-1]), _e(head[-1]))]
    for i, r in enumerate(rows):
        c = cls[i] if cls else ""
        out.append("<tr%s>%s</tr>" % (' class="%s"' % c if c else "", "".join(
            '<td class="l">%s</td>' % _e(x) if isinstance(x, str) and len(x) > 40 else "<td>%s</td>" % _e(x)
            for x in r)))
    return "".join(out) + "</table>"


def _dist_rows(pairs):
    return [[name, fmt.seconds(d["sum"]), fmt.seconds(d["min"]), fmt.seconds(d["p50"]), fmt.seconds(d["max"]),
             ", ".join("%d (%s)" % (w["rank"], fmt.seconds(w["value"])) for w in d["worst"][:3])] for name, d in pairs]


def _groups(per_rank, fn):
    """[(label, shares)] per rank, or per group of consecutive ranks past MAX_BARS."""
    if len(per_rank) <= MAX_BARS:
        return [(str(r["rank"]), fn(r)) for r in per_rank]
    out = []
    for a, b in stats.bins(len(per_rank), MAX_BARS):
        chunk = [fn(r) for r in per_rank[a:b]]
        keys = {k for c in chunk for k in c}
        out.append(("%d-%d" % (per_rank[a]["rank"], per_rank[b - 1]["rank"]),
                    {k: sum(c.get(k, 0.0) for c in chunk) / len(chunk) for k in keys}))
    return out


def _host_shares(r):
    w = r["wall_s"] or 1.0
    return {k: v / w for k, v in r["categories"].items()}


def _gpu_shares(r):
    if r["gpu_idle"] is None:
        return {}
    w = (r["gpu_busy_s"] + r["gpu_idle_s"]) or 1.0
    wait = r["collective_wait_s"]
    busy_other = max(0.0, r["gpu_busy_s"] - wait)
    s = {"communication": wait / w, "compute": busy_other / w}
    for k, v in r["gpu_idle"].items():
        s["copies_idle" if k == "copies" else k] = v / w
    return s


def _stragglers(rep):
    s = rep["stragglers"]
    out = ["<section id=\"stragglers\"><h2>Stragglers</h2>"]
    if not s["stragglers"]:
        out.append("<p>None: no rank waits in collectives clearly less than the median (%s).</p>" %
                   fmt.seconds(s["median_wait_s"]))
    else:
        out.append("<p>In a synchronous job the slowest rank waits least in collectives. <b>%d of %d ranks</b> hold "
                   "the others back; the others waited <b>%s</b> beyond the stragglers' own wait (%s of their wall "
                   "time). Nodes: %s.</p>" % (
                       len(s["stragglers"]), s["ranks"], fmt.seconds(s["cost_s"]), fmt.share(s["cost_share"]),
                       _e(", ".join("%s (rank%s %s)" % (n["node"], "s" if len(n["straggler_ranks"]) > 1 else "", fmt.ranks(n["straggler_ranks"], 4))
                                    for n in s["nodes"][:8]))))
        rows = [[x["rank"], x["node"], fmt.seconds(x["wait_s"]), fmt.seconds(x["behind_s"]), fmt.seconds(x["work_s"]),
                 "; ".join(x["causes"])] for x in s["stragglers"][:TABLE_ROWS]]
        out.append(_table(["rank", "node", "collective wait", "below median", "work", "cause"], rows))
    lw = ", ".join("%d (%s)" % (x["rank"], fmt.seconds(x["wait_s"])) for x in s["least_wait"][:8])
    mw = ", ".join("%d (%s)" % (x["rank"], fmt.seconds(x["work_s"])) for x in s["most_work"][:8])
    out.append("<p class=\"note\">Least collective wait: %s. Most work: %s. Median wait %s, threshold %s "
               "(wait from %s; work: the rest of the GPU's busy time, else of the wall).</p>" % (_e(lw), _e(mw), fmt.seconds(s["median_wait_s"]), fmt.seconds(s["threshold_s"]),
                                   _e(s["basis"])))
    if s["throttled"]:
        rows = [[t["rank"], t["node"], ",".join(map(str, t["devices"])), fmt.share(t["clock_ratio_mean"]),
                 ", ".join(t["reasons"]) or "-", "%.0f" % t["temperature_c_max"], "yes" if t["straggler"] else "no"]
                for t in s["throttled"][:TABLE_ROWS]]
        out.append("<h2 id=\"throttled\">Throttled GPUs</h2>" + _table(
            ["rank", "node", "device", "SM clock / max", "reasons", "max °C", "straggler"], rows))
    elif s["health_missing_ranks"]:
        out.append("<p class=\"warn\">Device health missing on %d ranks: throttling cannot be checked there.</p>"
                   % s["health_missing_ranks"])
    return "".join(out) + "</section>"


def render(rep):
    pr = rep["per_rank"]
    strag = {x["rank"] for x in rep["stragglers"]["stragglers"]}
    tl, g = rep["time_lost"], rep["gpu"]
    ids = ", ".join(rep["job_ids"]) or "(no job id)"
    cards = [("%d" % rep["ranks"], "ranks on %d nodes" % rep["nodes"], False),
             (fmt.share(tl["lost_share"]["p50"]), "time lost, p50 rank", False),
             (fmt.share(g["idle_share"]["p50"]) if g else "n/a", "GPU idle, p50 rank", False),
             ("%d" % len(rep["findings"]), "findings", bool(rep["findings"])),
             ("%d" % len(rep["stragglers"]["stragglers"]), "stragglers", bool(strag)),
             (fmt.seconds(rep["stragglers"]["cost_s"]), "others' wait for them", bool(strag)),
             ("%d" % len(rep["stragglers"]["throttled"]), "throttled GPUs", bool(rep["stragglers"]["throttled"]))]
    P = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuslack job %s</title>"
         "<style>%s</style></head><body>" % (_e(ids), CSS),
         "<header><h1>gpuslack job report: job %s</h1><p>%d ranks on %d nodes · %d files read, %d skipped</p></header>"
         % (_e(ids), rep["ranks"], rep["nodes"], rep["files"]["read"], len(rep["files"]["skipped"])), "<main>",
         '<div class="cards">%s</div>' % "".join('<div class="card%s"><b>%s</b><span>%s</span></div>' % (
             " bad" if bad else "", _e(v), _e(label)) for v, label, bad in cards)]
    P.append(_missing(rep))
    P.append(_findings(rep))
    P.append(_stragglers(rep))
    P.append("<section id=\"where\"><h2>Where the time went, per rank</h2>")
    hl = {str(r) for r in strag} if len(pr) <= MAX_BARS else {
        lab for lab, _ in _groups(pr, lambda r: {}) if any(int(lab.split("-")[0]) <= s <= int(lab.split("-")[-1])
                                                            for s in strag)}
    if g:
        P.append(svg.stacked_bars(_groups([r for r in pr if r["gpu_idle"] is not None], _gpu_shares), GPU_SEGMENTS,
                                  "GPU time by rank%s (share of wall)" % (
                                      "" if len(pr) <= MAX_BARS else ", mean over groups of ranks"), highlight=hl))
    P.append(svg.stacked_bars(_groups(pr, _host_shares), HOST_SEGMENTS, "Host time blocked in CUDA calls by rank%s "
                              "(share of wall)" % ("" if len(pr) <= MAX_BARS else ", mean over groups of ranks"),
                              highlight=hl))
    P.append("<p class=\"note\">Rank labels in red: stragglers (or groups holding one).</p>")
    P.append(_table(["host blocked in CUDA calls", "sum", "min", "p50", "max", "worst ranks"],
                    _dist_rows([(n, tl[k]) for k, n in CAT_NAMES])))
    if g:
        P.append(_table(["GPU idle", "sum", "min", "p50", "max", "worst ranks"], _dist_rows(
            [("idle", g["idle_s"])] + [(n, g["idle"][k]) for k, n in IDLE_NAMES if g["idle"][k]["sum"] > 0])))
    P.append("</section>")
    P.append(_timeline(rep, strag))
    P.append(_nodes(rep))
    P.append(_topology(rep))
    P.append(_collectives(rep))
    P.append(_kernels(rep))
    P.append(_memory(rep))
    P.append(_sites(rep))
    P.append(_files(rep))
    P.append("</main></body></html>\n")
    return "".join(P)


FINDINGS_SHOWN = 12


def _finding_cost(f, n):
    """The text's cost line (fmt.finding_cost) as a sentence, its cost in bold."""
    line = fmt.finding_cost(f, n, strong=lambda s: "<b>%s</b>" % _e(s))
    return line[0].upper() + line[1:] + "."


def _findings(rep):
    fs, old = rep["findings"], rep["missing"]["findings"]
    out = ["<section id=\"findings\"><h2>Findings</h2>"]
    if old:
        out.append("<p class=\"warn\">%d of %d ranks' summaries predate findings: merged as ranks with none.</p>"
                   % (old, rep["ranks"]))
    if not fs:
        out.append("<p>None: no rule fired on any rank or across ranks.</p>")
    e = rep.get("findings_explain")  # aggregate._findings_explain: each idle second once
    unknown = findings_explain_unknown(e) if e else ""
    if fs and e and not e["ranks"]:
        out.append("<p>How much of the GPU's idle they explain is unknown: %s.</p>" % _e(unknown))
    elif fs and e:
        out.append("<p>They explain <b>%s</b> of the GPU's %s idle on %d rank%s (%s%s).</p>" % (
            _e(fmt.seconds(e["explained_s"])), _e(fmt.seconds(e["gpu_idle_s"])), e["ranks"],
            "" if e["ranks"] == 1 else "s", _e(fmt.share(e["explained_share"])), _e("; " + unknown) if unknown else ""))
    for i, f in enumerate(fs[:FINDINGS_SHOWN]):
        out.append('<div class="finding%s"><h3>%d. %s <span class="rule">%s</span></h3><p>%s</p>' % (
            "" if f["cost_measured"] else " unmeasured", i + 1, _e(f["title"]), _e(f["rule"]),
            _finding_cost(f, rep["ranks"])))
        if f["evidence"]:
            label = "Evidence on rank %d, where it cost most" % f["worst_rank"] \
                if f["scope"] == "ranks" and f["ranks"] > 1 else "Evidence"
            out.append("<p>%s:</p><ul>%s</ul>" % (label, "".join(
                "<li>%s: <b>%s</b></li>" % (_e(e["name"]), _e(e["value"])) for e in f["evidence"][:8])))
        if f["where"]:
            out.append("<p>At:</p><ul>%s</ul>" % "".join(
                "<li><code>%s</code></li>" % _e("\n".join(site[:4])) for site in f["where"][:3]))
        if f["fix"]:
            out.append('<p class="fix"><b>Fix:</b> %s</p>' % _e(f["fix"]))
        out.append("</div>")
    if len(fs) > FINDINGS_SHOWN:
        out.append("<p class=\"note\">and %d more findings (job-report.json lists all)</p>" % (len(fs) - FINDINGS_SHOWN))
    return "".join(out) + "</section>"


def _missing(rep):
    n, why, out = rep["missing"], rep["missing_why"], []
    if n["gpu_timeline"]:
        out.append("GPU figures missing on %d of %d ranks (host-side figures only there): %s" % (
            n["gpu_timeline"], rep["ranks"], why.get("gpu_timeline", "")))
    if n["device_health"]:
        out.append("Device health missing on %d of %d ranks: %s" % (n["device_health"], rep["ranks"],
                                                                    why.get("device_health", "")))
    if n["series"]:
        out.append("Figures over time missing on %d of %d ranks." % (n["series"], rep["ranks"]))
    return "<section id=\"missing\">%s</section>" % "".join('<p class="warn">%s</p>' % _e(x) for x in out) if out else ""


def _timeline(rep, strag):
    t = rep["timeline"]
    if not t:
        return "<section><h2>Over time</h2><p class=\"warn\">No rank wrote figures over time (\"series\").</p></section>"
    out = ["<section id=\"over-time\"><h2>Over time</h2>"]
    rows = t["idle_rows"]
    if rows:
        if all(r["first_rank"] == r["last_rank"] for r in rows):
            labels = ["rank %d%s" % (r["first_rank"], " *" if r["first_rank"] in strag else "") for r in rows]
            title = "GPU idle over time by rank (* straggler)"
        else:
            labels = ["%d-%d%s" % (r["first_rank"], r["last_rank"], " *" if any(
                r["first_rank"] <= x <= r["last_rank"] for x in strag) else "") for r in rows]
            title = "GPU idle over time, ranks in groups (mean; * holds a straggler)"
        out.append(svg.heatmap(list(zip(labels, [r["gpu_idle_share"] for r in rows])),
                               t["t_s"][-1] + t["step_s"] / 2, title))
    series = []
    for key, name, color in (("memory_used_bytes", "GPU memory used", "#2e86de"),
                             ("reserved_bytes", "allocator reserved", "#8e44ad"),
                             ("allocated_bytes", "allocator allocated", "#27ae60")):
        b = t[key]
        if b:
            series.append((name + " (max rank)", color, b["max"], False))
            series.append((name + " (p50 rank)", color, b["p50"], True))
    if series:
        out.append(svg.lines(t["t_s"], series, "Memory over time (per rank: p50 and max over ranks)", fmt.nbytes))
    return "".join(out) + "</section>"


def _nodes(rep):
    nodes = rep["per_node"]
    rows = [[n["node"], n["ranks"], fmt.seconds(n["lost_s"]),
             fmt.share(n["gpu_idle_s"] / n["gpu_wall_s"]) if n["gpu_wall_s"] else "-",
             fmt.ranks(n["stragglers"], 6) or "-"] for n in nodes[:TABLE_ROWS]]
    more = "<p class=\"note\">and %d more nodes (the JSON report lists all)</p>" % (len(nodes) - TABLE_ROWS) \
        if len(nodes) > TABLE_ROWS else ""
    return "<section id=\"nodes\"><h2>Per node (most time lost first)</h2>%s%s</section>" % (
        _table(["node", "ranks", "time lost", "GPU idle", "stragglers"], rows,
               ["straggler" if n["stragglers"] else "" for n in nodes[:TABLE_ROWS]]), more)


def _topology(rep):
    """Each kind of node once: its nodes, links per rank, NICs, GPUs."""
    t = rep.get("topology")
    if not t:
        return ""
    gbps = fmt.link_gbps
    rows = []
    for k in t["kinds"][:TABLE_ROWS]:
        names = ", ".join(k["nodes"][:4]) + (" and %d more" % (len(k["nodes"]) - 4) if len(k["nodes"]) > 4 else "")
        n = k["nics"]
        near = sorted({g["closeness"] for g in k["gpus"]})
        rows.append([names, k["ranks_per_node"] or "?",
                     gbps(k["intra_gbps"]) + (" NVLink" if k["intra_is_nvlink"] else " PCIe" if k["intra_gbps"] else ""),
                     gbps(k["inter_gbps"]), "%d of %d active%s" % (n["active"], n["ports"],
                                                                     " (%s)" % "/".join(n["link_layers"]) if n["link_layers"] else ""),
                     ", ".join(near) or "-"])
    shapes = ", ".join("%d nodes x %d ranks" % (s["nodes"], s["ranks_per_node"]) for s in t["shapes"])
    missing = "<p class=\"note\">topology missing on %d ranks: %s</p>" % (t["ranks_missing"], _e(t["missing_why"])) \
        if t["ranks_missing"] else ""
    return "<section id=\"topology\"><h2>Topology (each kind of node once%s)</h2>%s%s</section>" % (
        _e("; job shape " + shapes) if shapes else "",
        _table(["nodes", "ranks per node", "within the node", "between nodes", "NICs", "nearest NIC"], rows), missing)


def _collectives(rep):
    c = rep["collectives"]
    if not c["groups"]:
        return "<section id=\"collectives\"><h2>Collectives</h2><p>No NCCL collectives seen.</p></section>"
    exp = c["expected_busbw_gbps"]
    rows, pts = [], []
    for i, gr in enumerate(c["groups"]):
        b = gr["busbw_gbps"]
        rows.append(["%d ranks" % gr["nranks"], gr["op"], gr["datatype"], fmt.size_bucket(gr["size_bucket"]),
                     nccl_choice(gr), gr["ranks"], gr["count"], fmt.nbytes(gr["bytes"]), fmt.seconds(gr["gpu_s"]),
                     "%.3g" % b["min"], "%.3g" % b["p50"], "%.3g" % b["max"],
                     gr["below_expected_count"] if exp else "-",
                     ", ".join(str(x["rank"]) for x in gr["below_expected"][:8]) or "-"])
        if b["n"]:
            pts.append({"size_bucket": gr["size_bucket"], "label": "%s %s" % (gr["op"], fmt.size_bucket(gr["size_bucket"])),
                        "min": b["min"], "p50": b["p50"], "max": b["max"], "n": b["n"], "offset": (i % 3) * 6,
                        "below": [(x["rank"], x["busbw_gbps"]) for x in gr["below_expected"]]})
    out = ["<section id=\"collectives\"><h2>Collectives across ranks</h2>",
           svg.busbw(pts, exp, "Bus bandwidth by message size%s" % (" against the expected %.3g GB/s" % exp if exp else "")),
           _table(["communicator", "op", "type", "size", "NCCL", "ranks", "calls", "bytes", "GPU time", "busbw min", "p50",
                   "max", "below expected", "slowest ranks"], rows)]
    if not exp:
        out.append("<p class=\"note\">No expected bus bandwidth (expected_busbw_gbps, or merge --expected-busbw).</p>")
    return "".join(out) + "</section>"


def _allocator_off(m):
    """allocator:vmm selected but off: one row per reason (issue 28, point 5)."""
    st = m["allocator_status"]
    if not st["off"]:
        return ""
    rows = [[o["ranks"], o["devices"], fmt.ranks(o["example_ranks"]), o["why"]] for o in st["off"][:TABLE_ROWS]]
    return "<p class=\"warn\">allocator:vmm is selected on %d ranks but off on some devices: their cudaMalloc and " \
           "cudaFree went to the runtime.</p>%s" % (st["vmm_selected_ranks"], _table(
               ["vmm allocator off: ranks", "devices", "ranks", "why"], rows))


def _range(lo, hi, f=str):
    if lo is None:
        return "-"
    return f(lo) if f(lo) == f(hi) else "%s-%s" % (f(lo), f(hi))


def _kernels(rep):
    """The top kernels across ranks (rep["kernels"]: GPU time summed over
    each rank's top ten) and how their grids filled the GPU: blocks,
    resident blocks per SM, waves, the wave efficiency, and the GPU time of
    launches that left SMs idle (docs/gpu-timeline.md, "Launch shapes and
    waves"). "-" where no rank's records carried a grid or knew its device."""
    ks = rep.get("kernels") or []
    if not ks:
        return ""
    rows = [[k["name"], k["ranks"], fmt.seconds(k["total_s"]), _range(k["blocks_min"], k["blocks_max"]),
             _range(k["blocks_per_sm_min"], k["blocks_per_sm_max"]),
             _range(k["waves_min"], k["waves_max"], lambda v: "%.2f" % v),
             fmt.share(k["wave_efficiency"]) if k["wave_efficiency"] is not None else "-",
             fmt.seconds(k["underfilled_s"]), fmt.seconds(k["underfilled_idle_s"])] for k in ks]
    return "<section id=\"kernels\"><h2>Top kernels across ranks</h2>%s<p class=\"note\">GPU time summed over the " \
           "ranks; ranges over their launch shapes; wave efficiency weighted by GPU time. Underfilled: launches under " \
           "75%% wave efficiency or with fewer blocks than SMs, and the SM time they left idle.</p></section>" % _table(
               ["kernel", "ranks", "GPU time", "blocks", "blocks/SM", "waves", "wave eff.", "underfilled GPU time",
                "idle SM time"], rows)


def _memory(rep):
    m = rep["memory"]
    if not m["allocator"] and not m["pinned"]:
        return "<section id=\"memory\"><h2>Memory</h2><p class=\"note\">No rank used the vmm allocator or the pinned " \
               "heap.</p>%s</section>" % _allocator_off(m)
    out = ["<section id=\"memory\"><h2>Memory (vmm allocator and pinned heap)</h2>"]
    rows = []
    if m["allocator"]:
        a = m["allocator"]
        for k, name in (("peak_reserved_bytes", "peak reserved"), ("peak_allocated_bytes", "peak allocated")):
            d = a[k]
            rows.append([name, a["ranks"], fmt.nbytes(d["min"]), fmt.nbytes(d["p50"]), fmt.nbytes(d["max"]),
                         ", ".join("%d (%s)" % (w["rank"], fmt.nbytes(w["value"])) for w in d["worst"][:3])])
    if m["pinned"]:
        d = m["pinned"]["peak_pinned_bytes"]
        rows.append(["peak pinned", m["pinned"]["ranks"], fmt.nbytes(d["min"]), fmt.nbytes(d["p50"]),
                     fmt.nbytes(d["max"]), ", ".join("%d (%s)" % (w["rank"], fmt.nbytes(w["value"])) for w in d["worst"][:3])])
    out.append(_table(["per rank", "ranks", "min", "p50", "max", "largest"], rows))
    if m["allocator"]:
        out.append("<p class=\"note\">OOM retries over all ranks: %d.</p>" % m["allocator"]["oom_retries"])
    out.append(_allocator_off(m))
    return "".join(out) + "</section>"


def _sites(rep):
    if not rep["call_sites"]:
        return ""
    rows = [[fmt.seconds(s["blocked_s"]), s["count"], s["api"], s["symbol"], s["category"], s["ranks"]]
            for s in rep["call_sites"]]
    return "<section id=\"call-sites\"><h2>Top call sites across ranks (merged by symbol)</h2>%s</section>" % _table(
        ["blocked", "calls", "call", "at", "category", "ranks"], rows)


def _files(rep):
    f = rep["files"]
    if not f["skipped"] and not f["notes"]:
        return ""
    items = [load.skipped_line(x["reason"]) for x in f["skipped"]] + f["notes"]
    return "<section id=\"files\"><h2>Files</h2><ul>%s</ul></section>" % "".join(
        "<li>%s</li>" % _e(i) for i in items[:50])
