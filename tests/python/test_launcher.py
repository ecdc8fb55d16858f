"""python -m gpuslack run / report: the environment the command gets, its
exit status passed through, where the summary is said to be, and report:
the text the process itself wrote, byte for byte, rendered from its file."""
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import HERE, LIBRARY, SHIM, TRAIN_LOOP, needs_demo, needs_library, sim_env
from gpuslack import launcher


def gpuslack_cli(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "gpuslack", *args], env=env or sim_env(conf=None), cwd=HERE,
                          capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


# --- the command's environment ---------------------------------------------

def test_conf_is_split_as_the_library_splits_it():
    assert launcher.parse_conf(" a:1, b=2 ,,c:x:y,bad ") == [("a", "1"), ("b", "2"), ("c", "x:y"), ("bad", None)]
    assert launcher.parse_conf(None) == []
    assert launcher.format_conf([("a", "1"), ("bad", None)]) == "a:1,bad"


def test_preload_goes_first_and_the_output_folder_is_absolute(tmp_path):
    env, folder = launcher.child_environment({"LD_PRELOAD": "/x/libother.so:/lib/gs.so", "PATH": "/bin"},
                                             "/lib/gs.so", cwd=str(tmp_path))
    assert env["LD_PRELOAD"] == "/lib/gs.so:/x/libother.so"
    assert folder == str(tmp_path / "gpuslack-out") == env["GPUSLACK_OUTPUT"]
    assert "GPUSLACK_CONF" not in env and env["PATH"] == "/bin"
    env, _ = launcher.child_environment({}, "/lib/gs.so")
    assert env["LD_PRELOAD"] == "/lib/gs.so"


def test_conf_items_follow_the_inherited_ones_and_output_dir_becomes_gpuslack_output(tmp_path):
    base = {"GPUSLACK_CONF": "allocator:vmm,output_dir:inherited", "GPUSLACK_OUTPUT": "from-env"}
    env, folder = launcher.child_environment(base, "/l.so", conf="top_call_sites:9,allocator:native",
                                             cwd=str(tmp_path))
    assert env["GPUSLACK_CONF"] == "allocator:vmm,top_call_sites:9,allocator:native"  # the last wins
    assert folder == str(tmp_path / "from-env")
    _, folder = launcher.child_environment(base, "/l.so", conf="output_dir:mine", cwd=str(tmp_path))
    assert folder == str(tmp_path / "mine")
    _, folder = launcher.child_environment(base, "/l.so", out="/abs/out", conf="output_dir:mine")
    assert folder == "/abs/out"
    _, folder = launcher.child_environment({"GPUSLACK_CONF": "output_dir:inherited"}, "/l.so", cwd=str(tmp_path))
    assert folder == str(tmp_path / "inherited")


def test_exit_status_is_a_shells():
    assert [launcher.exit_status(c) for c in (0, 3, -signal.SIGTERM, -signal.SIGKILL)] == [0, 3, 143, 137]


def test_summaries_are_found_by_the_commands_pid(tmp_path):
    for name in ("gpuslack-h-1-2-41.json", "gpuslack-h-41-rank3.json", "gpuslack-h-410.json", "gpuslack-h-41.txt"):
        (tmp_path / name).write_text("{}")
    mine, others = launcher.find_summaries(str(tmp_path), 41, since=0)
    assert [os.path.basename(p) for p in mine] == ["gpuslack-h-1-2-41.json", "gpuslack-h-41-rank3.json"]
    assert [os.path.basename(p) for p in others] == ["gpuslack-h-410.json"]
    assert launcher.find_summaries(str(tmp_path), 41, since=4e9)[1] == []


def test_a_jobs_summary_is_found_by_the_pid_it_holds(tmp_path):
    (tmp_path / "gpuslack-777-rank3.json").write_text('{"pid": 41}')
    (tmp_path / "gpuslack-777-rank4.json").write_text('{"pid": 42}')
    (tmp_path / "gpuslack-777-rank5.json").write_text('not json')
    mine, others = launcher.find_summaries(str(tmp_path), 41, since=0)
    assert [os.path.basename(p) for p in mine] == ["gpuslack-777-rank3.json"]
    assert [os.path.basename(p) for p in others] == ["gpuslack-777-rank4.json", "gpuslack-777-rank5.json"]


# --- run ---------------------------------------------------------------------

