"""python -m gpuslack compare: the quickstart's before/after table, each
figure from the runs' JSON summaries, 80 columns, the findings printed from
the JSON when present; and scripts/demo-compare.sh end to end on the
simulated device (the device synchronizations checked against the
simulated driver's own count)."""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

from conftest import LIBRARY, ROOT, SHIM, TRAIN_LOOP, needs_demo, needs_library, run_in_child
from gpuslack import compare


def summary(lost_s=1.5, wall_s=3.0, frees=10, vmm_frees=0, idle_s=1.0, step_s=0.1, findings=None):
    doc = {
        "wall_s": wall_s, "lost_s": lost_s, "lost_share": lost_s / wall_s,
        "calls": [{"name": "cudaFree", "count": frees}, {"name": "cudaMalloc", "count": frees},
                  {"name": "cudaDeviceSynchronize", "count": 2}, {"name": "cudaStreamSynchronize", "count": 7}],
        "allocator": [{"device": 0, "frees": vmm_frees}] if vmm_frees else [],
        "gpu_timeline": {"status": "measured", "devices": [
            {"device": 0, "wall_s": wall_s, "idle_s": idle_s,
             "steps": {"from_marks": True, "count": 9, "wall_p50_s": step_s}}]},
    }
    if findings is not None:
        doc["findings"] = findings
    return doc


ALLOC_FINDING = {
    "rule": "allocator_sync", "title": "cudaFree synchronized the device in steady state, 30 times",
    "cost_s": 1.2, "cost_share": 0.4, "gpu_idle_s": 0.9,
    "evidence": [{"name": "cudaFree calls that synchronized", "value": "30"}],
    "where": [["main+0x99e (train_loop)", "__libc_start_main+0x85 (libc.so.6)"]],
    "fix": "GPUSLACK_CONF=allocator:vmm (gpuslack's allocator frees without a device synchronization), or "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for PyTorch without gpuslack.torch.use()",
}


def test_device_syncs_are_explicit_ones_and_frees_the_runtime_served():
    assert compare.device_syncs(summary(frees=10)) == 12  # 10 cudaFree + 2 cudaDeviceSynchronize
    assert compare.device_syncs(summary(frees=10, vmm_frees=10)) == 2  # the VMM allocator's frees do not sync
    doc = summary(frees=4)
    doc["pinned"] = {"frees": 3}
    doc["calls"].append({"name": "cudaFreeHost", "count": 5})
    assert compare.device_syncs(doc) == 2 + 4 + 5 - 3


def missing_figures_print_a_dash():
    doc = summary()
    del doc["gpu_timeline"]
    assert compare.gpu_idle_share(doc) is None and compare.median_step_s(doc) is None
    doc = summary()
    doc["gpu_timeline"]["devices"][0]["steps"]["from_marks"] = False  # intervals, not the program's steps
    assert compare.median_step_s(doc) is None
    text = compare.format_compare(summary(), doc)
    assert re.search(r"^median step +100\.0 ms +-$", text, re.M), text


def the_table_holds_each_summarys_figures_within_80_columns():
    before = summary(lost_s=1.5, wall_s=3.0, frees=10, idle_s=1.2, step_s=0.2)
    after = summary(lost_s=0.03, wall_s=1.5, frees=10, vmm_frees=10, idle_s=0.15, step_s=0.07)
    log = os.path.join(tempfile.mkdtemp(prefix="gpuslack-compare-"), "native.log")
    with open(log, "w") as f:
        f.write("train_loop: device synchronizations by cudaFree in all: 10\n"
                "train_loop: median step 199.00 ms over 10 steps (min 1.00, max 300.00)\n")
    text = compare.format_compare(before, after, compare.read_native_log(log), ("before: measured", "after: fixes on"))
    lines = text.splitlines()
    assert all(len(l) <= 80 for l in lines), text
    assert re.search(r"no gpuslack +before: measured +after: fixes on$", lines[0]), text
    assert re.search(r"^time lost \(share of wall\) +- +1\.50 s \(50\.0%\) +30\.0 ms \(2\.0%\)$", text, re.M), text
    assert re.search(r"^median step +199\.0 ms +200\.0 ms +70\.0 ms$", text, re.M), text
    assert re.search(r"^device synchronizations +10 +12 +2$", text, re.M), text
    assert re.search(r"^GPU idle \(share of wall\) +- +40\.0% +10\.0%$", text, re.M), text
    assert "median step, before against no gpuslack: +0.5% (what measuring costs" in text
    # Summaries from a gpuslack without findings say so, rather than nothing.
    assert "What gpuslack found (before: measured): this summary holds no findings" in text


def findings_print_from_the_json_wrapped():
    before = summary(findings=[ALLOC_FINDING])
    after = summary(findings=[])
    text = compare.format_compare(before, after)
    assert all(len(l) <= 80 for l in text.splitlines()), text
    i = text.index("What gpuslack found (before):")
    found = text[i:]
    assert "  1. cudaFree synchronized the device in steady state, 30 times\n" in found
    assert "     cost: 1.20 s (40.0% of wall), GPU idle 900.0 ms\n" in found and "evidence: cudaFree calls that synchronized 30" in found
    assert "where: main+0x99e (train_loop)" in found
    # The fix, whole, once its continuation lines are joined.
    fix = " ".join(l.strip() for l in found[found.index("fix: "):].splitlines()[:4])
    assert ALLOC_FINDING["fix"] in fix, fix
    assert "Left with its fixes on (after): none" in text
    after = summary(findings=[dict(ALLOC_FINDING, title="a smaller leak", cost_s=0.01, cost_share=0.001)])
    left = compare.format_compare(before, after).split("Left with its fixes on (after):")[1]
    assert "  1. a smaller leak\n     cost: 10.0 ms (0.1% of wall), GPU idle 900.0 ms\n" in left and "fix:" not in left


