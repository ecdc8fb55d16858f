"""Issue 14's goals as one table (scripts/bench-peers.sh --goals): each
row what was asked, what this run measured beside torch's allocator with
expandable_segments:True, and whether it is met or by how much it misses.

peers.py's report opens with table(); report() runs, for --goals, the
smallest devices (pressure.py) and the allocation loops
(bench/alloc_loop.py) first and hands their rows to it. bench/README.md,
"Allocator goals", is report()'s output.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def pair_rows(bench):
    """The cached pair's goals, from alloc_bench's medians (CPU time)."""
    cpu = {}
    for line in bench.splitlines():
        m = re.match(r"BM_DeviceAllocator_StreamPair/(\d+)/.*threads:(\d+)_median\s+([\d.]+) ns\s+([\d.]+) ns", line)
        if m:
            cpu[(int(m.group(1)), int(m.group(2)))] = float(m.group(4))
    rows = []
    for size in sorted({k[0] for k in cpu}):
        one, eight = cpu.get((size, 1)), cpu.get((size, 8))
        name = "%d KiB" % (size >> 10) if size < 1 << 20 else "%d MiB" % (size >> 20)
        if one is not None:
            rows.append("| cached pair (C++, one stream per thread), %s: <= 60 ns CPU on 1 thread | %.0f ns | %s |"
                        % (name, one, "yes" if one <= 60 else "no, by %.1fx" % (one / 60)))
        if one and eight is not None:
            rows.append("| the same with 8 threads on one allocator: <= 1.3x one thread's CPU per pair | %.0f ns, "
                        "%.2fx | %s |" % (eight, eight / one,
                                          "yes" if eight <= 1.3 * one else "no, by %.2fx" % (eight / one / 1.3)))
    return rows


def table(w, by, traces, extra=()):
    """Issue 14's goals that this run measures, each a row: what was asked,
    what was measured beside torch's expandable segments, met or by how
    much it misses; then `extra` rows (with --goals: the smallest devices
    and the allocation loops) and the cached pair's."""
    import peers
    g, t = by["gpuslack default"], by["torch expandable_segments"]
    w("**Goals (issue 14), gpuslack's defaults against torch expandable_segments, this run:**")
    w("")
    w("| goal | measured | met |")
    w("|---|---|---|")
    worse = [x for x in traces if g[x]["peak_reserved"] > t[x]["peak_reserved"]]
    w("| peak reserved <= torch expandable's on every trace | %d of %d traces%s | %s |"
      % (len(traces) - len(worse), len(traces),
         "; more on " + ", ".join("%s (%.3fx)" % (x, g[x]["peak_reserved"] / t[x]["peak_reserved"]) for x in worse)
         if worse else "", "yes" if not worse else "no"))
    mini = [x for x in traces if "minimalloc" in x]
    if mini:
        gs, ts = sum(g[x]["peak_reserved"] for x in mini), sum(t[x]["peak_reserved"] for x in mini)
        w("| minimalloc sum <= 0.8x torch expandable's | %s against %s: %.3fx | %s |"
          % (peers.gib(gs), peers.gib(ts), gs / ts, "yes" if gs <= 0.8 * ts else "no, by %.3fx" % (gs / ts / 0.8)))
    recorded = [x for x in traces if os.path.exists(os.path.join(peers.RECORDED, x + ".pickle.gz"))]
    if recorded:  # issue 28: the real models' traces (bench/traces), in sum beside every trace's row above
        gs, ts = sum(g[x]["peak_reserved"] for x in recorded), sum(t[x]["peak_reserved"] for x in recorded)
        w("| recorded models (bench/traces, %d traces) sum <= torch expandable's | %s against %s: %.3fx | %s |"
          % (len(recorded), peers.gib(gs), peers.gib(ts), gs / ts, "yes" if gs <= ts else "no, by %.3fx" % (gs / ts)))
    # Issue 28, point 1: every call that gives or takes device memory, as
    # the simulated device counts them (the driver-call table below).
    many = [x for x in traces if sum(g[x]["calls"].values()) > sum(t[x]["calls"].values())]
    gc, tc = (sum(sum(side[x]["calls"].values()) for x in traces) for side in (g, t))
    w("| driver calls <= torch expandable's on every trace | %d of %d traces (%d against %d in all)%s | %s |"
      % (len(traces) - len(many), len(traces), gc, tc,
         "; more on " + ", ".join("%s (%d against %d)" % (x, sum(g[x]["calls"].values()), sum(t[x]["calls"].values()))
                                  for x in many) if many else "", "yes" if not many else "no"))
    for x in traces:
        if "opt-finetune" in x:
            ug = g[x]["peak_allocated"] / g[x]["peak_reserved"]
            ut = t[x]["peak_allocated"] / t[x]["peak_reserved"]
            w("| opt-finetune utilization >= torch expandable's | %.1f%% against %.1f%% | %s |"
              % (100 * ug, 100 * ut, "yes" if ug >= ut - 1e-9 else "no, by %.1f points" % (100 * (ut - ug))))
    slow_med = [x for x in traces if g[x]["alloc_median_ns"] > t[x]["alloc_median_ns"]]
    slow_p99 = [x for x in traces if g[x]["alloc_p99_ns"] > 2 * t[x]["alloc_p99_ns"]]
    w("| allocation median <= torch expandable's (torch raw, Python floor included) | %d of %d traces%s | %s |"
      % (len(traces) - len(slow_med), len(traces),
         "; slower on " + ", ".join(slow_med) if slow_med else "", "yes" if not slow_med else "no"))
    w("| allocation p99 <= 2x torch expandable's | %d of %d traces%s | %s |"
      % (len(traces) - len(slow_p99), len(traces),
         "; over on " + ", ".join("%s (%s against %s)" % (x, peers.ns(g[x]["alloc_p99_ns"]), peers.ns(t[x]["alloc_p99_ns"]))
                                  for x in slow_p99) if slow_p99 else "", "yes" if not slow_p99 else "no"))
    for row in extra:
        w(row)
    w("")