@needs_library
def test_exit_code_passes_through_and_no_cuda_means_no_summary(tmp_path):
    r = gpuslack_cli("run", "--out", str(tmp_path), "--", "sh", "-c", "exit 7")
    assert r.returncode == 7, r.stderr
    assert r.stderr.strip() == "gpuslack: no summary in %s: the command made no CUDA call, or json_summary is off" \
        % tmp_path


@needs_library
def test_the_command_sees_the_preload_and_the_configuration(tmp_path):
    r = gpuslack_cli("run", "--out", str(tmp_path), "--conf", "top_call_sites:2", "sh", "-c",
                     'echo "$LD_PRELOAD|$GPUSLACK_CONF|$GPUSLACK_OUTPUT"')
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "%s|top_call_sites:2|%s" % (LIBRARY, tmp_path)


@needs_library
def test_a_missing_command_is_127():
    r = gpuslack_cli("run", "--", "/nonexistent/program")
    assert r.returncode == 127
    assert "command not found" in r.stderr


@needs_library
def test_no_command_is_a_usage_error():
    r = gpuslack_cli("run", "--out", "x")
    assert r.returncode == 2 and "no command" in r.stderr


CUDA_THEN = ("import os, signal, sys, time, sim\n"
             "s = sim.Sim(); s.free(s.malloc(1 << 20))\n"
             "print('ready', flush=True)\n")


@needs_library
def test_a_command_killed_by_a_signal_exits_128_plus_n_with_its_summary(tmp_path):
    r = gpuslack_cli("run", "--out", str(tmp_path), "--conf", "text_summary:off", "--", sys.executable, "-c",
                     CUDA_THEN + "os.kill(os.getpid(), signal.SIGTERM); time.sleep(30)")
    assert r.returncode == 128 + signal.SIGTERM, r.stderr
    (summary,) = tmp_path.glob("gpuslack-*.json")
    assert "gpuslack: summary in %s (python -m gpuslack report %s)" % (summary, summary) in r.stderr
    assert json.loads(summary.read_text())["reason"] == "signal SIGTERM"


@needs_library
def test_sigterm_to_the_launcher_reaches_the_command(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "gpuslack", "run", "--out", str(tmp_path), "--conf",
                          "text_summary:off", "--", sys.executable, "-c", CUDA_THEN + "time.sleep(60)"],
                         env=sim_env(conf=None), cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 128 + signal.SIGTERM, err
    assert len(list(tmp_path.glob("gpuslack-*.json"))) == 1, err


# --- the demo, and report ------------------------------------------------------
# report renders with the library's own code (gpuslack_render_summary), from
# the JSON file; the process rendered its text from the same figures (Note
# [Text from the JSON], lib/report/output.cc): the two are the same bytes.

@needs_library
@needs_demo
def test_run_the_demo_then_report_prints_exactly_what_the_process_wrote(tmp_path):
    r = gpuslack_cli("run", "--out", str(tmp_path), "--conf", "text_summary:file,allocator:vmm", "--",
                     TRAIN_LOOP, "--steps", "4")
    assert r.returncode == 0, r.stderr
    assert "median step" in r.stdout
    (summary,) = tmp_path.glob("gpuslack-*.json")
    assert r.stderr.splitlines()[-1] == "gpuslack: summary in %s (python -m gpuslack report %s)" % (summary, summary)
    doc = json.loads(summary.read_text())
    assert summary.name.endswith("-%d.json" % doc["pid"])
    library_text = summary.with_suffix(".txt").read_text()
    rep = gpuslack_cli("report", str(summary))
    assert rep.returncode == 0 and rep.stderr == "", rep.stderr
    assert rep.stdout.startswith("gpuslack: ") and " lost (pid %d): allocation " % doc["pid"] in rep.stdout
    assert "vmm allocator, device 0: peak " in rep.stdout and "top call sites, allocation:" in rep.stdout
    assert "collectives: NCCL " in rep.stdout
    assert rep.stdout == library_text


