"""``python -m gpuslack run``: a command under gpuslack, and where its summary went.

    python -m gpuslack run [--out DIR] [--conf key:value,...] -- COMMAND ...

What it does:
- ``LD_PRELOAD``: the library (gpuslack.library_path()) goes first, before
  whatever LD_PRELOAD already held.
- ``GPUSLACK_CONF``: the inherited one, then ``--conf`` (a later key wins,
  as in the library's parser), without ``output_dir``, which becomes
- ``GPUSLACK_OUTPUT``: the summary folder as an absolute path (``--out``, else
  output_dir of ``--conf``, else the inherited GPUSLACK_OUTPUT, else
  output_dir of the inherited GPUSLACK_CONF, else ./gpuslack-out), so that
  the launcher knows where to look whatever folder the command moves to.
- Runs the command and exits with its status; a command killed by signal N
  gives 128+N, as a shell does. SIGTERM, SIGHUP and SIGQUIT sent to the
  launcher are passed to the command (gpuslack writes its summary on
  SIGTERM). SIGINT too, unless the launcher runs in a terminal's foreground,
  where Ctrl-C already reaches the command: then the launcher ignores it.
- Then one line on stderr says where the summary is: the
  gpuslack-<host>-<pid>[-rank<R>].json (or gpuslack-<job>-rank<R>...json,
  whose "pid" is the command's) the command's process wrote, or,
  when the command ran its CUDA work in child processes (a launcher, a
  shell script), the summaries written in the folder since it started.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

from . import _lib

DEFAULT_OUTPUT = "gpuslack-out"
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def parse_conf(text):
    """GPUSLACK_CONF as (key, value) pairs, in order, as the library splits
    it (',' between items, the key ending at the first ':' or '='). Items
    without a separator are kept as (item, None) for the library to report."""
    pairs = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        cut = min((i for i in (item.find(":"), item.find("=")) if i >= 0), default=-1)
        if cut < 0:
            pairs.append((item, None))
        else:
            pairs.append((item[:cut].strip(), item[cut + 1:].strip()))
    return pairs


def format_conf(pairs):
    return ",".join(k if v is None else "%s:%s" % (k, v) for k, v in pairs)


def _last(pairs, key):
    values = [v for k, v in pairs if k == key and v is not None]
    return values[-1] if values else None


def child_environment(environ, library, out=None, conf=None, cwd=None):
    """The command's environment, and the absolute summary folder."""
    env = dict(environ)
    inherited = parse_conf(env.get("GPUSLACK_CONF"))
    extra = parse_conf(conf)
    folder = (out or _last(extra, "output_dir") or env.get("GPUSLACK_OUTPUT") or _last(inherited, "output_dir")
              or DEFAULT_OUTPUT)
    folder = os.path.abspath(os.path.join(cwd or os.getcwd(), folder))
    merged = [(k, v) for k, v in inherited + extra if k != "output_dir"]
    if merged:
        env["GPUSLACK_CONF"] = format_conf(merged)
    else:
        env.pop("GPUSLACK_CONF", None)
    env["GPUSLACK_OUTPUT"] = folder
    preload = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p]
    env["LD_PRELOAD"] = ":".join([library] + [p for p in preload if p != library])
    return env, folder


def exit_status(returncode):
    """A subprocess return code as a shell's exit status."""
    return 128 - returncode if returncode < 0 else returncode


def find_summaries(folder, pid, since):
    """(the files the process `pid` wrote, other summaries written since
    `since`), JSON only, sorted."""
    mine = sorted(glob.glob(os.path.join(glob.escape(folder), "gpuslack-*-%d.json" % pid)) +
                  glob.glob(os.path.join(glob.escape(folder), "gpuslack-*-%d-rank*.json" % pid)))
    others = []
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "gpuslack-*.json"))):
        if path in mine:
            continue
        try:
            if os.path.getmtime(path) >= since:
                # A job's file (gpuslack-<job>-rank<R>.json) names no pid: its
                # "pid" says whose it is.
                (mine if _pid_in(path) == pid else others).append(path)
        except OSError:
            pass
    return sorted(mine), others


def _pid_in(path):
    """The "pid" of a summary file, or None."""
    try:
        with open(path) as f:
            return json.load(f).get("pid")
    except (OSError, ValueError, AttributeError):
        return None


def _foreground_in_terminal():
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):
        return False


def run(command, out=None, conf=None, stderr=None):
    """Runs `command` under gpuslack; returns the exit status to exit with."""
    stderr = stderr or sys.stderr
    if not command:
        print("gpuslack run: no command (usage: python -m gpuslack run [--out DIR] [--conf k:v,...] -- COMMAND ...)",
              file=stderr)
        return 2
    try:
        library = _lib.library_path()
    except _lib.LibraryNotFound as e:
        print("gpuslack run: %s" % e, file=stderr)
        return 2
    if ":" in library or " " in library:
        print("gpuslack run: %s: LD_PRELOAD cannot hold a path with ':' or ' '" % library, file=stderr)
        return 2
    env, folder = child_environment(os.environ, library, out=out, conf=conf)
    start = time.time() - 1  # file times may be coarser than the clock
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        print("gpuslack run: %s: command not found" % command[0], file=stderr)
        return 127
    except PermissionError:
        print("gpuslack run: %s: permission denied" % command[0], file=stderr)
        return 126

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    interrupt = signal.SIG_IGN if _foreground_in_terminal() else forward
    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    try:
        returncode = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    say_where(folder, child.pid, start, stderr)
    return exit_status(returncode)


def say_where(folder, pid, start, stderr):
    mine, others = find_summaries(folder, pid, start)
    for path in mine:
        print("gpuslack: summary in %s (python -m gpuslack report %s)" % (path, path), file=stderr)
    if mine:
        return
    if others:
        print("gpuslack: summaries from the command's child processes: %s" % " ".join(others), file=stderr)
    else:
        print("gpuslack: no summary in %s: the command made no CUDA call, or json_summary is off" % folder,
              file=stderr)
