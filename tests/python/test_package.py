"""The package itself: its version is the project's, and `pip install
./python_shim` yields a package that carries libgpuslack.so and uses its
own copy, with no build folder around."""
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import gpuslack
from conftest import LIBRARY, ROOT, SHIM, needs_library


def test_version_is_the_cmake_projects():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = re.search(r"project\(gpuslack VERSION (\S+)", f.read()).group(1)
    with open(os.path.join(SHIM, "pyproject.toml")) as f:
        pyproject = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    assert gpuslack.__version__ == pyproject == cmake


def build_wheel(tmp_path, library):
    """`pip wheel` of a copy of python_shim (an in-tree build writes build/
    and egg-info beside the sources), offline, with the interpreter's own
    setuptools; returns the CompletedProcess."""
    setuptools = pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    if int(setuptools.__version__.split(".")[0]) < 61:
        pytest.skip("setuptools %s cannot read pyproject.toml's [project] (61 can)" % setuptools.__version__)
    src = tmp_path / "python_shim"
    shutil.copytree(SHIM, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "*.so"))
    env = {k: v for k, v in os.environ.items() if k != "GPUSLACK_LIBRARY"}
    env["PIP_NO_INDEX"] = "1"
    if library:
        env["GPUSLACK_LIBRARY"] = library
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w",
                           str(tmp_path / "dist"), str(src)], env=env, capture_output=True, text=True, timeout=300)


@needs_library
def test_the_wheel_carries_the_library_and_uses_it(tmp_path):
    r = build_wheel(tmp_path, LIBRARY)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp_path / "dist").glob("gpuslack-*.whl")
    assert re.search(r"-cp39-abi3-linux_\w+\.whl$", whl.name), whl.name
    site = tmp_path / "site"
    with zipfile.ZipFile(whl) as z:
        assert "gpuslack/libgpuslack.so" in z.namelist()
        assert "gpuslack/job/merge.py" in z.namelist()   # python -m gpuslack merge
        z.extractall(site)
    env = {k: v for k, v in os.environ.items() if k not in ("GPUSLACK_LIBRARY", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(site)
    r = subprocess.run([sys.executable, "-c", "import gpuslack; print(gpuslack.library_path()); print(gpuslack.version())"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    path, version = r.stdout.split()
    assert path == str(site / "gpuslack" / "libgpuslack.so") and version == gpuslack.__version__


def test_without_a_built_library_the_install_says_how_to_build_it(tmp_path):
    r = build_wheel(tmp_path, None)
    assert r.returncode != 0
    assert "Build the library first (scripts/build.sh build)" in r.stdout + r.stderr
