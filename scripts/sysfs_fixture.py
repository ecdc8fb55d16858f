#!/usr/bin/env python3
"""Writes a node's network devices as sysfs shows them, under a root folder, for gpuslack's topology to read
through GPUSLACK_TEST_SYSFS_ROOT (a variable only tests and the simulated demos set: lib/topology/sysfs.h).

    scripts/sysfs_fixture.py ROOT --nics 4 --rate 400

makes ROOT/sys/class/infiniband/mlx5_0..N-1, each one ACTIVE InfiniBand port of RATE Gb/s ("400 Gb/sec (4X
NDR)", the ConnectX-7 NDR of an H100 node), on its own PCI function under one host bridge of NUMA node 0, in the
layout the kernel documents (Documentation/ABI/testing/sysfs-class-infiniband, sysfs-bus-pci; the same layout as
tests/lib/topology/sysfs_fixture.h). With one NIC per GPU, each rank's share of the network is RATE/8 GB/s per
direction: 400 Gb/s NICs give the 50 GB/s between nodes of issue 26's field report. Standard library only.
"""

import argparse
import os
import sys

_NAMES = {100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR"}


def write(root, path, text):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text + "\n")


def link(root, path, target):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.lexists(full):
        os.unlink(full)
    os.symlink(target, full)


def make(root, nics, rate):
    for i in range(nics):
        bus = 0x19 + 0x10 * i
        bdf = f"0000:{bus:02x}:00.0"
        pci = f"/sys/devices/pci0000:17/0000:17:01.0/{bdf}"
        write(root, pci + "/numa_node", "0")
        link(root, f"/sys/bus/pci/devices/{bdf}", "../../.." + pci[len("/sys"):])
        cls = f"/sys/class/infiniband/mlx5_{i}"
        link(root, cls + "/device", "../../.." + pci[len("/sys"):])
        write(root, cls + "/ports/1/state", "4: ACTIVE")
        write(root, cls + "/ports/1/rate", f"{rate} Gb/sec (4X {_NAMES.get(rate, 'NDR')})")
        write(root, cls + "/ports/1/link_layer", "InfiniBand")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="folder to write under (made if missing)")
    p.add_argument("--nics", type=int, default=4, help="InfiniBand NICs, one port each (default 4)")
    p.add_argument("--rate", type=int, default=400, help="each port's rate, Gb/s (default 400: NDR)")
    a = p.parse_args(argv)
    if a.nics < 1 or a.rate < 1:
        p.error("--nics and --rate must be positive")
    make(a.root, a.nics, a.rate)
    print(a.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
