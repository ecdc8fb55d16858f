"""A small real training loop on the simulated device, for the torch tests
(run.py): a torch.nn model, Adam, a DataLoader with worker processes and
non_blocking input copies. Also the script `python -m gpuslack run -- python
train.py` runs end to end.

The model has no matrix multiply: torch's cuBLAS and cuDNN cannot load on
the simulated device (their own static runtime asks the driver for entry
points and export tables it does not simulate), so each layer is a
broadcast multiply and a sum, which torch computes with its own kernels.
Kernels are simulated busy work: values are garbage, and nothing here looks
at them (no loss is printed or compared).

    train.py [--epochs N] [--workers N] [--pin-memory] [--persistent-workers]
             [--use]   (gpuslack.torch.use() first: gpuslack is torch's allocator)

Prints one line, `train: {...}` (JSON): epochs and steps run, the input
batches' device and pinnedness, and the allocator's figures as the script
sees them.
"""
import argparse
import json

import torch


class Dense(torch.nn.Module):
    """y = x W + b without a matrix multiply (no cuBLAS on the simulated
    device)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) / n_in ** 0.5)
        self.bias = torch.nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return (x.unsqueeze(-1) * self.weight).sum(-2) + self.bias


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--samples", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--pin-memory", action="store_true")
    p.add_argument("--persistent-workers", action="store_true")
    p.add_argument("--use", action="store_true", help="gpuslack.torch.use() before any CUDA work")
    a = p.parse_args(argv)
    if a.use:
        import gpuslack.torch
        gpuslack.torch.use()

    torch.manual_seed(0)
    features, classes = 64, 10
    data = torch.utils.data.TensorDataset(torch.randn(a.samples, features), torch.randint(0, classes, (a.samples,)))
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         pin_memory=a.pin_memory,
                                         persistent_workers=a.persistent_workers and a.workers > 0)
    model = torch.nn.Sequential(Dense(features, 48), torch.nn.ReLU(), torch.nn.LayerNorm(48),
                                Dense(48, classes)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    steps, pinned = 0, set()
    for _ in range(a.epochs):
        for x, y in loader:
            pinned.add(x.is_pinned())
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
    torch.cuda.synchronize()
    out = {"epochs": a.epochs, "steps": steps, "inputs_pinned": sorted(pinned), "device": str(x.device)}
    if a.use:
        import gpuslack.torch
        out["memory_stats"] = gpuslack.torch.memory_stats()
    else:
        out["memory_allocated"] = torch.cuda.memory_allocated()
        out["memory_reserved"] = torch.cuda.memory_reserved()
    print("train: " + json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
