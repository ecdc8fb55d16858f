// ReplayGpu: the GPU that bench/trace_replay replays a trace against: one
// real stream per stream of the trace, and a model of how long the GPU
// takes to finish what it was given.
//
// Note [The replay's GPU]: a block freed through the stream-less path, or
// freed on one stream and wanted on another, becomes reusable only once
// events recorded behind it complete (free_epochs.h). A trace has no
// kernels, so the replay runs an idle GPU that nevertheless takes time: the
// legacy stream is held by a host function while the allocator runs, and
// released (then drained) before each allocation, settle(). So every event
// recorded during an earlier call has completed when the next allocation
// begins, and none recorded during the current call has; as on a real GPU,
// where a cudaEventQuery right after the record answers cudaErrorNotReady.
// Without the hold the result would depend on how fast the simulator's
// stream thread ran, and differ from run to run.
//
// The trace's other streams are created blocking (cudaStreamCreate): work
// on a blocking stream waits for the legacy stream's earlier work (the
// simulated device models that implicit synchronization:
// tests/simcuda/stream.cc), so the one hold holds them all.
//
// The hold has a bound. An allocator that cannot serve an allocation
// otherwise waits for the GPU (cudaEventSynchronize in FreeEpochs::
// wait_all, cudaDeviceSynchronize): on a real GPU that wait ends when the
// kernels finish, but here the GPU finishes only when the replay thread,
// which is the one waiting, lets it: a deadlock. So once one allocator call
// has lasted kCallBound (50 ms; a cached call takes microseconds, a map of
// a large block a few milliseconds) the GPU finishes by itself: the host
// function returns, the streams drain, and the wait ends. Such a call is a
// stall the allocator records (DeviceStats::stall_s); timeouts() counts
// them. The bound runs only during an allocator call (call_begins ..
// call_ends), so a slow replay thread between calls (a loaded machine)
// changes nothing. The hold looks at the running call every kTick, rather
// than being woken by each call, which would cost every timed call a
// thread wake-up on the simulated device.
//
// Thread safety: one replay thread makes every call; the host function
// runs on the simulated device's stream thread and meets it under mu_
// (the hold's end) and through call_started_ns_ (atomic).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace gpuslack {
namespace bench {

class ReplayGpu {
 public:
  // How long one allocator call may wait for the held GPU, and how often
  // the hold looks (so the bound is 50 to 55 ms; a call costs no wake-up).
  static constexpr std::chrono::milliseconds kCallBound{50};
  static constexpr std::chrono::milliseconds kTick{5};

  ReplayGpu() = default;
  // Lets go if held; destroys the streams stream() made (after the
  // allocator that used them is gone: declare this first).
  ~ReplayGpu();
  ReplayGpu(const ReplayGpu&) = delete;
  ReplayGpu& operator=(const ReplayGpu&) = delete;

  // Holds the legacy stream, and through it every blocking stream. False
  // if cudaLaunchHostFunc failed (nothing is held then).
  bool hold();
  // Lets the GPU finish all it was given, then holds it again.
  bool settle();
  // Lets go and waits until every stream has drained.
  void let_go();

  // The stream for the trace's stream `id`, made on first use: 0 is the
  // legacy stream (nullptr), any other a blocking stream of its own.
  // std::nullopt if cudaStreamCreate failed.
  std::optional<cudaStream_t> stream(uint64_t id);
  size_t streams() const { return 1 + created_.size(); }

  // An allocator call begins, or ends (Note [The replay's GPU]: the bound).
  void call_begins();
  void call_ends();

  // Calls the model made that the simulated device counts
  // (gpusim_calls("cudaDeviceSynchronize")): a replay subtracts them.
  long device_syncs() const { return device_syncs_; }
  // Allocator calls that outlasted kCallBound and had the GPU finish.
  uint64_t timeouts() const { return timeouts_.load(); }

 private:
  static void CUDART_CB hold_function(void* self);

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;  // under mu_: the current hold is over
  std::atomic<int64_t> call_started_ns_{0};  // steady_clock, since its epoch; 0: no call
  std::atomic<uint64_t> timeouts_{0};
  bool held_ = false;
  long device_syncs_ = 0;
  std::map<uint64_t, cudaStream_t> created_;
};

}  // namespace bench
}  // namespace gpuslack
