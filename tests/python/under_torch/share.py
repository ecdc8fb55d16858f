"""torch.multiprocessing sharing a CUDA tensor between two processes on the
simulated device (run.py share): `python share.py [use]` prints one line,
`share: {...}` (JSON). With `use`, gpuslack.torch.use() first (torch's
pluggable allocator); otherwise whatever allocator the environment gives
(torch's, or torch's under LD_PRELOAD=libgpuslack.so).

Kernels compute nothing on the simulated device, so bytes move only by
copies: the producer copies a pattern in, the consumer (a spawned process,
as torch requires for CUDA) checks it through a copy out, copies another
pattern into the same memory, and the producer checks that. Also shared: a
view at an offset into the storage (torch shares the storage's base and the
offset).
"""
import json
import sys
import traceback

import torch
import torch.multiprocessing as mp

N = 3 << 20  # bytes: more than one 2 MiB granule


def pattern(seed, n=N):
    return (torch.arange(n, dtype=torch.int64) * seed % 251).to(torch.uint8)


def consumer(q, back):
    try:
        whole, view = q.get()
        ok_whole = bool(torch.equal(whole.cpu(), pattern(7)))
        ok_view = bool(torch.equal(view.cpu(), pattern(7)[1000:]))
        whole.copy_(pattern(13))
        torch.cuda.synchronize()
        back.put({"consumer_saw": ok_whole and ok_view, "view_offset": view.storage_offset()})
    except Exception as e:  # noqa: BLE001 - reported to the producer
        back.put({"consumer_error": "%s: %s" % (type(e).__name__, e)})


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "use":
        import gpuslack.torch as gt
        gt.use()
    ctx = mp.get_context("spawn")
    x = torch.empty(N, dtype=torch.uint8, device="cuda")
    x.copy_(pattern(7))
    torch.cuda.synchronize()
    out = {}
    # What the queue's feeder thread does to the tensor (reduce_tensor), done
    # here so that a refusal shows: the storage's IPC handle, whose magic
    # says whose it is (gpuslack's "gpuslkB1", the simulated runtime's
    # "gpusimIP").
    try:
        handle = x.untyped_storage()._share_cuda_()[1]
        out["handle"] = "gpuslack" if b"gpuslkB1" in handle else "runtime" if b"gpusimIP" in handle else "other"
    except Exception as e:  # noqa: BLE001 - what torch refuses, reported
        out["producer_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
        print("share: " + json.dumps(out, sort_keys=True), flush=True)
        return
    q, back = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=consumer, args=(q, back))
    p.start()
    q.put((x, x[1000:]))
    out.update(back.get(timeout=60))
    p.join(60)
    out["consumer_exit"] = p.exitcode
    out["producer_sees"] = bool(torch.equal(x.cpu(), pattern(13)))
    print("share: " + json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
