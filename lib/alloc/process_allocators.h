// The process's VMM allocators: one DeviceAllocator per device, made on the
// first allocation on that device when GPUSLACK_CONF selects allocator:vmm.
//
// Pass-through: when the knob says native, when the driver has no VMM
// support, or when the reservation fails, device_allocator() returns
// nullptr (with one log line, once per device) and the caller uses the
// runtime's own cudaMalloc. A failure that may pass (no CUDA context could
// be bound on the calling thread) makes that one call pass through and
// never switches the allocator off. Pointers the VMM allocators do not own go to the
// real cudaFree: owner() tells, lock-free.
//
// Each device reserves 1.125 times its memory of virtual address space for
// large blocks, so that fragmentation of the address space can never be
// what runs out, and as much again for the small pool (Reservation).
//
// Thread safety: any thread. device_allocator() creates under a mutex, once
// per device; owner() reads published pointers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloc/device_allocator.h"

namespace gpuslack {
namespace alloc {

inline constexpr int kMaxDevices = 64;

// Whether the configuration selects the VMM allocator.
bool vmm_selected();
// The allocator of `device`, or nullptr for pass-through.
DeviceAllocator* device_allocator(int device);

// Note [Saying the allocator is off]: allocator:vmm is selected but a
// device passes through for good (no driver with the VMM calls, no VMM
// support on the device, its reservation failed). Each such device is
// logged once, with why, when its first allocation asks, and listed here
// for the summary (its allocator section says off and why; no finding
// recommends allocator:vmm, which is set already). Devices in order.
struct Refusal {
  int device = 0;
  std::string why;
};
std::vector<Refusal> refusals();

// Note [Where device memory comes from]: whether an allocation hook
// (cudaMalloc, cudaMallocAsync) is served by gpuslack's VMM allocator or by
// the runtime is decided here and nowhere else. The hook asks for the
// device memory of the calling thread's current device and forwards:
//   - untouched: to the runtime's own call, as without gpuslack: the
//     configuration says allocator:native (then no other call is made:
//     the current device is not even asked), or the current device is
//     unknown (cudaGetDevice failed);
//   - resource nullptr: to the runtime's call through interpose's retry
//     (Note [Retrying a pass-through allocation]): the VMM allocator is off
//     on this device (no VMM support, its reservation failed), or, for
//     this call only, no CUDA context could be bound on the thread;
//   - else to `resource`, the device's VMM allocator (made on first use),
//     and to the runtime through the retry only if it has no block.
// Before a VMM allocator serves the call, the thread's device has a current
// context: on a thread with none, the device's primary context is bound and
// left bound, as the runtime's own call would have done (Note [gpuslack's
// own driver calls need a context] in cuda/driver_context.h).
// The resource interface is DeviceAllocator's public one; the runtime's
// memory is no object here because its retry needs the hook's own real
// function, errno and last-error handling (interpose/routes_passthrough.inc).
struct DeviceMemory {
  bool untouched = false;
  DeviceAllocator* resource = nullptr;
};
DeviceMemory current_device_memory();
// The allocator whose range holds `p`, or nullptr. With no allocator made
// (allocator:native), one atomic load.
DeviceAllocator* owner(const void* p);

// What the runtime checks for cudaMalloc memory, for a range a call names
// (a copy's source or destination, a memset's target) that lies in a VMM
// reservation, which the runtime sees as one large mapping: kNotVmm when
// `p` lies in none (the runtime's memory or the host's: the runtime checks
// it), else whether [p, p + bytes) lies in one live block within the bytes
// it was allocated with (DeviceAllocator::holds_range; a freed block or
// free space is kOutside). As cheap as owner() when it says kNotVmm.
enum class VmmRange { kNotVmm, kInside, kOutside };
VmmRange vmm_range(const void* p, size_t bytes);
// The allocator of `device` if one was made; nullptr otherwise (never makes one).
DeviceAllocator* existing_allocator(int device);

// The stream a stream-ordered call on `s` is ordered on, or nullopt for the
// per-thread default stream (cudaStreamPerThread, or 0 when
// `per_thread_default`), whose handle names a different stream in each
// thread: those take the stream-less path. cudaStreamLegacy becomes 0.
std::optional<cudaStream_t> ordered_stream(cudaStream_t s, bool per_thread_default);

// Caps what `device`'s allocator maps at `fraction` (0 < fraction <= 1) of
// the device's memory; makes the allocator if needed. False (nothing
// changes) for a fraction out of range or a device it cannot serve.
bool set_memory_fraction(int device, double fraction);

// `accessor` may now reach `owner`'s memory (cudaDeviceEnablePeerAccess
// succeeded on `accessor`): grants it every mapping of `owner`'s allocator,
// now, later, and in an allocator made after this call.
void peer_access_enabled(int accessor, int owner);
// `stream` is being destroyed: every allocator fences the blocks it cached.
void forget_stream(cudaStream_t stream);
// Every allocator's trim() (waits for pending frees, then releases every
// cached granule); the bytes released. 0 during a capture.
uint64_t trim_all();

}  // namespace alloc
}  // namespace gpuslack
