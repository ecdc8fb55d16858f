// The device health sampler: reads NVML (cuda/nvml_api.h) for each device
// this process uses, about once a second, and folds the readings per device
// (health/device_health.h) for the summary's "device_health" and "series".
//
// When: the reporter thread (session/signals.h) calls sample() at its start
// and then once a second; that first call loads libnvidia-ml and runs
// nvmlInit, so neither ever happens on an application thread. A summary
// calls sample_if_ready() first, on whatever thread writes it (the exit
// summary: the exiting thread): it reads only when NVML is already up, and
// never loads or initializes it. At exit the last readings are taken
// before the CUDA runtime's teardown (take_last_samples), not by the exit
// summary, which runs after it.
//
// Which devices: the CUDA ordinals whose primary context is active (the
// driver's ordinals, which CUDA_VISIBLE_DEVICES already renumbered), each
// mapped once to its NVML device by PCI bus id (domain, bus and device from
// the driver's attributes). A GPU the process never used is not reported,
// so eight ranks on one node each report their own GPU.
//
// Status: "off" (device_health:off, or a secure process), "unavailable"
// with one line of why (no libnvidia-ml, nvmlInit failed, no sample yet),
// "measured" once NVML answered.
//
// Thread safety: every function, any thread (one internal lock; a sample
// holds it for the NVML calls, a few tens of microseconds per device).
#pragma once

#include <string>
#include <vector>

#include "health/device_health.h"

namespace gpuslack {
namespace health {

enum class Status { kOff, kUnavailable, kMeasured };
const char* status_name(Status s);

struct Snapshot {
  Status status = Status::kOff;
  std::string detail;  // why unavailable
  std::vector<DeviceHealth> devices;  // by CUDA ordinal
};

// session::start: whether to sample (device_health:auto). Loads nothing.
// `origin_s`: clock::monotonic_seconds() at the session's start, the origin
// of the readings' times (and of the series).
void configure(bool enabled, double origin_s);
bool enabled();
// The reporter thread: loads and initializes NVML on the first call, then
// reads every device in use.
void sample();
// A summary: reads every device in use if NVML is up already (nothing once
// the last samples were taken).
void sample_if_ready();
// Whether a device in use (its primary context active) has been read.
bool device_read();
// Note [Last samples before the runtime's teardown] (session/session.cc):
// reads every device in use one last time if NVML is up, then never again
// (sample and sample_if_ready do nothing).
void take_last_samples();
Snapshot snapshot();
// In a forked child: the parent's readings and lock are left behind;
// sampling is off until a new session configures it.
void after_fork_child();

}  // namespace health
}  // namespace gpuslack
