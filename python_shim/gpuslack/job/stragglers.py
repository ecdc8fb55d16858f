"""Stragglers: which ranks hold a synchronous job back (stragglers.py).

In a synchronous job every rank meets the others at each collective, so the
slowest rank is the one that waits *least* in collectives: it arrives last,
and the others wait for it. This module ranks the ranks by collective wait
and by work (GPU busy time outside communication), names the ranks whose
wait falls clearly below the median (the stragglers) and the nodes they run
on, and what they cost the rest: the others' collective wait beyond the
stragglers' own, summed (the time the others would have saved had the
stragglers kept pace).

Wait comes, best first, from the GPU timeline (NCCL kernels' busy time: a
kernel spins while it waits for its peers), else from the collectives' GPU
estimate, else from host time in NCCL calls; all ranks use the same basis.

Each straggler also gets what the others waited for it alone
(others_wait_s: every other rank's collective wait beyond its own, summed:
the time they spent at collectives it had not reached yet). Two stragglers'
figures overlap (while the later one is awaited, so is the earlier one's
lag), so they are not added up; cost_s above is the job's.

Throttled GPUs (device_health: throttle reasons other than idle or
application clocks, or a mean SM clock under 90% of the maximum) are listed
and tied to the stragglers they explain; each straggler's cause_ids name its
causes for the job report's findings (job/job_rules.py). Pure functions; no
state.
"""
import bisect
import heapq

from . import stats

MIN_RANKS = 3            # fewer ranks have no majority to compare against


def _basis(ranks):
    if all(r["gpu"] for r in ranks):
        return "gpu_timeline"
    if all(r["collectives"] and r["collectives"]["gpu_s_estimated"] > 0 for r in ranks):
        return "collectives_gpu_estimate"
    return "host_collective_time"


def wait_and_work(r, basis):
    """(collective wait s, work s) of one rank under basis."""
    if basis == "gpu_timeline":
        b = r["gpu"]["busy"]
        return b["communication"], b["compute"] + b["copies"] + b["memsets"]
    if basis == "collectives_gpu_estimate":
        w = r["collectives"]["gpu_s_estimated"]
        return w, max(0.0, r["wall_s"] - w)
    w = r["categories"]["collective"]
    return w, max(0.0, r["wall_s"] - r["lost_s"] - r["categories"]["sync"])


def throttled(r):
    """The throttled devices of one rank: [{device, clock_ratio_mean, reasons, ...}].

    A device throttled when NVML gave a slowdown reason in some sample
    (throttled_samples: gpu_idle and applications_clocks do not count). A
    low mean clock alone is no evidence: a real GPU clocks down whenever it
    idles, and clock_ratio_mean averages those samples too."""
    out = []
    for d in r["health"] or []:
        if d["throttled_samples"] > 0 and d["throttle_reasons"]:
            out.append(d)
    return out


def _wait_beyond(sorted_waits, suffix, w):
    """Sum over the waits above w of (wait - w): the others' wait beyond w
    (the rank's own wait adds nothing)."""
    i = bisect.bisect_right(sorted_waits, w)
    return max(0.0, suffix[i] - w * (len(sorted_waits) - i))


