"""python -m gpuslack doctor (python_shim/gpuslack/doctor.py, docs/doctor.md).

Every problem the doctor can name is made real here, on the simulated
device, and seen named, with its check and fix; a clean machine exits 0;
--json has its documented shape. Each run is a child process with its own
environment (the doctor reads the environment as a program would get it).
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import LIBRARY, SHIM, SIMCUDA, needs_library, sim_env

sys.path.insert(0, SHIM)
from gpuslack import _elf  # noqa: E402

pytestmark = needs_library

# The simulated device with every library gpuslack looks for, CUPTI on a
# driver that takes several subscribers (r610): nothing to complain about.
CLEAN = {"GPUSIM_DRIVER_VERSION": "610"}


def simcuda_dirs():
    return "%s:%s" % (os.path.join(os.path.dirname(SIMCUDA), "simcuda12"), SIMCUDA)


def doctor(tmp_path, *args, conf=None, env_extra=None, drop=(), json_output=True):
    env = sim_env(conf=conf, **dict(CLEAN, **(env_extra or {})))
    env["LD_LIBRARY_PATH"] = simcuda_dirs()
    env["GPUSLACK_OUTPUT"] = str(tmp_path / "out")
    for k in drop:
        env.pop(k, None)
    for k, v in (env_extra or {}).items():
        env[k] = v
    cmd = [sys.executable, "-m", "gpuslack", "doctor"] + (["--json"] if json_output else []) + list(args)
    r = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    if not json_output:
        return r.returncode, r.stdout
    return r.returncode, json.loads(r.stdout)


def problems(report, check):
    return [p for p in report["problems"] if p["check"] == check]


def named(report, check, *words):
    found = problems(report, check)
    assert found, "no %s problem named: %s" % (check, report["problems"])
    line = found[0]["problem"]
    for w in words:
        assert w in line, (w, line)
    assert found[0]["fix"], found[0]
    return found[0]


# -- the clean case and the shapes --------------------------------------------

def test_a_clean_machine_has_no_problem_and_exits_0(tmp_path):
    rc, text = doctor(tmp_path, json_output=False)
    assert rc == 0, text
    assert text.rstrip().endswith("no problems"), text
    assert len(text.splitlines()) <= 40, text
    for title in ("library", "driver", "runtime", "CUPTI", "NVML", "NCCL", "torch", "LD_PRELOAD", "secure",
                  "output", "knobs", "will"):
        assert any(line.startswith(title) for line in text.splitlines()), (title, text)
    assert "gpuslack 0.1.0" in text


def test_json_has_every_section_and_the_libraries_versions(tmp_path):
    rc, r = doctor(tmp_path)
    assert rc == 0, r["problems"]
    assert set(r) >= {"library", "driver", "runtimes", "cupti", "nvml", "nccl", "torch", "ld_preload", "secure",
                      "output", "knobs", "will", "problems"}
    assert r["library"]["path"] == os.path.realpath(LIBRARY) or r["library"]["path"] == LIBRARY
    assert r["driver"]["found"] and r["driver"]["version"] == 13000 and r["driver"]["devices"] == 1
    assert [x.get("version") for x in r["runtimes"]] == [12090, 13000]
    cupti13 = r["cupti"][1]
    # The simulated r610 driver's CUPTI is a later one than 13.2, which allows one subscriber.
    assert cupti13["version"] == 130300 and cupti13["subscribe_v2"] and cupti13["multiple"]
    assert r["nvml"]["driver_version"] == "610.95.05"
    assert r["nccl"]["version"] >= 22300
    rows = r["knobs"]["rows"]
    assert len(rows) >= 30 and set(rows[0]) == {"key", "type", "value", "default", "source"}
    assert r["output"][0]["knob"] == "output_dir" and r["output"][0]["writable"]
    assert r["problems"] == []


def test_version_is_the_library_s_own(tmp_path):
    # Asked in a child: loading the library into pytest would change what
    # the other tests' library_path() finds first.
    ask = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.gpuslack_version.restype = ctypes.c_char_p; "
           "print(lib.gpuslack_version().decode())")
    version = subprocess.run([sys.executable, "-c", ask, LIBRARY], capture_output=True, text=True).stdout.strip()
    _, r = doctor(tmp_path)
    assert version and r["library"]["version"] == version


def test_knobs_say_where_each_came_from(tmp_path):
    _, r = doctor(tmp_path, "--conf", "top_call_sites:9", conf="allocator:vmm")
    rows = {k["key"]: k for k in r["knobs"]["rows"]}
    assert rows["allocator"]["value"] == "vmm" and rows["allocator"]["source"] == "GPUSLACK_CONF"
    assert rows["top_call_sites"]["value"] == "9" and rows["top_call_sites"]["source"] == "GPUSLACK_CONF"
    assert rows["output_dir"]["source"] == "GPUSLACK_OUTPUT"
    assert rows["pin"]["source"] == "default"
    _, text = doctor(tmp_path, conf="allocator:vmm", json_output=False)
    assert any(line.split()[:3] == ["allocator", "vmm", "GPUSLACK_CONF"] for line in text.splitlines()), text


# -- each problem, made real ------------------------------------------------------

def test_a_bad_gpuslack_conf_is_named_line_by_line(tmp_path):
    rc, r = doctor(tmp_path, conf="bogus:1,top_call_sites:many")
    assert rc == 1
    lines = [p["problem"] for p in problems(r, "knobs")]
    assert "GPUSLACK_CONF: unknown key 'bogus'; ignored" in lines
    assert any(line.startswith("GPUSLACK_CONF: top_call_sites:many is not a non-negative integer") for line in lines)


def test_the_library_not_found(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"GPUSLACK_LIBRARY": str(tmp_path / "none" / "libgpuslack.so")})
    assert rc == 1
    named(r, "library", "no such file")


def test_a_library_that_does_not_load(tmp_path):
    broken = tmp_path / "libgpuslack.so"
    broken.write_text("not a shared object")
    rc, r = doctor(tmp_path, env_extra={"GPUSLACK_LIBRARY": str(broken)})
    assert rc == 1
    p = named(r, "library", "does not load")
    assert "glibc" in p["fix"]


def test_no_driver_found(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"LD_LIBRARY_PATH": os.path.join(os.path.dirname(SIMCUDA), "simcuda12")})
    # Only the simulated device's folders are on the path: a machine with a
    # real driver in the loader's cache is not where this test runs.
    assert not r["driver"].get("found"), "a real libcuda.so.1 is reachable: %s" % r["driver"].get("path")
    assert rc == 1
    named(r, "driver", "libcuda.so.1 not found")
    # What follows from it (no CUPTI, no NVML) is not named again.
    assert [p["check"] for p in r["problems"]] == ["driver"], r["problems"]


def test_a_driver_that_does_not_start(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"GPUSIM_NO_DRIVER": "1"})
    assert rc == 1
    named(r, "driver", "cuInit fails")
    assert [p["check"] for p in r["problems"]] == ["driver"], r["problems"]


def test_no_device(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"GPUSIM_DEVICE_COUNT": "0"})
    assert rc == 1
    named(r, "driver", "no CUDA device")


def test_cupti_with_one_subscriber_under_auto(tmp_path):
    # See Note [gpu_timeline:auto and CUPTI's single subscription]: auto takes a
    # free single subscription, as gpu_timeline:on does: nothing wrong.
    for conf in (None, "gpu_timeline:on"):
        rc, r = doctor(tmp_path, conf=conf, env_extra={"GPUSIM_DRIVER_VERSION": "580"})
        assert rc == 0, r["problems"]
        assert any("one subscription" in w for w in r["will"]), r["will"]
    # Beside a tool the driver injects, auto leaves it CUPTI, and says so.
    rc, r = doctor(tmp_path, env_extra={"GPUSIM_DRIVER_VERSION": "580", "CUDA_INJECTION64_PATH": "/opt/tool.so"})
    assert rc == 0, r["problems"]
    assert any("CUDA_INJECTION64_PATH" in w for w in r["will"]), r["will"]


def test_cupti_held_by_another_tool_names_it(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"GPUSIM_CUPTI_HELD_BY": "Nsight Systems"})
    assert rc == 1
    named(r, "cupti", "held by Nsight Systems")


def without(tmp_path, name):
    """A copy of the simulated device's folder (links) where `name` is an
    empty file: the loader finds it first and cannot load it, as a broken
    install (this machine's toolkit has a CUPTI and an NCCL in the loader's
    cache, which a missing file would let through)."""
    folder = tmp_path / ("without-" + name)
    folder.mkdir()
    for f in os.listdir(SIMCUDA):
        if f != name:
            os.symlink(os.path.join(SIMCUDA, f), str(folder / f))
    (folder / name).write_text("")
    return str(folder)


def test_no_cupti(tmp_path):
    folder = without(tmp_path, "libcupti.so.13")
    rc, r = doctor(tmp_path, env_extra={"LD_LIBRARY_PATH": folder})
    assert rc == 1
    named(r, "cupti", "no usable CUPTI", "libcupti.so.13", "file too short")
    rc, r = doctor(tmp_path, conf="gpu_timeline:off", env_extra={"LD_LIBRARY_PATH": folder})
    assert problems(r, "cupti") == []


def test_no_nvml(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"LD_LIBRARY_PATH": without(tmp_path, "libnvidia-ml.so.1")})
    assert rc == 1
    named(r, "nvml", "no NVML")


def test_an_nccl_without_the_profiler_interface(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"GPUSIM_NCCL_PROFILER_VERSION": "0"})
    assert rc == 1
    named(r, "nccl", "NCCL 2.22.3", "no profiler plugin interface")
    # v1 (NCCL 2.23) has it; nccl_profiler:false says it is known.
    assert doctor(tmp_path, env_extra={"GPUSIM_NCCL_PROFILER_VERSION": "1"})[0] == 0
    assert doctor(tmp_path, conf="nccl_profiler:false", env_extra={"GPUSIM_NCCL_PROFILER_VERSION": "0"})[0] == 0


@pytest.mark.parametrize("alloc_conf, words", [
    ("expandable_segments:True", ["expandable_segments:True", "allocator:vmm"]),
    ("backend:cudaMallocAsync", ["backend:cudaMallocAsync", "cudaMallocAsync"]),
])
def test_a_torch_allocator_setting_that_fights_allocator_vmm(tmp_path, alloc_conf, words):
    rc, r = doctor(tmp_path, conf="allocator:vmm", env_extra={"PYTORCH_CUDA_ALLOC_CONF": alloc_conf})
    assert rc == 1
    named(r, "torch", *words)
    assert r["torch"]["alloc_conf"]["variable"] == "PYTORCH_CUDA_ALLOC_CONF"
    # With the runtime's own cudaMalloc there is nothing to fight.
    rc, r = doctor(tmp_path, env_extra={"PYTORCH_CUDA_ALLOC_CONF": alloc_conf})
    assert rc == 0, r["problems"]


def test_torch_is_found_without_being_imported(tmp_path):
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (site / "torch-2.9.1.dist-info").mkdir()
    (site / "torch-2.9.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1\n")
    env_path = os.pathsep.join([str(site), SHIM])
    rc, r = doctor(tmp_path, env_extra={"PYTHONPATH": env_path})
    assert r["torch"]["found"] and r["torch"]["version"] == "2.9.1", r["torch"]
    assert rc == 0, r["problems"]


def test_a_library_ahead_in_ld_preload_that_binds_cuda_malloc(tmp_path):
    cudart = os.path.join(SIMCUDA, "libcudart.so.13")
    rc, r = doctor(tmp_path, env_extra={"LD_PRELOAD": "%s:%s" % (cudart, LIBRARY)})
    assert rc == 1
    p = named(r, "ld_preload", cudart, "comes before libgpuslack.so")
    assert "cudaMalloc" in r["ld_preload"]["ahead"][0]["hooks"]
    assert "first" in p["fix"]
    # The doctor ran preloaded and made no CUDA call of its own: no summary.
    assert not (tmp_path / "out").exists()
    # gpuslack first: the same library after it is no problem.
    rc, r = doctor(tmp_path, env_extra={"LD_PRELOAD": "%s:%s" % (LIBRARY, cudart)})
    assert rc == 0, r["problems"]


def test_an_ld_preload_entry_the_loader_cannot_find(tmp_path):
    rc, r = doctor(tmp_path, env_extra={"LD_PRELOAD": "%s:%s" % (tmp_path / "libgone.so", LIBRARY)})
    assert rc == 1
    named(r, "ld_preload", "libgone.so", "cannot find")


def test_an_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    rc, r = doctor(tmp_path, env_extra={"GPUSLACK_OUTPUT": str(blocker / "out")})
    assert rc == 1
    named(r, "output", "output_dir", "not a folder")
    if os.geteuid() != 0:  # root writes anywhere: the file in the way stands for it there
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
        rc, r = doctor(tmp_path, env_extra={"GPUSLACK_OUTPUT": str(locked / "out")})
        named(r, "output", "not writable")
    # No file to write, nothing to check.
    rc, r = doctor(tmp_path, conf="json_summary:false", env_extra={"GPUSLACK_OUTPUT": str(blocker / "out")})
    assert rc == 0, r["problems"]


def test_secure_mode_of_a_setgid_command(tmp_path):
    program = tmp_path / "privileged"
    shutil.copy("/bin/true", str(program))
    others = [g for g in os.getgroups() if g != os.getgid()]
    if os.geteuid() == 0:
        os.chown(str(program), -1, 65534)
    elif others:
        os.chown(str(program), -1, others[0])
    else:
        pytest.fail("needs root (as CI runs) or a second group to make a setgid program with")
    os.chmod(str(program), 0o2755)
    rc, r = doctor(tmp_path, "--", str(program), "--flag")
    assert rc == 1
    named(r, "secure", str(program), "setgid", "secure mode")
    # What the library does then, said by the library: no file.
    rows = {k["key"]: k for k in r["knobs"]["rows"]}
    assert rows["json_summary"]["value"] == "false" and rows["json_summary"]["source"] == "secure mode"
    # The same program without the bit is measured as any other.
    os.chmod(str(program), 0o755)
    rc, r = doctor(tmp_path, "--", str(program))
    assert rc == 0, r["problems"]


def test_a_command_not_found(tmp_path):
    rc, r = doctor(tmp_path, "--", "no-such-program-here")
    assert rc == 1
    named(r, "command", "no-such-program-here: command not found")


# -- the parts ---------------------------------------------------------------

def test_hooked_names_are_the_library_s_exports():
    names = _elf.defined_functions(LIBRARY)
    assert {"cudaMalloc", "cudaFree", "cuMemAlloc_v2", "ncclAllReduce", "gpuslack_version", "dlsym"} <= names
    assert not any(n.startswith("_ZN") for n in names), "only the hooked API and gpuslack_* are exported"


def test_elf_reader_refuses_what_is_not_a_shared_object(tmp_path):
    f = tmp_path / "not-elf.so"
    f.write_text("hello")
    with pytest.raises(_elf.NotReadable):
        _elf.defined_functions(str(f))


def test_doctor_is_a_subcommand_of_the_console_script(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gpuslack", "--help"], env=sim_env(), capture_output=True, text=True)
    assert "doctor" in r.stdout
    with open(os.path.join(SHIM, "pyproject.toml")) as f:
        assert 'gpuslack = "gpuslack.__main__:main"' in f.read()


def test_the_documented_screen_is_what_the_doctor_says(tmp_path):
    """docs/doctor.md's second screen, rerun: the same problem lines (the
    build folder's path aside)."""
    import re
    with open(os.path.join(os.path.dirname(SHIM), "docs", "doctor.md")) as f:
        doc = f.read()
    screen = doc.split("## A machine with problems", 1)[1].split("```", 2)[1]
    documented = [line for line in screen.splitlines() if line.startswith("  ") and "; fix: " in line]
    assert len(documented) == 5, screen
    build = os.path.dirname(LIBRARY)
    rc, text = doctor(tmp_path, json_output=False, conf="allocator:vmm,top_call_sites:lots", env_extra={
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "GPUSIM_NCCL_PROFILER_VERSION": "0",
        "GPUSIM_DRIVER_VERSION": "580", "GPUSLACK_OUTPUT": "/etc/passwd/out",
        "LD_PRELOAD": "%s:%s" % (os.path.join(SIMCUDA, "libcudart.so.13"), LIBRARY)})
    assert rc == 1
    said = [line for line in text.splitlines() if line.startswith("  ") and "; fix: " in line]

    def plain(lines, folder):
        # The build folder aside, and how many more calls the library ahead
        # defines: that count grows with gpuslack's hook tables.
        return [re.sub(r" and \d+ more:", " and N more:", line.replace(folder, "BUILD")) for line in lines]

    doc_build = re.search(r"(\S+)/simcuda/libcudart\.so\.13 comes before", screen).group(1)
    assert plain(said, os.path.realpath(build)) == plain(documented, doc_build)