def pressure_rows(ideals, found):
    g, t = found["gpuslack"], found["torch expandable_segments"]
    worse = [x for x in ideals if g[x] is None or (t[x] is not None and g[x] > t[x])]
    return ["| smallest device with no failed allocation <= torch expandable's, every trace | %d of %d traces%s | %s |"
            % (len(ideals) - len(worse), len(ideals), "; larger on " + ", ".join(worse) if worse else "",
               "yes" if not worse else "no")]


def loop_rows(cases):
    sys.path.insert(0, os.path.dirname(HERE))
    import alloc_loop
    rows = []
    for c in cases:
        over = [a for a in c["alloc"] if not alloc_loop.within_goal(a)]
        retries = sum(a["oom_retries"] for a in c["alloc"])
        figures = ", ".join("%.0f / %.0f MiB" % (a["peak_reserved"] / 2.0**20, a["peak_allocated"] / 2.0**20)
                            for a in c["alloc"])
        rows.append("| %s: mapped <= 1.25x peak live + one 16 MiB chunk, no out-of-memory retry | %s mapped / live, "
                    "%d retries | %s |" % (c["name"], figures, retries, "yes" if not over and not retries else "no"))
    return rows


def report(args):
    """Every goal of issue 14 in one run: the smallest devices, the
    allocation loops, then the peers, whose report opens with the goals."""
    import peers
    import pressure
    sys.path.insert(0, os.path.dirname(HERE))
    import alloc_loop
    args.gpuslack_only = False
    ideals, found, _, pressure_text = pressure.measure(args)
    cases = alloc_loop.measure(args.build)
    code, text = peers.report_text(args, pressure_rows(ideals, found) + loop_rows(cases))
    text += ("\n" + pressure_text + "\n**Allocation loops** (bench/alloc_loop.py), native beside gpuslack:\n\n" +
             alloc_loop.HEADER + "\n" + "\n".join(alloc_loop.row(c) for c in cases) + "\n")
    return code, text
