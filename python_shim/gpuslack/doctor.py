"""``python -m gpuslack doctor``: what gpuslack finds here and what it will do.

    python -m gpuslack doctor [--json] [--conf key:value,...] [--out DIR] [-- COMMAND ...]

One screen (docs/doctor.md): the library it would preload and its version;
the driver, the CUDA runtimes, CUPTI (several subscribers or one, and who
holds it), NVML and NCCL (its profiler plugin interface), each asked for
its own version in a child process (_doctor_probe.py); torch and its
allocator settings; LD_PRELOAD's order; secure mode; whether the output
folders are writable; the knobs in force and where each came from, as the
library's own parser reads them (gpuslack_knobs_json). Then each problem,
one line with its fix. `--conf`/`--out` are read as `gpuslack run` would
pass them; COMMAND is the program to be measured (its executable is checked
for secure mode). Exit status: 0 when nothing is wrong, 1 otherwise.
"""
import ctypes
import importlib.util
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

from . import _elf, _lib, launcher

PROBE_TIMEOUT_S = 30
NCCL_PROFILER_SINCE = 22300  # NCCL 2.23: ncclProfiler_v1 (lib/nccl/profiler_versions.h)
AT_SECURE = 23
CUDA_ERROR_NO_DEVICE = 100
# Named first when a library ahead in LD_PRELOAD binds them: the calls gpuslack measures most.
FIRST_NAMED = ("cudaMalloc", "cudaFree", "cudaMemcpy", "cudaMemcpyAsync", "cudaMallocHost", "cudaFreeHost",
               "cuMemAlloc_v2", "ncclAllReduce")
LIBRARY_FOLDERS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                   "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")


def cuda_version(code):
    return "%d.%d" % (code // 1000, code % 1000 // 10) if code else "?"


def nccl_version(code):
    return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100) if code >= 10000 else str(code)


