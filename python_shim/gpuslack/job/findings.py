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


def rank_order(f):
    return (not f["cost_measured"], -f["cost_s_total"], f["rule"], f["worst_rank"])


def build(ranks, strag):
    """Every finding of the job, ranked (docs/job_report.schema.json)."""
    out = merge_ranks(ranks) + job_rules.nccl_env_mismatch(ranks) + job_rules.straggler(strag, ranks)
    return sorted(out, key=rank_order)
