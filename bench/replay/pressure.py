"""The pressure table: for each trace, the smallest simulated device that
gpuslack's allocator, and PyTorch's (default and expandable_segments:True),
replay it on without a failed allocation. `peers.py --pressure` prints it
(scripts/bench-peers.sh --pressure); Python 3.9+, standard library only.

Search: bisection on the device's size, per trace, from the trace's ideal
peak (peak live requested bytes: no allocator fits in less) to 4x it, to a
resolution of 1/32 of the ideal or 2 MiB, whichever is larger; 4x is probed
first and a trace that fails there reads "> 4x". Probe sizes are whole
MiB. That is 1 + ceil(log2(3 * 32)) = 8 probes per trace and allocator, at
most. It assumes a trace that fits a device fits every larger one (not
promised by any allocator: the answer is the smallest size the bisection
found to fit, within one resolution step of the smallest that fits).

Every probe is a replay that stops at its first failed allocation:
- gpuslack: bench/trace_replay --stop-at-failure, one child per trace and
  size, with GPUSIM_DEVICE_MEMORY = the size (the simulated device's size is
  read once, at start) and the library's defaults;
- torch: the probes of one bisection round (one per trace still open) run
  in one child per configuration, on a device of the round's largest probe;
  each trace is capped at its own probe with
  torch.cuda.set_per_process_memory_fraction (torch's own cap, which its
  allocator checks where it would call cudaMalloc or cuMemCreate, and answers
  as it would a failed call: free its cache, retry, then raise). One child
  per probe would take 8 torch start-ups per trace (several seconds each on
  a small machine).

Rounds run in lockstep over the traces: bisect() takes a function that
answers a batch of probes, so the logic is tested apart from any replay
(tests/bench/pressure_test.py).
"""
import datetime
import os
import subprocess
import sys
import time

import peers

MiB = 1 << 20