def cupti_version(code):
    return "%d.%d (%d)" % (code // 10000, code // 100 % 100, code) if code >= 10000 else str(code)


class Doctor:
    """Gathers the answers (self.report) and the problems, one check each."""

    def __init__(self, environ, conf=None, out=None, command=None, cwd=None):
        self.environ = dict(environ)
        self.conf, self.out, self.command = conf, out, list(command or [])
        self.cwd = cwd or os.getcwd()
        self.report = {"problems": [], "will": []}
        self.knobs = {}

    def problem(self, check, what, fix):
        self.report["problems"].append({"check": check, "problem": what, "fix": fix})

    def will(self, text):
        self.report["will"].append(text)

    def run(self):
        lib = self.check_library()
        self.check_secure()
        self.check_knobs(lib)
        self.check_devices()
        self.check_torch()
        self.check_preload()
        self.check_output()
        return self.report

    # -- the library and its knobs ----------------------------------------

    def check_library(self):
        r = self.report["library"] = {}
        try:
            r["path"] = _lib.library_path()
        except _lib.LibraryNotFound as e:
            r["error"] = str(e)
            self.problem("library", str(e), "build it (scripts/build.sh build) or pip install the gpuslack wheel")
            return None
        r["where"] = next((where for where, path in _lib.candidates() if os.path.isfile(path)), "")
        try:
            lib = _lib.load()
        except OSError as e:
            r["error"] = str(e)
            self.problem("library", "%s does not load: %s" % (r["path"], e),
                         "install the wheel built for this machine (manylinux_2_28, glibc 2.28 or later)")
            return None
        r["version"] = lib.version().decode()
        if not lib.has("knobs_json"):
            self.problem("library", "%s (gpuslack %s) cannot say its knobs: an older build" % (r["path"], r["version"]),
                         "rebuild it or install a newer gpuslack")
            return None
        return lib

    def knob_environment(self):
        """GPUSLACK_CONF and GPUSLACK_OUTPUT as the program would get them."""
        env = self.environ
        if self.conf is not None or self.out is not None:
            env, _ = launcher.child_environment(env, self.report["library"].get("path", "libgpuslack.so"),
                                                out=self.out, conf=self.conf, cwd=self.cwd)
        return env.get("GPUSLACK_CONF"), env.get("GPUSLACK_OUTPUT")

    def check_knobs(self, lib):
        conf, output = self.knob_environment()
        r = self.report["knobs"] = {"GPUSLACK_CONF": conf, "GPUSLACK_OUTPUT": output, "rows": [], "errors": [],
                                    "as_run": self.conf is not None or self.out is not None}
        if lib is None:
            return
        secure = bool(self.report["secure"]["command"] or self.report["secure"]["doctor"])
        answer = lib.knobs_json(None if conf is None else os.fsencode(conf),
                                None if output is None else os.fsencode(output), 1 if secure else 0)
        if not answer:  # out of memory: the library says nothing more
            return
        try:
            parsed = json.loads(ctypes.string_at(answer).decode("utf-8"))
        finally:
            lib.free(answer)
        r["rows"], r["errors"] = parsed["knobs"], parsed["errors"]
        self.knobs = {k["key"]: k["value"] for k in r["rows"]}
        for line in r["errors"]:
            self.problem("knobs", line, "correct or remove that item of GPUSLACK_CONF (doctor --json lists every "
                         "knob's type and default)")

    # -- the CUDA libraries -------------------------------------------------

    def probe(self):
        env = {k: v for k, v in self.environ.items() if k != "LD_PRELOAD"}
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_doctor_probe.py")
        try:
            r = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                               timeout=PROBE_TIMEOUT_S)
            return json.loads(r.stdout), None
        except subprocess.TimeoutExpired:
            return None, "asking the CUDA libraries took over %d s (a driver that hangs?)" % PROBE_TIMEOUT_S
        except ValueError:
            return None, "asking the CUDA libraries failed (exit %d): %s" % (
                r.returncode, (r.stderr.strip().splitlines() or [""])[-1])

    def check_devices(self):
        answers, error = self.probe()
        if answers is None:
            self.report["driver"] = {"found": False, "error": error}
            self.problem("driver", error, "check the NVIDIA driver (nvidia-smi) before running gpuslack")
            return
        self.report.update(answers)
        driver = answers["driver"]
        if not driver.get("found"):
            self.problem("driver", "no NVIDIA driver: libcuda.so.1 not found",
                         "install the NVIDIA driver; in a container, start it with the GPUs (--gpus all)")
        elif driver.get("init_result") == CUDA_ERROR_NO_DEVICE or driver.get("devices") == 0:
            self.problem("driver", "the driver sees no CUDA device", "check CUDA_VISIBLE_DEVICES and nvidia-smi")
        elif driver.get("init_result"):
            self.problem("driver", "%s loads but cuInit fails (CUresult %d)" % (driver.get("path") or driver["name"],
                                                                                 driver["init_result"]),
                         "check the driver with nvidia-smi (kernel module loaded, /dev/nvidia* readable)")
        # Without a working driver, CUPTI's and NVML's troubles follow from it: the driver's line says it.
        driver_ok = bool(driver.get("found")) and not driver.get("init_result")
        self.check_cupti(answers, driver_ok)
        self.check_nvml(answers["nvml"], driver_ok)
        self.check_nccl(answers["nccl"])

    def check_cupti(self, answers, driver_ok):
        mode = self.knobs.get("gpu_timeline", "auto")
        # gpuslack loads the CUPTI of the runtime's major (lib/cuda/cupti_api.cc):
        # judged for the newest runtime found, else for any CUPTI found.
        majors = [int(r["name"].rsplit(".", 1)[1]) for r in answers["runtimes"] if r.get("found")]
        by_major = {int(c["name"].rsplit(".", 1)[1]): c for c in answers["cupti"] if c.get("name")}
        found = [c for c in answers["cupti"] if c.get("found")]
        cupti = by_major.get(max(majors)) if majors else (found[-1] if found else None)
        if mode == "off":
            self.will("GPU timeline: off (gpu_timeline:off)")
            return
        if cupti is None or not cupti.get("found"):
            self.will("GPU timeline: off (no CUPTI)")
            if driver_ok:
                why = cupti.get("error") if cupti else "libcupti.so.12/.13 not found"
                self.problem("cupti", "no usable CUPTI (%s) for gpu_timeline:%s: the summary will have no GPU "
                             "timeline" % (why, mode), "put CUPTI on LD_LIBRARY_PATH (the toolkit's "
                             "extras/CUPTI/lib64, or pip's nvidia-cuda-cupti), or set gpu_timeline:off")
            return
        if cupti.get("multiple"):
            self.will("GPU timeline: on, as one of several CUPTI subscribers (%s)" % cupti["name"])
        elif not driver_ok:
            self.will("GPU timeline: off (no working driver)")
        elif cupti.get("holder"):
            self.will("GPU timeline: off (CUPTI is held by %s)" % cupti["holder"])
            self.problem("cupti", "CUPTI is held by %s: gpuslack steps aside and the summary has no GPU timeline"
                         % cupti["holder"], "run without that tool attached, or accept gpuslack's figures without "
                         "the timeline")
        elif mode == "on" or not os.environ.get("CUDA_INJECTION64_PATH"):
            # Note [gpu_timeline:auto and CUPTI's single subscription]
            # (lib/timeline/coexistence.h): auto takes a free one too.
            self.will("GPU timeline: on, holding CUPTI's one subscription (it yields to a tool that subscribes later)")
        else:
            self.will("GPU timeline: off (CUPTI takes one subscriber, and gpu_timeline:auto leaves it to the tool "
                      "CUDA_INJECTION64_PATH injects; gpu_timeline:on takes it)")

    def check_nvml(self, nvml, driver_ok):
        if self.knobs.get("device_health", "auto") == "off":
            self.will("device health: off (device_health:off)")
            return
        if not nvml.get("found"):
            self.will("device health: off (no NVML)")
            if driver_ok:
                self.problem("nvml", "no NVML (libnvidia-ml.so.1): no device health, no NVLink topology",
                             "install the driver's NVML, or set device_health:off")
        elif nvml.get("init_result"):
            self.will("device health: off (NVML does not start)")
            if driver_ok:
                self.problem("nvml", "nvmlInit fails (nvmlReturn_t %d): no device health" % nvml["init_result"],
                             "check the driver with nvidia-smi, or set device_health:off")
        else:
            self.will("device health: on (NVML, once a second)")

    def check_nccl(self, nccl):
        if not nccl.get("found"):
            self.will("collectives: no NCCL found here (needed only by programs that use it)")
            return
        version = nccl.get("version") or 0
        plugin = self.environ.get("NCCL_PROFILER_PLUGIN", "")
        if self.knobs.get("nccl_profiler", "true") != "true":
            self.will("NCCL profiler plugin: off (nccl_profiler:false)")
        elif version < NCCL_PROFILER_SINCE:
            self.will("NCCL profiler plugin: none (NCCL %s)" % nccl_version(version))
            self.problem("nccl", "NCCL %s has no profiler plugin interface (2.23+): collectives get no algorithm, "
                         "protocol or channels" % nccl_version(version),
                         "use NCCL 2.23 or later, or set nccl_profiler:false to say it is known")
        elif plugin and os.path.basename(plugin) not in ("none", "libgpuslack.so"):
            self.will("NCCL profiler plugin: steps aside for NCCL_PROFILER_PLUGIN=%s" % plugin)
        else:
            self.will("NCCL profiler plugin: offered to NCCL %s" % nccl_version(version))

    # -- torch ---------------------------------------------------------------

    def check_torch(self):
        r = self.report["torch"] = {"found": False}
        spec = importlib.util.find_spec("torch")  # finds, does not import
        if spec is not None:
            r.update(found=True, location=os.path.dirname(spec.origin or "") or None, python=sys.executable)
            try:
                from importlib import metadata
                r["version"] = metadata.version("torch")
            except Exception:  # no metadata beside the package: a source tree
                r["version"] = None
        name = next((n for n in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF") if self.environ.get(n)), None)
        settings = dict(launcher.parse_conf(self.environ.get(name))) if name else {}
        r["alloc_conf"] = {"variable": name, "settings": settings}
        if self.knobs.get("allocator") != "vmm":
            return
        where = "%s=%s" % (name, self.environ.get(name))
        if str(settings.get("expandable_segments", "")).lower() in ("true", "1"):
            self.problem("torch", "%s with allocator:vmm: torch maps its own segments (cuMem*) and calls cudaMalloc "
                         "rarely, so gpuslack's allocator serves almost nothing" % where,
                         "drop expandable_segments:True, or keep it and use allocator:native")
        if settings.get("backend") == "cudaMallocAsync":
            self.problem("torch", "%s with allocator:vmm: torch allocates with cudaMallocAsync, which gpuslack's "
                         "allocator does not serve" % where,
                         "drop backend:cudaMallocAsync, or keep it and use allocator:native")

    # -- LD_PRELOAD, secure mode, output ---------------------------------------

    def resolve(self, name):
        if "/" in name:
            return name if os.path.isfile(name) else None
        for folder in self.environ.get("LD_LIBRARY_PATH", "").split(":") + list(LIBRARY_FOLDERS):
            if folder and os.path.isfile(os.path.join(folder, name)):
                return os.path.join(folder, name)
        return None

    def hooked_names(self):
        path = self.report["library"].get("path")
        names = _elf.defined_functions(path) if path else set()
        return {n for n in names if not n.startswith(("gpuslack_", "ncclProfiler_v")) and n != "dlsym"}

    def check_preload(self):
        entries = [p for p in self.environ.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p]
        r = self.report["ld_preload"] = {"entries": entries, "gpuslack_index": None, "ahead": []}
        mine = [i for i, p in enumerate(entries) if os.path.basename(p).startswith(_lib.LIBRARY_NAME)]
        for entry in entries:
            if self.resolve(entry) is None:
                self.problem("ld_preload", "LD_PRELOAD names %s, which the loader cannot find" % entry,
                             "remove it from LD_PRELOAD or give its full path")
        if not mine:
            return
        r["gpuslack_index"] = mine[0]
        try:
            hooked = self.hooked_names()
        except (OSError, _elf.NotReadable) as e:
            r["error"] = str(e)
            return
        for entry in entries[:mine[0]]:
            path = self.resolve(entry)
            if path is None:
                continue
            try:
                clash = sorted(hooked & _elf.defined_functions(path), key=_named_first)
            except (OSError, _elf.NotReadable) as e:
                r["ahead"].append({"path": path, "error": str(e)})
                continue
            r["ahead"].append({"path": path, "hooks": clash})
            if clash:
                shown = ", ".join(clash[:3]) + (" and %d more" % (len(clash) - 3) if len(clash) > 3 else "")
                self.problem("ld_preload", "%s comes before libgpuslack.so in LD_PRELOAD and defines %s: it binds "
                             "those calls first, and gpuslack sees only what it passes on" % (entry, shown),
                             "put libgpuslack.so first in LD_PRELOAD (gpuslack run does)")

    def check_secure(self):
        r = self.report["secure"] = {"doctor": process_is_secure(), "command": None}
        if not self.command:
            return
        path = shutil.which(self.command[0], path=self.environ.get("PATH"))
        r["executable"] = path
        if path is None:
            self.problem("command", "%s: command not found" % self.command[0], "give its path, or fix PATH")
        why = secure_executable(path) if path else None
        r["command"] = why
        if why:
            self.problem("secure", "%s %s: it runs in secure mode, where the loader ignores an LD_PRELOAD path "
                         "with '/', and gpuslack, if loaded, reads no GPUSLACK_CONF and writes no file" % (path, why),
                         "measure it run without the privilege (a copy without the bit, or as the owner)")

    def check_output(self):
        r = self.report["output"] = []
        if not self.knobs:
            return
        k = self.knobs
        self.will("cudaMalloc/cudaFree: %s; cudaMallocHost: %s; pageable copies: %s" % (
            "gpuslack's VMM allocator (allocator:vmm)" if k["allocator"] == "vmm" else "the runtime's, measured",
            "gpuslack's pinned heap" if k["pin"] == "true" else "the runtime's",
            "staged through pinned memory" if k["stage_copies"] == "true" else "the runtime's"))
        files = [w for w, on in (("JSON", k["json_summary"] == "true"), ("text", k["text_summary"] == "file")) if on]
        self.will("summary: %s%s%s" % (
            "text on stderr at exit" if k["text_summary"] == "stderr" else "no text on stderr",
            "; %s in output_dir" % " and ".join(files) if files else "; no file",
            ", every %s s" % k["summary_interval_s"] if k["summary_interval_s"] != "0" else ""))
        folders = []
        if self.knobs["json_summary"] == "true" or self.knobs["text_summary"] == "file":
            folders.append(("output_dir", self.knobs["output_dir"]))
        if self.knobs["prometheus_dir"]:
            folders.append(("prometheus_dir", self.knobs["prometheus_dir"]))
        if self.knobs["log_file"]:
            folders.append(("log_file", os.path.dirname(self.knobs["log_file"]) or "."))
        for knob, folder in folders:
            path = os.path.join(self.cwd, folder)
            ok, why = writable(path)
            r.append({"knob": knob, "path": os.path.abspath(path), "writable": ok, "why": why})
            if not ok:
                self.problem("output", "%s %s is not writable: %s" % (knob, os.path.abspath(path), why),
                             "set %s to a folder you can write (GPUSLACK_OUTPUT, or --out)" % knob
                             if knob == "output_dir" else "set %s to a folder you can write" % knob)


def _named_first(name):
    return (FIRST_NAMED.index(name) if name in FIRST_NAMED else len(FIRST_NAMED), name)


def process_is_secure():
    """Whether this process runs with AT_SECURE (/proc/self/auxv)."""
    try:
        with open("/proc/self/auxv", "rb") as f:
            data = f.read()
    except OSError:
        return False
    for key, value in struct.iter_unpack("QQ", data[:len(data) // 16 * 16]):
        if key == AT_SECURE:
            return value != 0
    return False


def secure_executable(path):
    """Why running `path` starts it with AT_SECURE ("is setuid root", ...), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
        return "is setuid (owner uid %d)" % st.st_uid
    if st.st_mode & stat.S_ISGID and st.st_mode & stat.S_IXGRP and st.st_gid != os.getgid():
        return "is setgid (group gid %d)" % st.st_gid
    try:
        os.getxattr(path, "security.capability")
        return "has file capabilities"
    except OSError:
        return None


def writable(path):
    """(ok, why): whether gpuslack can make and write `path` (mkdir -p)."""
    path = os.path.abspath(path)
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return False, "%s is not a folder" % existing
    try:
        fd, name = tempfile.mkstemp(dir=existing, prefix=".gpuslack-doctor-")
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        return False, "cannot write in %s (%s)" % (existing, e.strerror)
    return True, "writable" if existing == path else "made at the first summary, in %s" % existing


# -- the screen ----------------------------------------------------------------

def _found(answer, text):
    if not answer or not answer.get("found"):
        return "%s: not found" % (answer or {}).get("name", "?")
    return "%s %s (%s)" % (answer["name"], text, answer.get("path") or "?")


def format_text(report):
    """The report as one screen of text."""
    lines = ["gpuslack doctor: what gpuslack finds here and what it will do"]

    def row(title, text):
        lines.append("%-12s%s" % (title, text))

    lib = report["library"]
    row("library", "%s: gpuslack %s (%s)" % (lib["path"], lib["version"], lib["where"]) if lib.get("version")
        else lib.get("path") or "not found")
    d = report.get("driver") or {}
    if d.get("found"):
        row("driver", _found(d, "CUDA %s, %s" % (cuda_version(d.get("version")), "%s device(s)" % d["devices"]
                                                   if d.get("devices") is not None else "cuInit failed")))
    else:
        row("driver", d.get("error") or "libcuda.so.1: not found")
    for r in report.get("runtimes", []):
        row("runtime", _found(r, cuda_version(r.get("version"))))
    for c in report.get("cupti", []):
        if not c.get("found"):
            row("CUPTI", "%s: not found" % c.get("name", "?"))
            continue
        share = ("several subscribers" if c.get("multiple") else "one subscriber at a time") + (
            ", held by %s" % c["holder"] if c.get("holder") else ", free")
        row("CUPTI", _found(c, "%s, %s" % (cupti_version(c.get("version", 0)), share)))
    if "nvml" in report:
        n = report["nvml"]
        row("NVML", _found(n, "driver %s" % n["driver_version"] if n.get("driver_version")
                            else "(nvmlInit: %s)" % n.get("init_result")))
    if "nccl" in report:
        n = report["nccl"]
        version = n.get("version") or 0
        row("NCCL", _found(n, "%s, %s" % (nccl_version(version), "profiler plugin interface" if version >=
                                           NCCL_PROFILER_SINCE else "no profiler plugin interface (before 2.23)")))
    t = report["torch"]
    alloc = t["alloc_conf"]
    conf = "%s=%s" % (alloc["variable"], launcher.format_conf(alloc["settings"].items())) if alloc["variable"] \
        else "PYTORCH_CUDA_ALLOC_CONF unset"
    row("torch", ("%s in %s (not imported); %s" % (t.get("version") or "?", t["location"], conf)) if t["found"]
        else "not in this Python (%s); %s" % (sys.executable, conf))
    p = report["ld_preload"]
    if not p["entries"]:
        row("LD_PRELOAD", "unset: gpuslack run puts libgpuslack.so first")
    elif p["gpuslack_index"] is None:
        row("LD_PRELOAD", "%s: no libgpuslack.so; gpuslack run puts it first" % ":".join(p["entries"]))
    else:
        row("LD_PRELOAD", "%s (libgpuslack.so is entry %d)" % (":".join(p["entries"]), p["gpuslack_index"] + 1))
    s = report["secure"]
    if s["command"]:
        row("secure", "%s %s: secure mode (no GPUSLACK_CONF read, no file written)" % (s["executable"], s["command"]))
    else:
        row("secure", "no%s: gpuslack reads GPUSLACK_CONF and writes its files" % (
            " (%s)" % s["executable"] if s.get("executable") else ""))
    for o in report["output"]:
        row("output", "%s %s: %s" % (o["knob"], o["path"], o["why"]))
    k = report["knobs"]
    rows = k["rows"]
    changed = [r for r in rows if r["source"] != "default"]
    row("knobs", ("%d knobs, %d at their defaults%s%s" % (
        len(rows), len(rows) - len(changed), " (as gpuslack run passes --conf/--out)" if k["as_run"] else "",
        "; set:" if changed else "")) if rows else "unknown (no library to ask)")
    for r in changed:
        lines.append("  %-22s %-16s %s (default %s)" % (r["key"], r["value"] or '""', r["source"],
                                                         r["default"] or '""'))
    for w in report["will"]:
        row("will", w)
    problems = report["problems"]
    if not problems:
        lines.append("no problems")
    else:
        lines.append("%d problem%s:" % (len(problems), "" if len(problems) == 1 else "s"))
        for q in problems:
            lines.append("  %s: %s; fix: %s" % (q["check"], q["problem"], q["fix"]))
    return "\n".join(lines) + "\n"


def run(json_output=False, conf=None, out=None, command=None, stdout=None):
    """Runs every check and prints the screen (or the JSON); returns 0 when
    nothing is wrong, 1 otherwise."""
    stdout = stdout or sys.stdout
    report = Doctor(os.environ, conf=conf, out=out, command=command).run()
    if json_output:
        stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        stdout.write(format_text(report))
    return 1 if report["problems"] else 0
