// The topology, read once per process: what its GPUs' links carry (NVML:
// NVLink links, their generation, the PCIe link; peer access through the
// runtime), the node's NICs from sysfs, and which NIC is nearest each GPU
// (node.h holds the data). The summary's "topology" section
// (report/topology.h) is built from snapshot().
//
// When, and on which thread. Loading libnvidia-ml, nvmlInit and walking
// sysfs must never happen on an application thread (docs/design.md,
// principle 5). gpuslack already has one background thread for such work,
// the reporter (session/signals.h), whose once-a-second tick drives the
// device health sampler; the topology rides on the same tick rather than
// start a thread of its own, or read at the summary (the exit summary runs
// on the exiting application thread). So:
//   - tick() (the reporter, at its start and then once a second): the first
//     call reads the node (NVML loaded and initialized, its device count,
//     the NICs from sysfs); every call then reads each device whose primary
//     context became active since, once (its PCI bus id from the driver,
//     its links from NVML, its place in sysfs) and the peer access between
//     the devices read. Once every device of the node is read, a tick costs
//     one lock;
//   - read_if_ready() (a summary, any thread): reads devices that became
//     active since the last tick, but only once the node was read: it never
//     loads or initializes anything (as health::sample_if_ready does), so a
//     device used only in the last second is still in the summary.
// A run that ends before the reporter's first tick completes reports the
// topology unknown, with that reason.
//
// Sysfs is read under sysfs_root() (sysfs.h: "/" but in tests). A file
// that does not parse costs one log line for the whole read, naming the
// first and counting the rest.
//
// Thread safety: every function, any thread (one internal lock, held
// through the reads: a few milliseconds, once).
#pragma once

#include <string>

#include "topology/node.h"

namespace gpuslack {
namespace topology {

enum class Status { kOff, kNotRead, kRead };
const char* status_name(Status s);  // "off", "not_read", "read"
bool status_from_name(const std::string& name, Status* out);

struct Snapshot {
  Status status = Status::kOff;
  std::string detail;  // why not read
  NodeTopology node;
};

// session::start: whether to read it (off with device_health:off, which
// also keeps NVML out of the process, and in a secure process).
void configure(bool enabled);
bool enabled();
// The reporter thread (see above).
void tick();
// A summary: devices newly in use, if the node was read already.
void read_if_ready();
// Whether a device in use has been read.
bool device_read();
// Note [Last samples before the runtime's teardown] (session/session.cc):
// reads the devices newly in use one last time, then never again (tick and
// read_if_ready do nothing).
void take_last_read();
Snapshot snapshot();
// In a forked child: the parent's readings and lock are left behind; off
// until a new session configures it.
void after_fork_child();

}  // namespace topology
}  // namespace gpuslack
