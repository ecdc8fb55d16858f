"""Shared set-up of the Python tests (tests/python).

ctest runs them (tests/CMakeLists.txt, test python.pytest) with the built
files in the environment: GPUSLACK_LIBRARY (libgpuslack.so), SIMCUDA_DIR
(the simulated device's libraries), TRAIN_LOOP (the demo, or "none" when the
benchmarks are not built). Run by hand, `python3 -m pytest tests/python`
takes them from GPUSLACK_BUILD_DIR, default ./build, and skips what is not
built there.

Tests that touch the library's process-wide state (its options, its
allocator, its ledger) run their body in a fresh Python process:
`run_case("name")` runs abi_cases.name() under the simulated device and
fails with the child's output if it fails. Tests that render through the
library (compare, the job report, gpuslack.labels) do too, by
`run_in_child(module, name)`: the library is never mapped into pytest's own
process (test_lib.py checks that it is not).
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(ROOT, "python_shim")
BUILD = os.environ.get("GPUSLACK_BUILD_DIR") or os.path.join(ROOT, "build")

sys.path.insert(0, SHIM)  # the package from the checkout, not an installed copy

# No __pycache__ in the checkout, for this process and the Pythons it starts,
# also when run by hand (ctest sets PYTHONDONTWRITEBYTECODE itself).
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"


def built(var, default):
    """The path in $var (which must exist), else `default` if it exists,
    else None."""
    given = os.environ.get(var)
    if given == "none":
        return None
    if given:
        assert os.path.exists(given), "%s=%s does not exist" % (var, given)
        return os.path.abspath(given)
    return os.path.abspath(default) if os.path.exists(default) else None


LIBRARY = built("GPUSLACK_LIBRARY", os.path.join(BUILD, "libgpuslack.so"))
SIMCUDA = built("SIMCUDA_DIR", os.path.join(BUILD, "simcuda"))
TRAIN_LOOP = built("TRAIN_LOOP", os.path.join(BUILD, "train_loop"))

needs_library = pytest.mark.skipif(LIBRARY is None or SIMCUDA is None,
                                   reason="libgpuslack.so and the simulated device are not built (%s)" % BUILD)
needs_demo = pytest.mark.skipif(TRAIN_LOOP is None, reason="the demo (train_loop) is not built")


def sim_env(conf="allocator:vmm,text_summary:off,json_summary:false", preload=False, **extra):
    """The environment of a child process on the simulated device."""
    env = dict(os.environ)
    for k in ("GPUSLACK_CONF", "GPUSLACK_OUTPUT", "LD_PRELOAD", "PYTORCH_CUDA_ALLOC_CONF"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = SIMCUDA + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["SIMCUDA_DIR"] = SIMCUDA
    env["GPUSLACK_LIBRARY"] = LIBRARY
    env["PYTHONPATH"] = os.pathsep.join([SHIM, HERE])
    env["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    if conf is not None:
        env["GPUSLACK_CONF"] = conf
    if preload:
        env["LD_PRELOAD"] = LIBRARY
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_case(name, timeout=120, **kw):
    """Runs abi_cases.<name>() in a fresh process on the simulated device;
    returns its CompletedProcess (stdout, stderr) when it passed."""
    r = subprocess.run([sys.executable, "-c", "import abi_cases; abi_cases.%s()" % name], env=sim_env(**kw),
                       cwd=HERE, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        pytest.fail("%s exited %d\n--- stdout\n%s\n--- stderr\n%s" % (name, r.returncode, r.stdout, r.stderr),
                    pytrace=False)
    return r


def run_in_child(module, name, timeout=120):
    """Runs <module>.<name>() (a module of tests/python) in a fresh Python
    with the built library named (GPUSLACK_LIBRARY); fails with the child's
    output if it fails."""
    r = subprocess.run([sys.executable, "-c", "import %s; %s.%s()" % (module, module, name)], env=sim_env(conf=None),
                       cwd=HERE, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        pytest.fail("%s.%s exited %d\n--- stdout\n%s\n--- stderr\n%s" % (module, name, r.returncode, r.stdout,
                                                                         r.stderr), pytrace=False)
    return r
