"""The GPU timeline under real PyTorch on the simulated device (torch_sim.py
timeline): a training loop whose DataLoader is slow (each sample is
"decoded" on the host for --decode-ms), its steps marked with
gpuslack.torch.mark_steps, and torch.profiler started in the middle of the
run for a few steps, as a user profiling a job would.

    timeline.py [--steps N] [--decode-ms MS] [--profile-at K]

Prints one line, `timeline: {...}` (JSON): the steps run, the time the loop
spent waiting for batches (measured here), and what torch.profiler saw: the
number of its events on the GPU (kernels, copies, memsets), which must be
more than none, so that gpuslack stepping aside broke nothing.
"""
import argparse
import json
import time

import torch
import gpuslack.torch


class SlowDataset(torch.utils.data.Dataset):
    """Samples that take `decode_s` of host work each, as decoding images."""

    def __init__(self, n, features, decode_s):
        self.n, self.features, self.decode_s = n, features, decode_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        end = time.perf_counter() + self.decode_s
        x = 0
        while time.perf_counter() < end:
            x += 1
        return torch.full((self.features,), float(i % 7)), i % 10


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--decode-ms", type=float, default=5)
    p.add_argument("--profile-at", type=int, default=12)
    a = p.parse_args(argv)
    features = 64
    data = SlowDataset(a.steps * a.batch, features, a.decode_ms * 1e-3)
    # In-process loading (num_workers=0): the training thread decodes, with
    # no CUDA call in flight, and the GPU waits: host-bound.
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, num_workers=0)
    model = torch.nn.Sequential(torch.nn.LayerNorm(features), torch.nn.ReLU(), torch.nn.LayerNorm(features)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gpuslack.torch.mark_steps(opt)
    steps, waited, gpu_events = 0, 0.0, 0
    prof = None
    it = iter(loader)
    while True:
        t = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        waited += time.perf_counter() - t
        if steps == a.profile_at:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                      torch.profiler.ProfilerActivity.CUDA])
            prof.__enter__()
        x = x.cuda(non_blocking=True)
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        steps += 1
        if prof is not None and steps == a.profile_at + 4:
            prof.__exit__(None, None, None)
            gpu_events = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
            prof = None
    print("timeline: " + json.dumps({"steps": steps, "loader_wait_s": waited, "profiler_gpu_events": gpu_events}),
          flush=True)


if __name__ == "__main__":
    main()
