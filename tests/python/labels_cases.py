"""The cases of test_labels.py, each run in a fresh Python (conftest.py's
run_in_child: the library is never mapped into pytest's process).

One definition of every name and figure a reader sees (issue 30): the
same inputs rendered through C++ (the text summary, gpuslack_render_summary)
and through Python (python -m gpuslack compare, the job report) read the
same. Note [One formatter per unit] in lib/report/units.h.

- The units against the one spec both languages read
  (tests/lib/report/units_cases.txt; units_test.cc reads it in C++).
- The Python tables' keys against the library's (the summary's file format)
  and the rule for what counts as lost.
- One rank's summary with findings: its text summary (C++) against compare
  and the job report of that one rank (Python): every category and idle
  cause name, every finding's title, evidence, call sites, fix and cost
  figures, and the allocator's bytes. And the comparison itself catches a
  Python copy of a formatter (the copy fmt.py held before), so it can fail.
"""
import json
import os
import re
import tempfile

from conftest import ROOT
from gpuslack import compare, labels, report
from gpuslack.job import aggregate, fmt, load, merge, synth, text

CASES = os.path.join(ROOT, "tests", "lib", "report", "units_cases.txt")
FIXTURE = os.path.join(ROOT, "tests", "job", "fixtures", "demo-vmm-timeline.json")
BY_UNIT = {"seconds": labels.seconds, "percent": labels.percent, "bytes": labels.nbytes, "gbps": labels.gbps,
           "size_bucket": labels.size_bucket, "link_gbps": labels.link_gbps, "link_gbits": labels.link_gbits,
           "waves": labels.waves}

