"""tests/gpu/torch_allocators.py without a GPU or torch: it compiles, its
arguments, the environment of each way, the comparison, the table, and
that it says it cannot run where there is no CUDA torch."""
import importlib.util
import os
import subprocess
import sys

import pytest

from conftest import LIBRARY, ROOT

SCRIPT = os.path.join(ROOT, "tests", "gpu", "torch_allocators.py")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("torch_allocators", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_it_compiles():
    # In memory: py_compile would write tests/gpu/__pycache__ into the
    # checkout, whatever PYTHONDONTWRITEBYTECODE says.
    with open(SCRIPT, encoding="utf-8") as f:
        compile(f.read(), SCRIPT, "exec")


def test_arguments(script):
    a = script.parse_args([])
    assert a.ways == ["default", "expandable", "use", "preload"] and a.steps == 200 and a.child is None
    a = script.parse_args(["--steps", "5", "--ways", "default,use", "--tolerance", "0"])
    assert a.ways == ["default", "use"] and a.steps == 5 and a.tolerance == 0
    for bad in (["--ways", "use,default"], ["--ways", "default,bogus"], ["--steps", "0"],
                ["--min-len", "9", "--max-len", "8"], ["--d-model", "100", "--heads", "8"], ["--tolerance", "nan"]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)


def test_each_way_runs_with_its_own_environment(script):
    base = {"PATH": "/bin", "LD_PRELOAD": "/x.so", "PYTORCH_CUDA_ALLOC_CONF": "garbage", "GPUSLACK_CONF": "y"}
    envs = {w: script.child_env(base, w, "/lib/libgpuslack.so") for w in script.WAYS}
    assert all(e["PATH"] == "/bin" and e["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8" for e in envs.values())
    assert "PYTORCH_CUDA_ALLOC_CONF" not in envs["default"] and "LD_PRELOAD" not in envs["default"]
    assert envs["expandable"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert envs["use"]["GPUSLACK_LIBRARY"] == "/lib/libgpuslack.so" and "LD_PRELOAD" not in envs["use"]
    assert envs["preload"]["LD_PRELOAD"] == "/lib/libgpuslack.so"
    assert envs["preload"]["GPUSLACK_CONF"].startswith("allocator:vmm")
    argv = script.child_argv(script.parse_args(["--steps", "7", "--seed", "3"]), "use")
    assert argv[2:4] == ["--child", "use"] and "7" in argv
    child = script.parse_args(argv[2:])
    assert child.child == "use" and child.steps == 7 and child.seed == 3


def test_the_batches_are_the_same_for_every_way(script):
    a = script.parse_args(["--steps", "50", "--warmup", "2", "--min-len", "8", "--max-len", "64"])
    lengths = script.batch_lengths(a)
    assert lengths == script.batch_lengths(a) and len(lengths) == 52
    assert min(lengths) >= 8 and max(lengths) <= 64 and len(set(lengths)) > 10


def result(way, losses, **kw):
    r = {"way": way, "losses": losses, "step_ms": [3.0, 1.0, 2.0], "peak_allocated": 3 << 20,
         "peak_reserved": 4 << 20, "free_syncs": 0, "stall_s": None}
    r.update(kw)
    return r


def test_comparison(script):
    ok = [result("default", [9.0, 8.0]), result("use", [9.0, 8.0004]), result("preload", [9.0, 8.0])]
    assert script.compare(ok, 1e-4) == [] and ok[1]["loss_diff"] == pytest.approx(5e-5)
    bad = [result("default", [9.0, 8.0]), result("expandable", [9.0, 8.1]), result("use", [9.0]),
           result("preload", [float("nan"), 8.0])]
    problems = script.compare(bad, 1e-3)
    assert [p.split(":")[0] for p in problems] == ["expandable", "use", "preload"], problems


def test_table(script):
    rs = [result("default", [9.0, 8.0], free_syncs=12), result("use", [9.0, 8.0], stall_s=0.25, peak_reserved=None)]
    script.compare(rs, 1e-3)
    lines = script.format_table(rs)
    assert lines[0].split()[:4] == ["way", "step", "ms", "(median)"]
    assert set(lines[1]) <= {"-", " "}
    assert len({len(l) for l in lines[:3]}) == 1  # aligned
    default, use = lines[2].split(), lines[3].split()
    assert default[:8] == ["default", "2.00", "3.0", "MiB", "4.0", "MiB", "75.0%", "12"]
    assert default[-2:] == ["8.000000", "0.00e+00"]
    assert use[:6] == ["use", "2.00", "3.0", "MiB", "-", "-"] and "0.250" in use


def test_the_simulated_device_is_told_apart(script):
    assert script.is_simulated("gpusim simulated device 0")
    assert not script.is_simulated("NVIDIA H200") and not script.is_simulated(None)
    err = "warning\ngpusim: unanswered cublas: cublasStrsv_v2\nmore\n"
    assert script.simulator_lines(err) == ["gpusim: unanswered cublas: cublasStrsv_v2"]


def test_result_lines_are_found_among_other_output(script):
    out = "noise\nRESULT {\"way\": \"x\"}\nmore noise\n"
    assert script.parse_result(out) == {"way": "x"}
    assert script.parse_result("nothing") is None


def test_without_a_cuda_torch_it_says_it_cannot_run():
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a CUDA torch is here: run the check itself (tests/gpu/torch_allocators.py)")
    except ImportError:
        pass
    env = dict(os.environ)
    if LIBRARY:
        env["GPUSLACK_LIBRARY"] = LIBRARY
    r = subprocess.run([sys.executable, SCRIPT, "--steps", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("torch_allocators: "), r.stderr
