"""gpuslack.torch: use() on a real GPU with a CUDA-enabled PyTorch (skipped
otherwise; bodies in torch_cases.py, one process each), and what works
without torch."""
import os
import subprocess
import sys

import pytest

from conftest import HERE, LIBRARY, SHIM
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


def cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch %s has no usable CUDA device" % torch.__version__)
    if LIBRARY is None:
        pytest.skip("libgpuslack.so is not built")


@pytest.mark.parametrize("case", ["use_then_train", "the_results_match_the_cpu",
                                  "use_after_the_first_allocation_says_so", "use_after_cuda_init_says_so"])
def test_torch(case):
    cuda_torch()
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "GPUSLACK_CONF", "PYTORCH_CUDA_ALLOC_CONF", "LD_LIBRARY_PATH")}
    env.update(GPUSLACK_LIBRARY=LIBRARY, PYTHONPATH=os.pathsep.join([SHIM, HERE]),
               GPUSLACK_CONF="text_summary:off,json_summary:false")
    r = subprocess.run([sys.executable, "-c", "import torch_cases; torch_cases.%s()" % case], env=env, cwd=HERE,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, "%s\n%s" % (r.stdout, r.stderr)
