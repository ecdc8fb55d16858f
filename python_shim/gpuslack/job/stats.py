"""Distributions over ranks for the job report (stats.py).

What: min, p50, p90, max, mean and sum of one figure over the ranks, and
the ranks with the largest values; pure functions on lists, no state.
Percentiles are nearest-rank (the value of a real rank, never an
interpolation between two), so "p50 rank" always names a rank.
"""
import heapq


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (q in [0, 100])."""
    if not sorted_values:
        return 0.0
    i = int(round(q / 100.0 * (len(sorted_values) - 1)))
    return sorted_values[max(0, min(len(sorted_values) - 1, i))]


def median(values):
    return percentile(sorted(values), 50)


def distribution(pairs, worst=5, largest_is_worst=True):
    """pairs: [(rank, value)]. Returns {n, min, p50, p90, max, mean, sum,
    worst: [{rank, value}]} (worst: the largest values first, or the smallest
    with largest_is_worst False)."""
    if not pairs:
        return {"n": 0, "min": 0.0, "p50": 0.0, "p90": 0.0, "max": 0.0, "mean": 0.0, "sum": 0.0, "worst": []}
    vals = sorted(v for _, v in pairs)
    total = sum(vals)
    key = (lambda p: (-p[1], p[0])) if largest_is_worst else (lambda p: (p[1], p[0]))
    order = heapq.nsmallest(worst, pairs, key=key) if worst else []
    return {"n": len(vals), "min": vals[0], "p50": percentile(vals, 50), "p90": percentile(vals, 90),
            "max": vals[-1], "mean": total / len(vals), "sum": total,
            "worst": [{"rank": r, "value": v} for r, v in order[:worst]]}


def mad(values):
    """Median absolute deviation: a spread that one outlier cannot move."""
    if not values:
        return 0.0
    m = median(values)
    return median([abs(v - m) for v in values])


def bins(n_items, n_bins):
    """Split range(n_items) into at most n_bins consecutive [start, end) runs
    of near-equal size."""
    n_bins = max(1, min(n_bins, n_items))
    out, start = [], 0
    for b in range(n_bins):
        end = (n_items * (b + 1)) // n_bins
        if end > start:
            out.append((start, end))
        start = end
    return out
