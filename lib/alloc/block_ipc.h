// IPC of the VMM allocator's blocks: cudaIpcGetMemHandle, cudaIpcOpenMemHandle
// and cudaIpcCloseMemHandle between processes that both run gpuslack
// (docs/allocator.md, "IPC").
//
// Note [A block travels as its chunks' descriptors]: a block of the VMM
// allocator lies on one or more physical chunks (GranuleMap), none of which
// the runtime knows, so its own IPC handle could not name it. The exporter
// exports each chunk under the block as a POSIX file descriptor
// (cuMemExportToShareableHandle; the chunks are created exportable) and
// writes their numbers and sizes into a small memfd of its own, the
// layout; the 64 bytes of the cudaIpcMemHandle_t carry a magic, the
// exporter's pid, the layout's descriptor, an id, the block's offset in
// its first chunk, its size and device. The importer takes the layout and
// the chunks' descriptors from the exporter with pidfd_open + pidfd_getfd,
// as PyTorch's expandable segments share theirs; where ptrace rules refuse
// that (pidfd_getfd needs PTRACE_MODE_ATTACH over the exporter: Yama's
// ptrace_scope, a seccomp filter, a non-dumpable exporter) or
// GPUSLACK_CONF=ipc_fds:socket says so, it asks the exporter over a Unix
// socket in the abstract namespace ("gpuslack-ipc-<pid>", served by a
// thread started at the first export, answering only its own user:
// SO_PEERCRED), which sends the same descriptors with SCM_RIGHTS. The
// importer imports each (cuMemImportFromShareableHandle), maps them side by
// side in a range it reserves, grants its device access, and returns the
// block's address inside: the same bytes. Where the driver offers fabric
// handles, the chunks travel as those instead, with no descriptor: See
// Note [Fabric handles where the driver offers them] in block_ipc.cc.
//
// Lifetimes, as CUDA documents them for the driver's shareable handles
// (cuMemRelease: the memory goes once every mapping and every shareable
// handle of it is gone): an opened block holds its chunks until its last
// cudaIpcCloseMemHandle, whatever the exporter frees, trims or releases
// meanwhile; the mapping stays valid and the memory alive (what the bytes
// hold after the exporter's free is the exporter's business, as after a
// cudaFree). The exporter keeps a block's descriptors while the block is
// live: its free ends the export, so a handle of a freed block opens
// nowhere (cudaErrorInvalidValue), as a cudaMalloc handle's.
//
// A process without gpuslack that opens such a handle passes it to the
// runtime, which does not know it and answers with its error
// (cudaErrorInvalidValue on the simulated runtime). Events
// (cudaIpcGetEventHandle) are the runtime's, untouched.
//
// Thread safety: every function, any thread (one mutex for the exports, one
// for the imports).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpuslack {
namespace alloc {

class DeviceAllocator;

// The handle of the block starting at `p` of allocator `a`:
// cudaErrorInvalidValue when `p` starts no live block, cudaErrorNotSupported
// when the driver refuses to export its chunks (one log line).
cudaError_t ipc_get_handle(DeviceAllocator* a, void* p, cudaIpcMemHandle_t* out);
// Whether `h` is a handle made by ipc_get_handle (in any process).
bool ipc_is_block_handle(const cudaIpcMemHandle_t& h);
// Opens a handle from ipc_is_block_handle in this process: the block's
// address in *p. Flags as cudaIpcOpenMemHandle's. Errors: the exporter's
// own process (cudaErrorDeviceUninitialized, "invalid device context", as
// the runtime answers), a handle that names no live block or whose
// exporter is gone (cudaErrorInvalidValue), the driver's refusals mapped to
// cudaErrorMapBufferObjectFailed.
cudaError_t ipc_open_handle(const cudaIpcMemHandle_t& h, unsigned flags, void** p);
// Closes a block opened here: true, with the result in *result, when `p` is
// one (the last close unmaps it); false when it is not (the runtime's).
bool ipc_close_handle(void* p, cudaError_t* result);
// The opened block holding `p`: its address and size. False if none; one
// atomic load while nothing was ever opened.
bool ipc_imported_range(const void* p, uintptr_t* base, size_t* size);
// The block at `p` was freed: its export, if any, ends. One atomic load
// while nothing was ever exported.
void ipc_block_freed(const void* p);

// Registers block IPC's fork child handlers (the exports' and imports', the
// socket server's: Note [Block IPC after a fork], block_ipc.cc); once,
// idempotent; never under their locks (base/fork_handler.h).
// session::start calls it.
void register_block_ipc_fork_handlers();

namespace testing {
// Tests of Note [Block IPC after a fork] (block_ipc.cc) only: runs
// `during(arg)` while the calling thread holds the exports', the imports'
// and the socket server's locks.
void while_holding_ipc_locks(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace alloc
}  // namespace gpuslack
