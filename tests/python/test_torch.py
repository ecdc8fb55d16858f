"""gpuslack.torch without torch: what works before torch is imported.

gpuslack.torch under real torch runs on the simulated device in the
Release build (tests/python/under_torch/, ctests torch.gpuslack.*); the
cases whose values must be right run on a real GPU only
(tests/gpu/torch_cases.py, part of the GPU check)."""
import os
import subprocess
import sys

import pytest

from conftest import SHIM
import gpuslack.torch as gtorch


def test_device_arguments_without_torch():
    assert gtorch._device_index(2) == 2
    assert gtorch._device_index("cuda:1") == 1
    with pytest.raises(ValueError):
        gtorch._device_index("cpu")
    with pytest.raises(TypeError):
        gtorch._device_index(True)

    class Dev:  # a torch.device's shape
        type, index = "cuda", 3
    assert gtorch._device_index(Dev()) == 3


def test_importing_gpuslack_torch_does_not_import_torch():
    r = subprocess.run([sys.executable, "-c", "import sys, gpuslack.torch; assert 'torch' not in sys.modules"],
                       env=dict(os.environ, PYTHONPATH=SHIM), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_the_gpu_cases_script_runs_without_torch_until_a_case_runs():
    # tests/gpu/torch_cases.py is run on a real GPU only; here: it compiles,
    # and names its cases without importing torch.
    script = os.path.join(os.path.dirname(SHIM), "tests", "gpu", "torch_cases.py")
    r = subprocess.run([sys.executable, "-B", script, "no_such_case"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "use_then_train" in r.stderr and "no_such_case" in r.stderr