def find(ranks, top=10):
    basis = _basis(ranks) if ranks else "host_collective_time"
    ww = {r["rank"]: wait_and_work(r, basis) for r in ranks}
    node = {r["rank"]: r["host"] for r in ranks}
    waits = [w for w, _ in ww.values()]
    works = [k for _, k in ww.values()]
    med_wait, med_work = stats.median(waits), stats.median(works)
    threshold = max(0.1 * med_wait, 3 * 1.4826 * stats.mad(waits))
    stragglers = []
    if len(ranks) >= MIN_RANKS and med_wait > 0:
        for r in ranks:
            w, k = ww[r["rank"]]
            if med_wait - w > threshold:
                stragglers.append(r)
    strag_ranks = {r["rank"] for r in stragglers}
    cost = 0.0
    others_wall = 0.0
    if stragglers:
        w_s = max(ww[r["rank"]][0] for r in stragglers)
        for r in ranks:
            if r["rank"] not in strag_ranks:
                cost += max(0.0, ww[r["rank"]][0] - w_s)
                others_wall += r["wall_s"]
    med_host_bound = stats.median([r["gpu"]["idle"]["host_bound"] for r in ranks if r["gpu"]]) \
        if basis == "gpu_timeline" else 0.0
    throttled_list = []
    for r in ranks:
        devs = throttled(r)
        if devs:
            worst = min(devs, key=lambda d: d["clock_ratio_mean"])
            reasons = sorted({x for d in devs for x in d["throttle_reasons"]})
            throttled_list.append({"rank": r["rank"], "node": r["host"], "devices": [d["device"] for d in devs],
                                   "clock_ratio_mean": worst["clock_ratio_mean"], "reasons": reasons,
                                   "temperature_c_max": max(d["temperature_c_max"] for d in devs),
                                   "straggler": r["rank"] in strag_ranks})
    by_rank_throttle = {t["rank"]: t for t in throttled_list}
    sorted_waits = sorted(waits)
    suffix = [0.0] * (len(sorted_waits) + 1)      # suffix[i]: sum of sorted_waits[i:]
    for i in range(len(sorted_waits) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sorted_waits[i]
    out_stragglers = []
    for r in sorted(stragglers, key=lambda r: ww[r["rank"]][0]):
        w, k = ww[r["rank"]]
        causes, cause_ids = [], []
        t = by_rank_throttle.get(r["rank"])
        if t:
            cause_ids.append("throttled")
            causes.append("GPU throttled: SM clock %.0f%% of max (%s)%s" % (
                100 * t["clock_ratio_mean"], ", ".join(t["reasons"]) or "clock below max",
                ", %.0f C max" % t["temperature_c_max"] if t["temperature_c_max"] else ""))
        extra_host = r["gpu"]["idle"]["host_bound"] - med_host_bound if r["gpu"] else 0.0
        if extra_host > threshold:
            cause_ids.append("host_bound")
            causes.append("host-bound: its GPU idled %.3g s more than the median rank's with no CUDA call in flight "
                          "(data loading, CPU, Python)" % extra_host)
        if not causes:
            cause_ids.append("more_work" if r["health"] is not None else "health_missing")
            causes.append("GPU not throttled and no extra host-bound idle: more work on this rank (input imbalance?)"
                          if r["health"] is not None else
                          "device health not measured: %s" % r["health_missing"])
        out_stragglers.append({"rank": r["rank"], "node": r["host"], "wait_s": w, "work_s": k,
                               "behind_s": med_wait - w, "work_excess_s": k - med_work,
                               "throttled": bool(t), "causes": causes, "cause_ids": cause_ids,
                               "extra_host_bound_s": max(0.0, extra_host),
                               "others_wait_s": _wait_beyond(sorted_waits, suffix, w)})
    nodes = {}
    for s in out_stragglers:
        nodes.setdefault(s["node"], []).append(s["rank"])
    ranks_per_node = {}
    for r in ranks:
        ranks_per_node[r["host"]] = ranks_per_node.get(r["host"], 0) + 1
    by_wait = heapq.nsmallest(top, ww, key=lambda k: (ww[k][0], k))
    by_work = heapq.nsmallest(top, ww, key=lambda k: (-ww[k][1], k))
    return {
        "basis": basis, "ranks": len(ranks), "median_wait_s": med_wait, "median_work_s": med_work,
        "threshold_s": threshold,
        "least_wait": [{"rank": k, "node": node[k], "wait_s": ww[k][0], "work_s": ww[k][1]} for k in by_wait],
        "most_work": [{"rank": k, "node": node[k], "wait_s": ww[k][0], "work_s": ww[k][1]} for k in by_work],
        "stragglers": out_stragglers,
        "nodes": [{"node": n, "straggler_ranks": rs, "ranks": ranks_per_node[n]} for n, rs in sorted(nodes.items())],
        "cost_s": cost, "cost_share": cost / others_wall if others_wall else 0.0,
        "throttled": throttled_list,
        "health_missing_ranks": sum(1 for r in ranks if r["health"] is None),
    }
