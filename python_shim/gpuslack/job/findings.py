"""The job report's findings: every rank's, merged, and the job's own
(findings.py).

What: one entry per rule that fired on some rank (allocator_sync,
pageable_copies, ...: lib/report/finding.h), merged over the ranks it fired
on: how many and which, its cost summed over them (cost_s_total), the mean
and largest share of a rank's wall time it cost there (cost_share_mean,
cost_share_max), the GPU idle charged to it summed over the ranks whose
timeline measured it (else null), and the title, evidence, call sites and
fix of the rank where it cost most (worst_rank). Then the job-level
findings (job_rules.py: nccl_env_mismatch, straggler); all of them ranked
by cost_s_total, most costly first; a finding whose cost was not measured
(cost_measured false) comes after the measured ones.

collective_algorithm's fix (its "environment" evidence: NCCL_ALGO=...,
NCCL_PROTO=..., NCCL_MIN_NCHANNELS=...) only works when every rank makes the
same choice (NCCL needs it: a rank on Tree and one on Ring deadlock or
corrupt), so its merged entry carries fix_check: whether every rank that
made collectives asks for the same lines, and the ranks that differ (those
asking for other lines, and those where the rule did not fire: "" lines);
the fix says which.

When: aggregate.build. A summary from before findings (no "findings" member)
merges as a rank with none; the report counts such ranks (missing.findings).
Pure functions; no state.
"""
from . import job_rules


def merge_ranks(ranks):
    """The per-rank findings merged by rule (scope "ranks"), unsorted."""
    by_rule = {}
    for r in ranks:
        for f in r["findings"] or []:
            acc = by_rule.setdefault(f["rule"], {"ranks": [], "cost": 0.0, "shares": [], "idle": None, "worst": None})
            acc["ranks"].append(r["rank"])
            acc["cost"] += f["cost_s"]
            acc["shares"].append(f["cost_share"])
            if f["gpu_idle_s"] is not None:
                acc["idle"] = (acc["idle"] or 0.0) + f["gpu_idle_s"]
            w = acc["worst"]
            if w is None or f["cost_s"] > w[1]["cost_s"] or (f["cost_s"] == w[1]["cost_s"] and r["rank"] < w[0]):
                acc["worst"] = (r["rank"], f)
    out = []
    for rule, acc in by_rule.items():
        worst_rank, w = acc["worst"]
        out.append({"rule": rule, "scope": "ranks", "title": w["title"], "ranks": len(acc["ranks"]),
                    "rank_list": sorted(acc["ranks"]), "cost_measured": True, "cost_s_total": acc["cost"],
                    "cost_share_mean": sum(acc["shares"]) / len(acc["shares"]),
                    "cost_share_max": max(acc["shares"]), "gpu_idle_s_total": acc["idle"],
                    "worst_rank": worst_rank, "evidence": w["evidence"], "where": w["where"], "fix": w["fix"]})
    return out


ALGORITHM_RULE = "collective_algorithm"


def _environment(f):
    for e in f["evidence"]:
        if e["name"] == "environment":
            return e["value"]
    return ""


def fix_check(ranks, entry):
    """collective_algorithm's fix across the ranks (module doc): {"same",
    "fix" (the lines most ranks ask for), "differing": [{"rank", "fix"}]};
    the entry's fix text says so."""
    asks = {}
    for r in ranks:
        lines = ""
        for f in r["findings"] or []:
            if f["rule"] == ALGORITHM_RULE:
                lines = _environment(f)
        if lines or r.get("collectives"):
            asks[r["rank"]] = lines
    counts = {}
    for lines in asks.values():
        if lines:
            counts[lines] = counts.get(lines, 0) + 1
    common = max(sorted(counts), key=lambda k: counts[k]) if counts else ""
    differing = [{"rank": rk, "fix": lines} for rk, lines in sorted(asks.items()) if lines != common]
    check = {"same": not differing, "fix": common, "differing": differing}
    if not differing:
        note = "The fix is the same on every rank (%d): set it on all of them." % len(asks)
    else:
        shown = ", ".join("rank %d: %s" % (d["rank"], d["fix"] or "none") for d in differing[:8])
        more = " and %d more" % (len(differing) - 8) if len(differing) > 8 else ""
        note = ("The ranks differ (%s%s) against %s on %d: NCCL needs every rank to make the same choice, so set "
                "one fix on all of them." % (shown, more, common, counts.get(common, 0)))
    entry["fix"] = (entry["fix"] + " " + note).strip()
    entry["fix_check"] = check
    return entry


def rank_order(f):
    return (not f["cost_measured"], -f["cost_s_total"], f["rule"], f["worst_rank"])


def build(ranks, strag):
    """Every finding of the job, ranked (docs/job_report.schema.json)."""
    merged = [fix_check(ranks, f) if f["rule"] == ALGORITHM_RULE else f for f in merge_ranks(ranks)]
    out = merged + job_rules.nccl_env_mismatch(ranks) + job_rules.straggler(strag, ranks)
    return sorted(out, key=rank_order)
