"""gpuslack.step() and gpuslack.torch.mark_steps(): a step mark reaches the
library a process runs under (gpuslack_step), does nothing and loads
nothing in a process not under gpuslack, and the torch hook marks one step
per step of the optimizer it follows (a stand-in for torch here: the
system's Python has none; the hooks are torch 2.0's public API)."""
import os
import subprocess
import sys
import types

import pytest

from conftest import LIBRARY, SHIM, needs_library
import gpuslack
import gpuslack.torch as gtorch


def run_python(code, **env):
    e = dict(os.environ)
    e.pop("GPUSLACK_LIBRARY", None)
    e.pop("LD_PRELOAD", None)
    e.update(env)
    e["PYTHONPATH"] = SHIM
    e["GPUSLACK_CONF"] = "text_summary:off,json_summary:false"
    e["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0"
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)


@needs_library
def test_step_outside_gpuslack_does_nothing_and_loads_nothing():
    # A library the package could load is there (GPUSLACK_LIBRARY), but the
    # process does not run under it: a copy loaded now would see no CUDA call.
    r = run_python("import gpuslack\n"
                   "for _ in range(3): gpuslack.step()\n"
                   "assert gpuslack._step_fn is None\n"
                   "assert not [l for l in open('/proc/self/maps') if 'libgpuslack' in l]\n"
                   "print('ok')", GPUSLACK_LIBRARY=LIBRARY)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_step_without_any_library_does_nothing():
    r = run_python("import gpuslack; gpuslack.step(); print('ok')", GPUSLACK_LIBRARY="/nonexistent/libgpuslack.so")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@needs_library
def test_step_under_gpuslack_marks_through_the_library():
    r = run_python("import gpuslack\n"
                   "gpuslack.step(); gpuslack.step()\n"
                   "assert gpuslack._step_fn is not None\n"
                   "assert gpuslack._lib.load().path.endswith('libgpuslack.so')\n"
                   "print('ok')", LD_PRELOAD=LIBRARY)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.fixture
def marks(monkeypatch):
    """Counts gpuslack.step()'s calls into the library."""
    calls = []
    monkeypatch.setattr(gpuslack, "_step_fn", lambda: calls.append(1))
    return calls


class FakeOptimizer:
    """What mark_steps() uses of a torch.optim.Optimizer: its step hooks."""

    def __init__(self, global_hooks):
        self.hooks, self.global_hooks = [], global_hooks

    def register_step_post_hook(self, hook):
        self.hooks.append(hook)
        return types.SimpleNamespace(remove=lambda: self.hooks.remove(hook))

    def step(self):
        for hook in list(self.global_hooks) + list(self.hooks):
            hook(self, (), {})


def test_mark_steps_follows_the_optimizer_it_is_given(marks):
    opt = FakeOptimizer([])
    handle = gtorch.mark_steps(opt)
    opt.step()
    opt.step()
    assert len(marks) == 2
    handle.remove()
    opt.step()
    assert len(marks) == 2


def test_mark_steps_without_an_optimizer_follows_the_first_that_steps(marks, monkeypatch):
    global_hooks = []

    def register(hook):
        global_hooks.append(hook)
        return types.SimpleNamespace(remove=lambda: global_hooks.remove(hook))

    optimizer_module = types.ModuleType("torch.optim.optimizer")
    optimizer_module.register_optimizer_step_post_hook = register
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    monkeypatch.setitem(sys.modules, "torch.optim", types.ModuleType("torch.optim"))
    monkeypatch.setitem(sys.modules, "torch.optim.optimizer", optimizer_module)
    handle = gtorch.mark_steps()
    generator, discriminator = FakeOptimizer(global_hooks), FakeOptimizer(global_hooks)
    for _ in range(3):  # a GAN's loop: two optimizers, one step each per iteration
        discriminator.step()
        generator.step()
    assert len(marks) == 3
    handle.remove()
    discriminator.step()
    assert len(marks) == 3
