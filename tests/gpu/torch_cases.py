"""gpuslack.torch.use() on a real GPU: the cases whose values must be right
(on the simulated device values are garbage; tests/python/under_torch/
covers use() there).

    python3 tests/gpu/torch_cases.py [CASE ...]     # every case by default

Needs a CUDA torch and libgpuslack.so (GPUSLACK_LIBRARY, or as the gpuslack
package finds it; python_shim/ on PYTHONPATH). Each case runs in a fresh
interpreter, since use() must come before CUDA is initialized. Exit 0 when
every case passed, 1 when one failed, 2 when it cannot run.
"""
import os
import subprocess
import sys

if __name__ != "__main__":  # a case's process; main() itself needs neither
    import torch

    import gpuslack
    import gpuslack.torch as gtorch


def use_then_train():
    gtorch.use()
    gtorch.use()  # again: nothing
    assert gtorch.is_used()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(20):
        x = torch.randn(64 + step * 7, 256, device="cuda")  # sizes vary: blocks come and go
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    s = gpuslack.device_stats(torch.cuda.current_device())
    assert s is not None and s["allocations"] > 20 and s["frees"] > 0, s
    assert gtorch.memory_allocated() == s["allocated"] > 0
    assert gtorch.max_memory_allocated() >= gtorch.memory_allocated()
    assert gtorch.max_memory_reserved() >= gtorch.max_memory_allocated()
    keys = gtorch.memory_stats(torch.device("cuda", 0))
    assert keys["allocated_bytes.all.current"] == s["allocated"] and keys["num_ooms"] == 0, keys
    # torch's own statistics raise under a pluggable allocator: ours answer.
    try:
        torch.cuda.memory_stats()
    except RuntimeError:
        pass
    before = gtorch.memory_allocated()
    del model, opt, x, loss
    torch.cuda.synchronize()
    assert gtorch.memory_allocated() < before
    gtorch.empty_cache()


def the_results_match_the_cpu():
    gtorch.use()
    torch.manual_seed(1)
    a, b = torch.randn(300, 200), torch.randn(200, 100)
    side = torch.cuda.Stream()
    ga, gb = a.cuda(), b.cuda()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        gc = ga @ gb
    gtorch.record_stream(ga, side)
    ga.record_stream(side)  # torch's own: does nothing under a pluggable allocator
    del ga
    torch.cuda.current_stream().wait_stream(side)
    filler = [torch.full((300, 200), 7.0, device="cuda") for _ in range(4)]  # would land on ga if reused early
    assert torch.allclose(gc.cpu(), a @ b, rtol=1e-4, atol=1e-4)
    del filler


def use_after_the_first_allocation_says_so():
    x = torch.ones(4, device="cuda")
    try:
        gtorch.use()
    except RuntimeError as e:
        assert "must come before the first CUDA allocation" in str(e), e
        assert "bytes of CUDA memory are allocated already" in str(e), e
    else:
        raise AssertionError("use() after an allocation did not raise")
    assert not gtorch.is_used()
    assert x.sum().item() == 4


def use_after_cuda_init_says_so():
    torch.cuda.init()
    try:
        gtorch.use()
    except RuntimeError as e:
        assert "must come before the first CUDA allocation" in str(e), e
    else:
        raise AssertionError("use() after torch.cuda.init() did not raise")


CASES = ["use_then_train", "the_results_match_the_cpu", "use_after_the_first_allocation_says_so",
         "use_after_cuda_init_says_so"]


def main(argv):
    cases = argv or CASES
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print("torch_cases: no case %s (cases: %s)" % (", ".join(unknown), ", ".join(CASES)), file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    shim = os.path.join(here, "..", "..", "python_shim")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GPUSLACK_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
    env.update(PYTHONPATH=os.pathsep.join([shim, here]), GPUSLACK_CONF="text_summary:off,json_summary:false",
               PYTHONDONTWRITEBYTECODE="1")
    failed = 0
    for case in cases:
        r = subprocess.run([sys.executable, "-c", "import torch_cases; torch_cases.%s()" % case], env=env,
                           cwd=here, capture_output=True, text=True, timeout=300)
        print("%-40s %s" % (case, "ok" if r.returncode == 0 else "FAILED"))
        if r.returncode != 0:
            failed += 1
            sys.stderr.write(r.stdout + r.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
