"""The wheel on an older distribution: Debian bullseye (glibc 2.31), a
debootstrap root cached under ~/.cache (bullseye_root.sh), entered by
chroot in a private mount namespace (unshare: /proc, /dev; nothing stays
mounted). Inside: the wheel installed into a venv of bullseye's python3,
`gpuslack library`, and a CUDA program on the simulated runtime under
`gpuslack run`, with its summary.

The program and the simulated runtime are built by the wheel's own
toolchain (scripts/wheel.sh --sim: alloc_loop_app and <WHEEL_BUILD>/simcuda),
since the GCC-built ones need the build machine's glibc. That the root is
older than this build is checked too: this build's libgpuslack.so (GCC,
glibc 2.34+) does not load there."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from wheel_test import HERE, WHEEL_BUILD, check_summary, the_wheel

WORK = "gpuslack-test"  # the folder inside the root, made afresh each run


def make_root():
    r = subprocess.run(["bash", os.path.join(HERE, "bullseye_root.sh")], capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, "bullseye_root.sh failed: " + r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


def in_root(root, script, timeout=300):
    """Runs a shell script in the root, with /proc and /dev mounted for it in
    a mount namespace of its own (they vanish with it)."""
    outer = ("set -e; mount --make-rprivate /; mount -t proc proc \"$R/proc\"; mount --rbind /dev \"$R/dev\"; "
             "exec chroot \"$R\" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 "
             "/bin/sh -c \"$S\"")
    env = dict(os.environ, R=root, S=script)
    return subprocess.run(["unshare", "--mount", "--fork", "/bin/sh", "-c", outer], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_bullseye(tmp_path):
    whl = the_wheel()
    app = os.path.join(WHEEL_BUILD, "tests", "interpose", "alloc_loop_app")
    simcuda = os.path.join(WHEEL_BUILD, "simcuda")
    assert os.path.isfile(app) and os.path.isdir(simcuda), "scripts/wheel.sh --sim builds %s and %s" % (app, simcuda)
    root = make_root()
    work = os.path.join(root, WORK)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "gcc"))
    shutil.copy(whl, work)
    shutil.copy(app, work)
    shutil.copytree(simcuda, os.path.join(work, "simcuda"), symlinks=True)
    gcc_so = os.environ.get("GPUSLACK_SO")
    if gcc_so:
        shutil.copy(gcc_so, os.path.join(work, "gcc", "libgpuslack.so"))
    w = "/" + WORK

    r = in_root(root, "ldd --version | head -n 1")
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+)\.(\d+)\s*$", r.stdout.strip())
    assert m and (int(m.group(1)), int(m.group(2))) == (2, 31), "the root's glibc: " + r.stdout
    print("root's glibc:", r.stdout.strip())

    # The build machine's own library does not load here: the root is older.
    if gcc_so:
        r = in_root(root, "python3 -c \"import ctypes; ctypes.CDLL('%s/gcc/libgpuslack.so')\"" % w)
        assert r.returncode != 0 and "GLIBC_2.3" in r.stderr, r.stdout + r.stderr
        print("this build's library there:", r.stderr.strip().splitlines()[-1])

    r = in_root(root, "python3 -m venv {w}/venv && PIP_NO_INDEX=1 {w}/venv/bin/pip install -q {w}/{whl}".format(
        w=w, whl=os.path.basename(whl)))
    assert r.returncode == 0, r.stdout + r.stderr
    r = in_root(root, "cd %s && venv/bin/gpuslack library && venv/bin/python -m gpuslack library" % w)
    assert r.returncode == 0, r.stderr
    libs = r.stdout.split()
    assert len(libs) == 2 and all(p.startswith(w + "/venv/") and p.endswith("/gpuslack/libgpuslack.so") for p in libs), libs

    # allocator:vmm puts the allocator's own calls on the simulated driver
    # too; the loop: 20 iterations of two 16 MiB buffers.
    r = in_root(root, ("cd {w} && LD_LIBRARY_PATH={w}/simcuda venv/bin/gpuslack run --out {w}/out "
                       "--conf allocator:vmm -- {w}/alloc_loop_app loop 16 2 20").format(w=w))
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"malloc_ms \S+ free_ms \S+ total_ms \S+", r.stdout), r.stdout
    out = tmp_path / "out"
    shutil.copytree(os.path.join(work, "out"), str(out))
    stderr = r.stderr.replace(w + "/out", str(out))
    summary = check_summary(out, stderr)
    print("summary keys:", sorted(summary)[:12])
    r = in_root(root, "cd {w} && venv/bin/gpuslack report out/*.json".format(w=w))
    assert r.returncode == 0 and r.stdout.strip(), r.stdout + r.stderr
    print(r.stdout[:600])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"] + sys.argv[1:]))
