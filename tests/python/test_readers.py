"""One way to read a summary file: report, compare and merge refuse what the
library's reader refuses, with its one line, and merge goes on with the rest.

Each hostile file below is read by the three commands. What the library's
reader (lib/report/summary_reader.h, through gpuslack_render_summary)
refuses must be refused by all three with the same line, never a Python
traceback; what it accepts, all three accept. A job's thousands of files can
hold one corrupt or hostile file: merge skips it and reports the others.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import HERE, ROOT, needs_library, sim_env

FIXTURE = os.path.join(ROOT, "tests", "job", "fixtures", "demo-vmm.json")


def gpuslack_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpuslack", *args], env=sim_env(conf=None), cwd=HERE,
                          capture_output=True, text=True, timeout=300)


def good_text():
    with open(FIXTURE) as f:
        return f.read()


def with_member(text, member):
    """The summary `text` with `member` ("name": value, as JSON text) added
    first, before every other member."""
    assert text.lstrip().startswith("{")
    return "{" + member + "," + text.lstrip()[1:]


def deep(path):
    path.write_text("[" * 100000 + "]" * 100000)


def nan(path):
    path.write_text(with_member(good_text(), '"x": NaN'))


def huge_number_in_a_field(path):
    doc = json.loads(good_text())
    path.write_text(json.dumps(doc).replace('"pid": %d' % doc["pid"], '"pid": ' + "9" * 5000, 1))


def one_gib_and_a_byte(path):
    # Sparse: no disk used. The reader must refuse it by its size, unread.
    with open(path, "wb") as f:
        f.write(good_text().encode()[:100])
        f.truncate((1 << 30) + 1)


REFUSED = {
    "nested_100000_arrays_deep": (deep, "nested deeper than 64 levels"),
    "nan": (nan, "is not a JSON document"),
    "huge_number_in_a_field": (huge_number_in_a_field, "pid: expected an integer"),
    "one_gib_and_a_byte": (one_gib_and_a_byte, "larger than"),
}


def huge_number_elsewhere(path):
    path.write_text(with_member(good_text(), '"x": ' + "7" * 5000 + ', "y": 1e999'))


def huge_string(path):
    path.write_text(with_member(good_text(), '"x": "' + "s" * (32 << 20) + '"'))


def duplicate_keys(path):
    # Both readers keep the last of a duplicated member.
    path.write_text(with_member(good_text(), '"wall_s": -1'))


ACCEPTED = {
    "huge_number_in_a_member_nobody_reads": huge_number_elsewhere,
    "huge_string": huge_string,
    "duplicate_keys": duplicate_keys,
}


def one_line(stderr, prefix):
    lines = stderr.splitlines()
    assert len(lines) >= 1 and "Traceback" not in stderr, stderr
    hits = [l for l in lines if l.startswith(prefix)]
    assert len(hits) == 1, stderr
    return hits[0][len(prefix):]


@needs_library
@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_every_reader_refuses_what_the_library_refuses_with_its_line(tmp_path, kind):
    make, why = REFUSED[kind]
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    good = ranks / "gpuslack-good.json"
    shutil.copyfile(FIXTURE, good)
    bad = ranks / "gpuslack-bad.json"
    make(bad)

    report = gpuslack_cli("report", str(bad))
    assert report.returncode == 2 and report.stdout == "", report.stderr
    line = one_line(report.stderr, "gpuslack report: ")
    assert line.startswith(str(bad)) and why in line, line

    compare = gpuslack_cli("compare", str(good), str(bad))
    assert compare.returncode == 2, compare.stderr
    assert one_line(compare.stderr, "gpuslack compare: ") == line

    out = tmp_path / "report"
    merge = gpuslack_cli("merge", str(ranks), "--out", str(out))
    assert merge.returncode == 1, merge.stderr          # written, one file skipped
    assert one_line(merge.stderr, "skipped: ") == line
    with open(out / "job-report.json") as f:
        rep = json.load(f)
    assert rep["files"]["read"] == 1 and [s["reason"] for s in rep["files"]["skipped"]] == [line]
    assert "skipped: " + line in (out / "job-report.txt").read_text()


@needs_library
@pytest.mark.parametrize("kind", sorted(ACCEPTED))
def test_every_reader_accepts_what_the_library_accepts(tmp_path, kind):
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    odd = ranks / "gpuslack-odd.json"
    ACCEPTED[kind](odd)

    report = gpuslack_cli("report", str(odd))
    assert report.returncode == 0 and report.stdout.startswith("gpuslack: "), report.stderr
    compare = gpuslack_cli("compare", FIXTURE, str(odd))
    assert compare.returncode == 0 and "Traceback" not in compare.stderr, compare.stderr
    merge = gpuslack_cli("merge", str(ranks), "--out", str(tmp_path / "report"))
    assert merge.returncode == 0 and "skipped" not in merge.stderr, merge.stderr


@needs_library
def test_a_duplicated_member_reads_as_its_last_value_everywhere(tmp_path):
    path = tmp_path / "gpuslack-dup.json"
    doc = json.loads(good_text())
    path.write_text(with_member(good_text(), '"wall_s": -1'))   # the fixture's own wall_s comes later
    report = gpuslack_cli("report", str(path))
    assert report.returncode == 0, report.stderr
    sys.path.insert(0, os.path.join(ROOT, "python_shim"))
    from gpuslack import report as report_module
    os.environ.setdefault("GPUSLACK_LIBRARY", sim_env()["GPUSLACK_LIBRARY"])
    assert report_module.load(str(path))["wall_s"] == doc["wall_s"]
    assert report.stdout == gpuslack_cli("report", FIXTURE).stdout


@needs_library
def test_merge_without_a_library_says_what_to_do_once(tmp_path):
    # The package alone, away from any checkout: no library to read with.
    shutil.copytree(os.path.join(ROOT, "python_shim", "gpuslack"), str(tmp_path / "pkg" / "gpuslack"),
                    ignore=shutil.ignore_patterns("*.so"))
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copyfile(FIXTURE, ranks / "gpuslack-good.json")
    env = dict(sim_env(conf=None), PYTHONPATH=str(tmp_path / "pkg"))
    env.pop("GPUSLACK_LIBRARY")
    r = subprocess.run([sys.executable, "-m", "gpuslack", "merge", str(ranks)], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("gpuslack merge: libgpuslack.so not found") and len(r.stderr.splitlines()) == 1, \
        r.stderr
