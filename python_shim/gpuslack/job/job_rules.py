"""Job-level findings: what no rank can see alone (job_rules.py).

What: two rules over all ranks, each returning findings in the job report's
shape (findings.py; docs/job_report.schema.json "findings", scope "job"):

  nccl_env_mismatch  an NCCL tuning variable (collectives.env: what each
                     rank's NCCL read) with different values, or set on some
                     ranks and unset on others. One finding for all such
                     variables; it fires on the ranks that do not hold a
                     variable's most common value. Not fired on: logging
                     only (NCCL_DEBUG, NCCL_DEBUG_SUBSYS); names of local
                     hardware (NCCL_IB_HCA, NCCL_SOCKET_IFNAME,
                     NCCL_TOPO_FILE) that differ only between nodes, every
                     rank of a node agreeing (nodes with different NICs). Its
                     cost is not measured: the ranks disagree on how to run
                     each collective, which can slow or hang all of them.
  straggler          one finding per straggler that stragglers.find named,
                     with its causes and a fix for each; cost: what the
                     other ranks waited for it at collectives (others_wait_s).

Note [A false finding is a bug] (lib/report/finding.h) holds here too:
ranks within noise name no straggler (stragglers.py's threshold), the same
settings on every rank no mismatch. Pure functions; no state.
"""
from . import fmt

LOGGING_ONLY = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS")
LOCAL_HARDWARE = ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_TOPO_FILE")
UNSET = "(unset)"


def finding(rule, title, rank_list, cost_s, cost_share, worst_rank, evidence, fix, cost_measured=True):
    """A job-level finding in the merged shape (findings.py). Its cost is no
    rank's GPU idle (the others' wait in collectives, or not measured), so
    gpu_idle_s_total is None and the idle the findings explain counts the
    ranks' own findings only (aggregate._findings_explain; Note [Each idle
    second charged once] in lib/findings/idle_ledger.h)."""
    return {"rule": rule, "scope": "job", "title": title, "ranks": len(rank_list), "rank_list": sorted(rank_list),
            "cost_measured": cost_measured, "cost_s_total": cost_s, "cost_share_mean": cost_share,
            "cost_share_max": cost_share, "gpu_idle_s_total": None, "worst_rank": worst_rank,
            "evidence": [{"name": n, "value": v} for n, v in evidence], "where": [], "fix": fix}


def _values(ranks, name):
    """{value: [ranks]} of one variable over the ranks that saw NCCL."""
    out = {}
    for r in ranks:
        out.setdefault(r["collectives"]["env"].get(name, UNSET), []).append(r["rank"])
    return out


def _differs_only_between_nodes(ranks, name):
    per_node = {}
    for r in ranks:
        per_node.setdefault(r["host"], set()).add(r["collectives"]["env"].get(name, UNSET))
    return all(len(v) == 1 for v in per_node.values())


def nccl_env_mismatch(ranks):
    """[] or [one finding] naming every NCCL variable whose value differs."""
    with_env = [r for r in ranks if r["collectives"]]
    if len(with_env) < 2:
        return []
    names = sorted({k for r in with_env for k in r["collectives"]["env"]})
    evidence, odd = [], set()
    for name in names:
        if name in LOGGING_ONLY:
            continue
        values = _values(with_env, name)
        if len(values) < 2:
            continue
        if name in LOCAL_HARDWARE and _differs_only_between_nodes(with_env, name):
            continue
        order = sorted(values.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for _, rs in order[1:]:
            odd.update(rs)
        evidence.append((name, "; ".join("%s on %d rank%s (%s)" % (
            v, len(rs), "" if len(rs) == 1 else "s", fmt.ranks(rs, 6)) for v, rs in order)))
    if not evidence:
        return []
    shown = [n for n, _ in evidence]
    title = "NCCL settings differ between ranks: %s" % ", ".join(shown[:4]) + (
        " and %d more" % (len(shown) - 4) if len(shown) > 4 else "")
    fix = ("Set %s the same on every rank: export %s in the job script before the launcher (srun, torchrun, "
           "mpirun) starts the ranks, not in per-node or per-rank setup; ranks that disagree on the "
           "algorithm, protocol or transport can run every collective slower or hang." % (
               " and ".join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else shown[0],
               "them" if len(shown) > 1 else "it"))
    return [finding("nccl_env_mismatch", title, odd, 0.0, 0.0, min(odd), evidence, fix, cost_measured=False)]


CAUSE_WORDS = {"throttled": "its GPU throttles", "host_bound": "its host is slow",
               "more_work": "it does more work", "health_missing": "cause unknown (no device health)"}


def _fix(s, throttle):
    r, node = s["rank"], s["node"]
    out = []
    for c in s["cause_ids"]:
        if c == "throttled":
            out.append("Rank %d's GPU on %s throttles (%s): check that GPU's cooling, power cap and clocks "
                       "(nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER on the node) or leave the node out of the "
                       "job until it is fixed." % (r, node, ", ".join(throttle["reasons"]) if throttle else "?"))
        elif c == "host_bound":
            out.append("Rank %d's host feeds its GPU late: look at that rank's input pipeline (more DataLoader "
                       "workers, prefetching, pre-decoded data) and at %s's CPUs (core binding, other processes "
                       "on the node)." % (r, node))
        elif c == "more_work":
            out.append("Rank %d's GPU is healthy and its host keeps pace, so it has more to compute: give every "
                       "rank the same work (equal batch sizes and sequence lengths per rank)." % r)
        else:
            out.append("Turn device health on for every rank (GPUSLACK_CONF device_health:auto, with NVML "
                       "present) to tell a throttled GPU from more work on rank %d." % r)
    return " ".join(out)


def straggler(strag, ranks):
    """One finding per straggler of stragglers.find(ranks) (strag)."""
    wall = {r["rank"]: r["wall_s"] for r in ranks}
    total_wall = sum(wall.values())
    throttle = {t["rank"]: t for t in strag["throttled"]}
    out = []
    for s in strag["stragglers"]:
        others_wall = total_wall - wall.get(s["rank"], 0.0)
        share = min(1.0, s["others_wait_s"] / others_wall) if others_wall > 0 else 0.0
        t = throttle.get(s["rank"])
        evidence = [("collective wait", "%s, %s below the median rank's %s" % (
                        fmt.seconds(s["wait_s"]), fmt.seconds(s["behind_s"]), fmt.seconds(strag["median_wait_s"]))),
                    ("others' wait for it", "%s over %d ranks" % (fmt.seconds(s["others_wait_s"]),
                                                                   strag["ranks"] - 1))]
        if t:
            evidence.append(("SM clock", "%s of max (%s)%s" % (
                fmt.share(t["clock_ratio_mean"]), ", ".join(t["reasons"]),
                ", %.0f C max" % t["temperature_c_max"] if t["temperature_c_max"] else "")))
        if "host_bound" in s["cause_ids"]:
            evidence.append(("host-bound GPU idle", "%s more than the median rank's" % fmt.seconds(
                s["extra_host_bound_s"])))
        if "more_work" in s["cause_ids"]:
            evidence.append(("work", "%s more than the median rank's" % fmt.seconds(s["work_excess_s"])))
        title = "Rank %d on %s holds the other ranks back at collectives: %s" % (
            s["rank"], s["node"], " and ".join(CAUSE_WORDS[c] for c in s["cause_ids"]))
        out.append(finding("straggler", title, [s["rank"]], s["others_wait_s"], share, s["rank"], evidence,
                           _fix(s, t)))
    return out