def resolution(ideal):
    return max(ideal // 32, 2 * MiB)


def round_mib(n):
    return (n + MiB - 1) // MiB * MiB


def bisect(ideals, fits):
    """The smallest size found to fit, per trace (None: not even 4x ideal).

    ideals: {trace: ideal peak bytes}. fits(probes) answers a batch:
    probes is {trace: size}; it returns {trace: True if it replayed with no
    failed allocation}. Returns ({trace: size or None}, probes made)."""
    hi = {t: round_mib(4 * i) for t, i in ideals.items()}
    lo = {t: i for t, i in ideals.items()}  # not known to fit (below it nothing can)
    answer = fits(dict(hi))
    found = {t: (hi[t] if answer[t] else None) for t in ideals}
    probes = len(hi)
    open_ = [t for t in ideals if found[t] is not None]
    while open_:
        batch = {}
        for t in open_:
            mid = round_mib((lo[t] + hi[t]) // 2)
            if hi[t] - lo[t] <= resolution(ideals[t]) or not lo[t] < mid < hi[t]:
                continue
            batch[t] = mid
        if not batch:
            break
        answer = fits(batch)
        probes += len(batch)
        for t, size in batch.items():
            if answer[t]:
                hi[t] = found[t] = size
            else:
                lo[t] = size
        open_ = list(batch)
    return found, probes


def ideal_peak(path):
    _, events = peers.read_stream(path)
    live, peak, size = 0, 0, {}
    for is_alloc, i, n, _ in events:
        if is_alloc:
            size[i] = n
            live += n
            peak = max(peak, live)
        else:
            live -= size.pop(i, 0)
    return peak


def gpuslack_fits(build, stream_of, timeout):
    replay = os.path.join(build, "bench", "trace_replay")

    def fits(probes):
        out = {}
        for t, size in probes.items():
            try:
                r = subprocess.run([replay, "--tsv", "--stop-at-failure", stream_of[t]], capture_output=True,
                                   text=True, env=peers.sim_env(build, device_bytes=size), timeout=timeout)
            except subprocess.TimeoutExpired:
                sys.exit("pressure: trace_replay hung on %s with a %d-byte device (%d s)" % (t, size, timeout))
            if r.returncode != 0:
                sys.exit("pressure: trace_replay failed on %s (exit %d):\n%s" % (t, r.returncode, r.stderr[-4000:]))
            head, row = (l.split("\t") for l in r.stdout.splitlines()[:2])
            out[t] = dict(zip(head, row))["failed"] == "0"
        return out
    return fits


def torch_fits(build, py, conf, stream_of):
    def fits(probes):
        traces = list(probes)
        rows = peers.torch_child(build, py, conf,
                                 ["--worker", "pressure", "--caps", ",".join(str(probes[t]) for t in traces),
                                  *(stream_of[t] for t in traces)],
                                 device_bytes=max(probes.values()))
        failed = [r["failed"] for r in rows]
        if len(failed) != len(traces):
            sys.exit("pressure: torch (%s) answered %d of %d probes" % (conf or "default", len(failed), len(traces)))
        return {t: not f for t, f in zip(traces, failed)}
    return fits


def human(n):
    return peers.gib(n) if n >= 1 << 30 else "%.0f MiB" % (n / float(MiB))


def cell(size, ideal):
    if size is None:
        return "> 4x"
    return "%s (%.2fx)" % (human(size), size / ideal)


PEER = "torch expandable_segments"


def served_where_peer_serves(found, ideals, ours="gpuslack", peer=PEER):
    """Issue 28's goal: on every trace, ours fits a device no larger than
    the peer's smallest (None: the peer did not run). Returns the Markdown
    line, or None."""
    if ours not in found or peer not in found:
        return None
    worse = []
    for t in ideals:
        a, b = found[ours][t], found[peer][t]
        if b is not None and (a is None or a > b):
            worse.append("%s (%s against %s)" % (t, cell(a, ideals[t]), cell(b, ideals[t])))
    met = len(ideals) - len(worse)
    return ("**%s serves every trace on a device where %s does: %d of %d traces%s.**"
            % (ours, peer, met, len(ideals), "" if not worse else "; larger on " + ", ".join(worse)))


def measure(args):
    """(ideals, found, sides labels, the Markdown section) for the traces."""
    import tempfile
    tmp = tempfile.TemporaryDirectory()
    streams = peers.convert(args.traces, tmp.name)
    stream_of, ideals = {}, {}
    for path in streams:
        name, _ = peers.read_stream(path)
        stream_of[name], ideals[name] = path, ideal_peak(path)
    sides = [("gpuslack", gpuslack_fits(args.build, stream_of, timeout=600))]
    if not args.gpuslack_only:
        for label, conf in peers.TORCH_CONFS:
            sides.append((label, torch_fits(args.build, args.torch_python, conf, stream_of)))
    load_before = peers.load()
    t0 = time.monotonic()
    found, probes, took = {}, {}, {}
    for label, fits in sides:
        t1 = time.monotonic()
        found[label], probes[label] = bisect(ideals, fits)
        took[label] = time.monotonic() - t1
    total = time.monotonic() - t0

    o = []
    w = o.append
    w("date: %s  " % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    w("machine: %s  " % peers.machine())
    w("load average (1, 5, 15 min) before: %s; after: %s; the run took %.0f s (%s)  "
      % (load_before, peers.load(), total, ", ".join("%s %.0f s, %d probes" % (l, took[l], probes[l])
                                                      for l, _ in sides)))
    w("gpuslack: %s, %s (defaults)  " % (peers.rev(), os.path.basename(os.path.abspath(args.build))))
    w("command: `scripts/bench-peers.sh --pressure`; traces: %s"
      % ", ".join(os.path.relpath(os.path.abspath(t), peers.ROOT) for t in args.traces))
    w("")
    w("**Smallest simulated device with no failed allocation** (GPUSIM_DEVICE_MEMORY; bisection from the "
      "ideal to 4x it, to 1/32 of the ideal or 2 MiB; torch capped by its memory fraction on a device of the "
      "round's largest probe: bench/replay/pressure.py):")
    w("")
    w("| trace | ideal (peak live) | " + " | ".join(l for l, _ in sides) + " |")
    w("|---|---:|" + "---:|" * len(sides))
    sums = {l: 0 for l, _ in sides}
    for t in ideals:
        w("| %s | %s | %s |" % (t, human(ideals[t]), " | ".join(cell(found[l][t], ideals[t]) for l, _ in sides)))
        for l, _ in sides:
            sums[l] = None if sums[l] is None or found[l][t] is None else sums[l] + found[l][t]
    w("| **sum** | %s | %s |" % (human(sum(ideals.values())),
                                 " | ".join(cell(sums[l], sum(ideals.values())) for l, _ in sides)))
    line = served_where_peer_serves(found, ideals)
    if line:
        w("")
        w(line)
    return ideals, found, [l for l, _ in sides], "\n".join(o) + "\n"


def report(args):
    text = measure(args)[3]
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0