# Figures of every size: a cost under a millisecond, one in ms, one in s.
FINDINGS = [
    {"rule": "allocator_sync", "title": "cudaFree synchronizes the device in steady state", "cost_s": 2.345,
     "cost_share": 0.3831, "gpu_idle_s": 0.0123,
     "evidence": [{"name": "cudaFree calls", "value": "96, 1.20 s blocked (longest 52.0 ms)"},
                  {"name": "in steady state (the run's middle 80%)", "value": "980.0 ms"}],
     "where": [["train_step(int, std::vector<float>&)+0x1a (/app/train)", "main+0x99e (train_loop)"],
               ["train.py:47 in step (python)"]],
     "fix": "GPUSLACK_CONF=allocator:vmm (gpuslack's allocator frees without a device synchronization), or "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for PyTorch without gpuslack.torch.use()"},
    {"rule": "pageable_copies", "title": "copies from pageable memory wait for the GPU", "cost_s": 0.0004,
     "cost_share": 0.0004, "gpu_idle_s": None,
     "evidence": [{"name": "pageable bytes", "value": "5.0 GiB"}], "where": [], "fix": "pin_memory=True"},
]


def cases():
    with open(CASES) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    assert len(rows) >= 30 and all(len(r) == 3 for r in rows)
    return rows


def every_unit_reads_as_the_spec_both_languages_read():
    for unit, value, want in cases():
        assert BY_UNIT[unit](float(value)) == want, (unit, value)
    assert set(BY_UNIT) == set(labels.table()["units"])
    assert labels.seconds(None) == labels.percent(None) == labels.nbytes(None) == "-"
    # The job report's formatters are these, not copies.
    assert (fmt.seconds, fmt.nbytes, fmt.share, fmt.gbps, fmt.size_bucket, fmt.link_gbps, fmt.link_gbits,
            fmt.waves) == (
        labels.seconds, labels.nbytes, labels.percent, labels.gbps, labels.size_bucket, labels.link_gbps,
        labels.link_gbits, labels.waves)
    assert (compare.seconds, compare.percent) == (labels.seconds, labels.percent)


def the_python_keys_are_the_librarys_and_lost_is_its_rule():
    t = labels.table()
    assert load.CATEGORIES == tuple(r["key"] for r in t["categories"])
    assert load.IDLE_CAUSES == tuple(r["key"] for r in t["idle_causes"])
    assert load.BUSY_KINDS == tuple(r["key"] for r in t["busy_kinds"])
    assert aggregate.LOST == labels.lost_keys() == ("allocation", "copy", "collective")
    # The calls that wait for the whole device: the library's, and compare
    # counts by them (no list of its own).
    assert labels.device_syncs() == (("cudaDeviceSynchronize", "cuCtxSynchronize", "cuCtxSynchronize_v2"),
                                     ("cudaFree", "cudaFreeHost", "cuMemFree_v2", "cuMemFreeHost"))
    assert not hasattr(compare, "EXPLICIT_SYNCS") and not hasattr(compare, "SYNCING_FREES")
    doc = {"calls": [{"name": n, "count": 1} for n in sum(labels.device_syncs(), ())] +
           [{"name": "cudaStreamSynchronize", "count": 5}], "allocator": [{"frees": 2}]}
    assert compare.device_syncs(doc) == 3 + 4 - 2   # not the stream sync
    assert [n for _, n in text.category_rows()] == [
        "lost (allocation + copies + collectives)", "allocation", "copies", "collectives",
        "waiting for the GPU (not lost)"]


def _summary():
    with open(FIXTURE) as f:
        doc = json.load(f)
    doc["findings"] = FINDINGS
    doc["allocator"] = doc["allocator"][:1]   # one device: the job report sums a rank's
    # Every idle cause large enough for the text summary's line to name it.
    for d in doc["gpu_timeline"]["devices"]:
        for cause in ("host_bound", "launch_bound", "collectives", "other"):
            d["idle"]["sync"] -= 0.05 - d["idle"][cause]
            d["idle"][cause] = 0.05
    # One kernel's launch shapes, its waves a range (device 0's first kernel).
    doc["gpu_timeline"]["devices"][0]["top_kernels"][0]["launch"] = {
        "shapes": 2, "blocks_min": 66, "blocks_max": 163, "shaped_s": 3.8, "sm_count": 132,
        "blocks_per_sm_min": 1, "blocks_per_sm_max": 1, "waves_min": 0.5, "waves_max": 1.234,
        "wave_efficiency": 0.61, "wave_efficiency_min": 0.5, "below_sms_s": 1.0, "underfilled_s": 1.0,
        "underfilled_idle_s": 0.0, "top_shapes": []}
    # A topology whose link capacity needs the fourth digit, and no link
    # between nodes (unknown).
    doc["topology"] = synth._topology(0, 1, 1)
    doc["topology"]["links"].update(intra_gbps=451.27, inter_gbps=0.0, inter_from="unknown: no NIC read")
    path = os.path.join(tempfile.mkdtemp(prefix="gpuslack-labels-"), "rank0.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path, doc


def _words(lines):
    return " ".join(" ".join(lines).split())


def _blocks(lines, indent, more):
    """The numbered findings at the top of `lines`, one list of lines each:
    a line "<indent>N. ..." opens one, a line indented by `more` continues it."""
    out = []
    for l in lines:
        if re.match(r"%s\d+\. " % indent, l):
            out.append([l])
        elif l.startswith(more) and out:
            out[-1].append(l)
        else:
            break
    return out


def _c_findings(c_lines):
    """The text summary's findings block: one list of lines per finding."""
    return _blocks(c_lines[c_lines.index("findings, most costly first:") + 1:], "", "   ")


SECONDS = r"(\d\S* [mun]?s|0)"


def _table_names(lines, heading):
    """The first column of the job report's table under `heading`."""
    start = next(i for i, l in enumerate(lines) if l.startswith("  " + heading))
    names = []
    for l in lines[start + 1:]:
        if not l.startswith("  "):
            break
        names.append(re.split(r"  +", l.strip())[0])
    assert names, heading
    return names


def _waves(lines):
    """The waves column of the first kernel table's first row."""
    head = next((i for i, l in enumerate(lines) if re.match(r"  kernel .* waves  wave eff\.$", l)), None)
    return None if head is None else re.split(r"  +", lines[head + 1].strip())[-2]


def differences(c_text, job_text, compare_lines):
    """Where the Python renderings of the one rank read otherwise than its
    text summary: a list of (what, C++, Python)."""
    diffs = []
    c_lines = [l[len("gpuslack: "):] for l in c_text.splitlines()]
    c_flat = _words(c_lines)
    j_lines = [l[len("gpuslack job: "):] for l in job_text.splitlines()]
    # Category and idle cause names: the job report's tables against the
    # text summary's headline and GPU lines.
    for name in _table_names(j_lines, "host blocked in CUDA calls")[1:]:
        if not re.search(r"[:,;] %s \d" % re.escape(name.replace(" (not lost)", "")), c_flat):
            diffs.append(("category", "-", name))
    for name in _table_names(j_lines, "GPU idle ")[1:]:
        if not re.search(r"[:,] %s \d" % re.escape(name), c_flat):
            diffs.append(("idle cause", "-", name))
    # A category figure below 10 ms: the headline writes it in the unit.
    m = re.search(r"collectives %s;" % SECONDS, c_flat)
    row = next(l for l in j_lines if l.strip().startswith("collectives "))
    if not m or row.split()[1:3] != m.group(1).split():
        diffs.append(("collectives seconds", m and m.group(1), row))
    # Findings: title, figures, and evidence, where and fix word for word.
    c_found = _c_findings(c_lines)
    j_start = next(i for i, l in enumerate(j_lines) if l.startswith("findings ("))
    j_body = j_lines[j_start + 1:]
    while j_body and not re.match(r"  \d+\. ", j_body[0]):  # the idle they explain (job/text.py)
        j_body = j_body[1:]
    j_blocks = _blocks(j_body, "  ", "     ")
    if len(c_found) != len(j_blocks):
        diffs.append(("findings", len(c_found), len(j_blocks)))
    for c, j in zip(c_found, j_blocks):
        c_title = _words(c[:1]).split(" ", 1)[1]
        j_title = re.sub(r" \[\w+\]$", "", _words(j[:1]).split(" ", 1)[1])
        c_cost = re.search(r"cost: %s \((\S+) of wall\)(?:, GPU idle %s)?" % (SECONDS, SECONDS), _words(c)).groups()
        j_cost = re.search(r"cost %s summed, (\S+) of wall on average, (\S+) on rank 0(?:; GPU idle %s)?" % (
            SECONDS, SECONDS), _words(j)).groups()
        body_c = _words(c)[_words(c).find("evidence:"):] if "evidence:" in _words(c) else ""
        body_j = _words(j)[_words(j).find("evidence:"):] if "evidence:" in _words(j) else ""
        for what, a, b in (("title", c_title, j_title), ("cost", c_cost[0], j_cost[0]),
                           ("share", c_cost[1], j_cost[1]), ("share (max)", c_cost[1], j_cost[2]),
                           ("GPU idle", c_cost[2], j_cost[3]), ("evidence, where, fix", body_c, body_j)):
            if a != b:
                diffs.append((what, a, b))
    # compare prints the same findings (indented, in 80 columns).
    if _words(compare_lines[1:]) != _words(sum(c_found, [])):
        diffs.append(("compare's findings", _words(sum(c_found, [])), _words(compare_lines[1:])))
    # A link's capacity: the topology lines.
    links = r"within the node (.*?), between nodes (.*?) per rank"
    m, j = re.search(links, c_flat), re.search(links, _words(j_lines))
    if not m or not j or m.groups() != j.groups():
        diffs.append(("link capacity", m and m.groups(), j and j.groups()))
    # Waves: the kernel table's column (the first table in each).
    c_waves, j_waves = _waves(c_lines), _waves(j_lines)
    if not c_waves or c_waves != j_waves:
        diffs.append(("waves", c_waves, j_waves))
    # Bytes: the allocator's peaks.
    m = re.search(r"peak (\S+ \S+) allocated / (\S+ \S+) reserved", c_flat)
    j = re.search(r"peak reserved p50 (\S+ \S+),.*peak allocated p50 (\S+ \S+);", " ".join(j_lines))
    if not m or not j or (m.group(1), m.group(2)) != (j.group(2), j.group(1)):
        diffs.append(("allocator bytes", m and m.groups(), j and j.groups()))
    return diffs


def _render_all(path, doc):
    c_text = report.format_text(path)
    rep, skipped = merge.report([path])
    assert rep and not skipped
    return c_text, text.render(rep), compare.findings_lines(doc, "found")


def one_ranks_summary_reads_the_same_in_its_text_compare_and_the_job_report():
    path, doc = _summary()
    c_text, job_text, compare_lines = _render_all(path, doc)
    assert "400.0 us" in c_text and "GPU idle 12.3 ms" in c_text, c_text   # the inputs reach the figures
    assert "launch-bound" in job_text and "other calls" in job_text, job_text
    assert "within the node 451.3 GB/s (NVLink), between nodes unknown" in c_text, c_text
    assert _waves([l[len("gpuslack: "):] for l in c_text.splitlines()]) == "0.50-1.23", c_text
    assert differences(c_text, job_text, compare_lines) == [], job_text


def _old_seconds(s):
    """job/fmt.py's seconds before issue 30: one of the two behaviours."""
    if s is None:
        return "-"
    a = abs(s)
    if a == 0:
        return "0"
    if a < 1e-3:
        return "%.0f us" % (s * 1e6)
    if a < 1:
        return "%.1f ms" % (s * 1e3)
    return "%.2f s" % s if a < 600 else "%.0f s" % s


def the_comparison_catches_a_python_copy_of_a_formatter():
    path, doc = _summary()
    fmt.seconds = _old_seconds
    c_text, job_text, compare_lines = _render_all(path, doc)
    assert ("cost", "400.0 us", "400 us") in differences(c_text, job_text, compare_lines)
    # A copy of the link capacity's formatter with its own precision.
    fmt.seconds = labels.seconds
    fmt.link_gbps = lambda v: "%.3g GB/s" % v if v > 0 else "unknown"
    c_text, job_text, compare_lines = _render_all(path, doc)
    assert ("link capacity", ("451.3 GB/s (NVLink)", "unknown"), ("451 GB/s (NVLink)", "unknown")) in differences(
        c_text, job_text, compare_lines)
    fmt.link_gbps = labels.link_gbps
    # And of the waves.
    fmt.waves = lambda v: "%.1f" % v
    c_text, job_text, compare_lines = _render_all(path, doc)
    assert ("waves", "0.50-1.23", "0.5-1.2") in differences(c_text, job_text, compare_lines)
    fmt.waves = labels.waves
    # And a Python copy of a name.
    fmt.seconds = labels.seconds
    text.idle_rows = lambda: [(k, k.replace("_", " ")) for k in load.IDLE_CAUSES]
    c_text, job_text, compare_lines = _render_all(path, doc)
    assert ("idle cause", "-", "host bound") in differences(c_text, job_text, compare_lines)


def findings_the_library_refuses_raise_one_line():
    for bad, line in (([{"rule": "x", "title": "t", "cost_s": "soon"}],
                       "findings: findings[0].cost_s: expected a finite number"),
                      ([{"rule": "x", "title": "t", "cost_s": float("nan")}],    # json.dumps writes NaN
                       "findings are not a JSON document: ")):
        try:
            labels.render_findings(bad)
        except labels.RenderError as e:
            assert str(e).startswith(line) and "\n" not in str(e), str(e)
        else:
            raise AssertionError("rendered %r" % bad)
