"""Number formatting for the job report's text and HTML (fmt.py).

Seconds, bytes and shares are the library's formatters (gpuslack.labels:
units.h through gpuslack_format_figure), so a figure reads the same here as
in each rank's text summary (Note [One formatter per unit]). What is the
job report's own: a list of ranks, and a merged finding's cost line, the
same words in the text and the HTML (finding_cost)."""
from .. import labels

seconds = labels.seconds
nbytes = labels.nbytes
share = labels.percent
gbps = labels.gbps
size_bucket = labels.size_bucket
link_gbps = labels.link_gbps
link_gbits = labels.link_gbits
waves = labels.waves


def ranks(lst, limit=8):
    s = ", ".join(str(r) for r in lst[:limit])
    return s + (" and %d more" % (len(lst) - limit) if len(lst) > limit else "")


def finding_cost(f, n_ranks, strong=str):
    """The cost of one merged finding (findings.py's entry) in the words both
    the job report's text and its HTML use: where it fired and what it cost
    ("on 2 of 8 ranks (2, 5); cost 7.00 s summed, ..."), or a job-level
    straggler's cost to the others. strong(figure) marks the cost itself
    (the HTML's bold); the rest is numbers and fixed words."""
    if f["scope"] == "job" and f["rule"] == "straggler":
        return "cost %s of the other ranks' waiting (%s of their wall time)" % (
            strong(seconds(f["cost_s_total"])), share(f["cost_share_max"]))
    where = "on %d of %d ranks (%s)" % (f["ranks"], n_ranks, ranks(f["rank_list"], 6))
    if not f["cost_measured"]:
        return where + "; cost not measured"
    idle = "; GPU idle %s" % seconds(f["gpu_idle_s_total"]) if f["gpu_idle_s_total"] is not None else ""
    return "%s; cost %s summed, %s of wall on average, %s on rank %d%s" % (
        where, strong(seconds(f["cost_s_total"])), share(f["cost_share_mean"]), share(f["cost_share_max"]),
        f["worst_rank"], idle)
