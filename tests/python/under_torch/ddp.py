"""A small DistributedDataParallel training loop over the NCCL backend, one
process per rank, as `torchrun --nproc_per_node N ddp.py` starts it: the
torch test `torch.ddp` (ddp_run.py) runs it on the simulated device under
gpuslack, and so can anyone (scripts/sim-torch.sh's environment, torchrun
from the pinned torch).

The model is a stack of Linear layers (cuBLAS: the simulated libcublas.so.13
answers torch's matmuls without computing them) whose gradients fill
DDP's buckets (bucket_cap_mb, default 25): with the default sizes, 5 layers
of 1024 -> 2048 -> 2048 -> 2048 -> 2048 -> 1024, fp32, 64 MiB of gradients.
DDP 2.15 all-reduces them in one bucket in the first step (its initial
bucketing is off without find_unused_parameters), then in the buckets it
rebuilt in the order the gradients became ready (about 24 and 40 MiB). Values
are garbage on the simulated device (no kernel computes), so nothing here
looks at them; what the loop shows is NCCL's work as torch issues it
(ProcessGroupNCCL: ncclCommInitRankConfig with the unique id through
torchrun's TCPStore, its watchdog polling ncclCommGetAsyncError and CUDA
events, DDP's broadcast of the parameters at construction and the gradient
all-reduces on its own NCCL stream), then one all-reduce in a subgroup of
the even or the odd ranks (ncclCommSplit).

    ddp.py [--steps N] [--width N] [--layers N] [--bucket-cap-mb N]

Prints one line per rank, `ddp: {...}` (JSON): rank, world size, device,
steps run, gradient bytes, bucket cap, the rank's subgroup and the first
values of its all-reduce there.
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--width", type=int, default=1024, help="input width; hidden layers are twice as wide")
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    a = p.parse_args(argv)

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    # device_id binds the communicator to this rank's device at once (eager
    # init: ncclCommInitRankConfig runs here, not at the first collective).
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)
    hidden = 2 * a.width
    layers = [torch.nn.Linear(a.width, hidden)]
    for _ in range(a.layers - 2):
        layers += [torch.nn.ReLU(), torch.nn.Linear(hidden, hidden)]
    layers += [torch.nn.ReLU(), torch.nn.Linear(hidden, a.width)]
    model = torch.nn.Sequential(*layers).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local_rank], bucket_cap_mb=a.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)

    x = torch.randn(a.batch, a.width, device=device)
    for _ in range(a.steps):
        opt.zero_grad(set_to_none=True)
        loss = ddp(x).square().mean()
        loss.backward()
        opt.step()
    torch.cuda.synchronize(device)

    # A subgroup: the even and the odd ranks (dist.new_group, which every
    # rank calls for every group; with the default group bound to a device,
    # torch makes each by ncclCommSplit of the default communicator, the
    # ranks outside it splitting with NCCL_SPLIT_NOCOLOR). One all-reduce in
    # each of a tensor copied from the host (copies carry real values on the
    # simulated device; kernels do not): the sum of its ranks' rank + 1.
    pairs = [list(range(start, world, 2)) for start in (0, 1)]
    groups = [dist.new_group(p) for p in pairs]
    mine = rank % 2
    t = torch.full((1 << 18,), float(rank + 1)).to(device)
    dist.all_reduce(t, group=groups[mine])
    group_sum = t[:4].cpu().tolist()
    dist.barrier()
    grad_bytes = sum(q.numel() * q.element_size() for q in model.parameters())
    # One write of the whole line, newline included: the ranks share one
    # pipe, and print() writes the text and its newline apart when stdout is
    # unbuffered, so two ranks' lines could join (this stop's CI: "Extra
    # data" in one line). A write of under PIPE_BUF bytes to a pipe is atomic.
    line = "ddp: " + json.dumps({"rank": rank, "world_size": world, "device": str(device), "steps": a.steps,
                                 "grad_bytes": grad_bytes, "bucket_cap_mb": a.bucket_cap_mb,
                                 "group": pairs[mine], "group_sum": group_sum}) + "\n"
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), line.encode())
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
