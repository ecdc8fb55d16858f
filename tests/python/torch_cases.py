"""Bodies of the PyTorch tests (test_torch.py), each run in its own process
on a real GPU: use() must come before CUDA is initialized, so every case
starts from a fresh interpreter."""
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