@needs_library
def test_cli_refuses_what_is_not_a_summary(tmp_path):
    # compare reads as report does (gpuslack.report.load): a real summary.
    bad = tmp_path / "x.json"
    bad.write_text("[1]")
    good = os.path.join(ROOT, "tests", "job", "fixtures", "demo-vmm.json")
    env = dict(os.environ, PYTHONPATH=SHIM)
    r = subprocess.run([sys.executable, "-m", "gpuslack", "compare", str(good), str(bad)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr == "gpuslack compare: %s is not a gpuslack summary: not a JSON object\n" % bad, \
        r.stderr
    r = subprocess.run([sys.executable, "-m", "gpuslack", "compare", str(good), str(good)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0 and "device synchronizations" in r.stdout, r.stderr


def seconds_in_child(values):
    """The library's text of each duration (gpuslack.labels.seconds), asked
    of a fresh Python: the library is never mapped into pytest's process."""
    code = "import sys; from gpuslack import labels; print('\\n'.join(labels.seconds(float(v)) for v in sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code] + [repr(v) for v in values], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=SHIM, GPUSLACK_LIBRARY=LIBRARY))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


@needs_library
@needs_demo
def test_the_quickstarts_last_screen_on_the_simulated_device(tmp_path):
    build = os.path.dirname(LIBRARY)
    assert os.path.dirname(TRAIN_LOOP) == build
    env = dict(os.environ, GPUSLACK_DEMO_OUT=str(tmp_path))
    for k in ("GPUSLACK_CONF", "GPUSLACK_OUTPUT", "LD_PRELOAD"):
        env.pop(k, None)
    r = subprocess.run([os.path.join(ROOT, "scripts", "demo-compare.sh"), build, "--steps", "6"], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    # 80 columns, but for a line that is one word: a path (here under a long tmp folder), never cut.
    assert all(len(l) <= 80 or len(l.split()) == 1 for l in r.stdout.splitlines()), r.stdout
    [before_path] = [os.path.join(tmp_path, "before", f) for f in os.listdir(tmp_path / "before") if f.endswith(".json")]
    [after_path] = [os.path.join(tmp_path, "after", f) for f in os.listdir(tmp_path / "after") if f.endswith(".json")]
    before, after = (json.load(open(p)) for p in (before_path, after_path))
    # The simulated driver's own count of cudaFree's device synchronizations.
    def driver_count(log):
        return int(re.search(r"device synchronizations by cudaFree in all: (\d+)", (tmp_path / log).read_text())[1])
    assert compare.device_syncs(before) == driver_count("before.log") == driver_count("native.log") > 0
    assert compare.device_syncs(after) == driver_count("after.log") == 0
    out = r.stdout
    row = lambda label: re.search(r"^%s +(.*)$" % re.escape(label), out, re.M)[1].split("  ")
    cells = lambda label: [c.strip() for c in row(label) if c.strip()]
    assert cells("device synchronizations") == [str(driver_count("native.log")), str(compare.device_syncs(before)), "0"]
    lost = seconds_in_child([d["lost_s"] for d in (before, after)])
    assert cells("time lost (share of wall)")[1:] == [
        "%s (%.1f%%)" % (s, d["lost_share"] * 100) for s, d in zip(lost, (before, after))]
    for d in (before, after):  # the timeline measured, and the demo marked its steps
        dev = d["gpu_timeline"]["devices"][0]
        assert d["gpu_timeline"]["status"] == "measured" and dev["steps"]["from_marks"] and dev["steps"]["count"] == 5
    assert cells("median step")[1:] == seconds_in_child([d["gpu_timeline"]["devices"][0]["steps"]["wall_p50_s"]
                                                         for d in (before, after)])
    assert cells("GPU idle (share of wall)")[1:] == [
        "%.1f%%" % (d["gpu_timeline"]["devices"][0]["idle_s"] / d["gpu_timeline"]["devices"][0]["wall_s"] * 100)
        for d in (before, after)]
    native_median = re.search(r"median step in steady state \(steps 1\.\.5\): ([0-9.]+) ms",
                              (tmp_path / "native.log").read_text())[1]
    assert cells("median step")[0] == "%.1f ms" % float(native_median)
    assert "What gpuslack found (before: measured)" in out and "Left with its fixes on (after: fixes on)" in out
    assert out.rstrip().endswith(after_path) or after_path in out


def a_findings_gpu_idle_is_shown_only_where_the_timeline_measured_it():
    line = lambda idle: compare.findings_lines(summary(findings=[dict(ALLOC_FINDING, gpu_idle_s=idle)]), "t")[2]
    assert line(None) == line(-1) == "     cost: 1.20 s (40.0% of wall)"  # null in the JSON, or -1: not measured
    assert line(0) == "     cost: 1.20 s (40.0% of wall), GPU idle 0"


# The screen renders its figures and findings through the library
# (gpuslack.labels), which is never mapped into pytest's own process: these
# cases run in a fresh Python each.
@needs_library
@pytest.mark.parametrize("case", ["missing_figures_print_a_dash", "the_table_holds_each_summarys_figures_within_80_columns",
                                  "findings_print_from_the_json_wrapped",
                                  "a_findings_gpu_idle_is_shown_only_where_the_timeline_measured_it"])
def test_rendered_through_the_library(case):
    run_in_child("test_compare", case)
