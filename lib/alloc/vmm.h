// The process's VMM allocators: one DeviceAllocator per device, made on the
// first allocation on that device when GPUSLACK_CONF selects allocator:vmm.
//
// Pass-through: when the knob says native, when the driver has no VMM
// support, or when the reservation fails, device_allocator() returns
// nullptr (with one log line, once per device) and the caller uses the
// runtime's own cudaMalloc. Pointers the VMM allocators do not own go to the
// real cudaFree: owner() tells, lock-free.
//
// Each device reserves 1.125 times its memory of virtual address space, so
// that fragmentation of the address space can never be what runs out.
//
// Thread safety: any thread. device_allocator() creates under a mutex, once
// per device; owner() reads published pointers.
#pragma once

#include "alloc/device_allocator.h"

namespace gpuslack {
namespace alloc {

inline constexpr int kMaxDevices = 64;

// Whether the configuration selects the VMM allocator.
bool vmm_selected();
// The allocator of `device`, or nullptr for pass-through.
DeviceAllocator* device_allocator(int device);
// The allocator whose range holds `p`, or nullptr.
DeviceAllocator* owner(const void* p);
// The allocator of `device` if one was made; nullptr otherwise (never makes one).
DeviceAllocator* existing_allocator(int device);

}  // namespace alloc
}  // namespace gpuslack