@needs_library
def test_report_prints_exactly_what_the_process_printed_on_stderr(tmp_path):
    code = "import sim\ns = sim.Sim()\nfor _ in range(3): s.free(s.malloc(1 << 20))\n"
    r = gpuslack_cli("run", "--out", str(tmp_path), "--conf", "text_summary:stderr", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    (summary,) = tmp_path.glob("gpuslack-*.json")
    printed = "".join(l for l in r.stderr.splitlines(True) if l.startswith("gpuslack: ") and " summary in " not in l)
    rep = gpuslack_cli("report", str(summary))
    assert rep.returncode == 0, rep.stderr
    assert " lost (pid " in rep.stdout and rep.stdout == printed


@needs_library
def test_report_counts_exited_threads_as_the_library_does(tmp_path):
    # Twelve threads make a call and exit: the text says how many exited
    # (8 listed in the JSON, 4 summed in other_threads), both ways alike.
    code = ("import threading, sim\n"
            "s = sim.Sim(); s.free(s.malloc(1 << 20))\n"
            "ts = [threading.Thread(target=lambda: s.free(s.malloc(1 << 20))) for _ in range(12)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            # join() returns when Python is done with a thread, before its
            # pthread TLS destructors run; a thread's /proc task is gone only
            # after they have (and the library has counted it as exited).
            "import os, time\n"
            "while any(os.path.exists(f'/proc/self/task/{t.native_id}') for t in ts): time.sleep(0.001)\n")
    r = gpuslack_cli("run", "--out", str(tmp_path), "--conf", "text_summary:file", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    (summary,) = tmp_path.glob("gpuslack-*.json")
    doc = json.loads(summary.read_text())
    assert doc["other_threads"]["threads"] == 4 and sum(t["exited"] for t in doc["threads"]) == 8, doc["threads"]
    library_text = summary.with_suffix(".txt").read_text()
    assert ", 13 threads (12 exited), " in library_text, library_text
    rep = gpuslack_cli("report", str(summary))
    assert rep.returncode == 0, rep.stderr
    assert rep.stdout == library_text


@pytest.mark.parametrize("content,why", [
    (None, "cannot read"),
    ("{\"schema_version\": 1,", "is not a JSON document"),
    ("[1, 2]", "is not a gpuslack summary: not a JSON object"),
    ("{\"schema_version\": 1}", "is not a gpuslack summary: no pid, wall_s"),
    ("\xff\xfe", "is not a JSON document"),
])
def test_report_of_a_bad_file_is_one_line_and_status_2(tmp_path, content, why):
    path = tmp_path / "gpuslack-x.json"
    if content is not None:
        path.write_bytes(content.encode("latin-1"))
    r = gpuslack_cli("report", str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("gpuslack report: ") and why in r.stderr, r.stderr


def test_report_of_another_schema_version_is_refused(tmp_path):
    path = tmp_path / "s.json"
    doc = {k: [] for k in ("threads", "calls", "copies", "call_sites")}
    doc.update(schema_version=2, pid=1, wall_s=1, lost_share=0, categories={})
    path.write_text(json.dumps(doc))
    r = gpuslack_cli("report", str(path))
    assert r.returncode == 2 and "schema_version 2; this gpuslack reads version 1" in r.stderr


def test_report_goes_on_past_a_bad_file_and_says_which(tmp_path):
    good = tmp_path / "good.json"
    doc = {k: [] for k in ("threads", "calls", "copies", "call_sites")}
    doc.update(schema_version=1, pid=7, wall_s=2, lost_share=0.5, categories={"allocation": {"seconds": 1, "share": 0.5}})
    good.write_text(json.dumps(doc))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(doc, pid="seven")))
    r = gpuslack_cli("report", str(bad), str(good))
    assert r.returncode == 2
    assert r.stderr == "gpuslack report: %s is not a valid gpuslack summary: pid: expected an integer in " \
                       "[-2^63, 2^63)\n" % bad, r.stderr
    assert r.stdout.startswith("gpuslack: 50.0% of 2 s lost (pid 7): allocation 1 s (50.0%), "), r.stdout


def test_report_without_the_library_says_what_to_do(tmp_path):
    # The package alone, away from any checkout: no library to render with.
    shutil.copytree(os.path.join(SHIM, "gpuslack"), str(tmp_path / "pkg" / "gpuslack"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSLACK_LIBRARY", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(tmp_path / "pkg")
    r = subprocess.run([sys.executable, "-m", "gpuslack", "report", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("gpuslack report: libgpuslack.so not found; looked at ") and \
        "set GPUSLACK_LIBRARY=/path/to/libgpuslack.so" in r.stderr, r.stderr
