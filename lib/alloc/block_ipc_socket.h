// The Unix-socket path of block IPC (Note [A block travels as its chunks'
// descriptors] in block_ipc.h): where pidfd_getfd is refused, the importer
// asks the exporter for a block's descriptors over a socket in the abstract
// namespace, "gpuslack-ipc-<pid>".
//
// Not to be included outside lib/alloc (block_ipc.cc is its one user).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace gpuslack {
namespace alloc {
namespace ipc_socket {

// The 64 bytes of a CUmemFabricHandle.
struct FabricHandle {
  unsigned char data[64];
};

// A block's chunks: the size of each, and either their descriptors (from
// `lookup`: copies (dup) that the server closes once sent) or, for a block
// exported as fabric handles, those (no descriptor travels).
struct Chunks {
  std::vector<int> fds;
  std::vector<uint64_t> bytes;
  std::vector<FabricHandle> fabric;
};

// Starts this process's server (once; later calls do nothing). `lookup`
// runs on the server's thread: it fills the chunks of export `id` (with
// `descriptors`, as descriptors even where the export is made of fabric
// handles) and says whether there is one. False if the socket cannot be
// made (then only pidfd_getfd serves importers).
bool serve(std::function<bool(uint64_t id, bool descriptors, Chunks* out)> lookup);

// Asks process `pid` for export `id`, of `chunks` chunks: their sizes in
// out->bytes and descriptors of this process in out->fds (the caller closes
// them), or their fabric handles in out->fabric (never with `descriptors`:
// an importer that cannot import them asks again so). False when the exporter
// does not answer, has no such export, answers another number of chunks
// (nothing is sized from the answer before that check), or the socket's
// server runs as another user.
bool fetch(pid_t pid, uint64_t id, uint32_t chunks, bool descriptors, Chunks* out);

// Its fork child handler, once (register_block_ipc_fork_handlers in block_ipc.h).
void register_fork_handler();

namespace testing {
// Tests of Note [Block IPC after a fork] (block_ipc.cc) only: runs
// `during(arg)` while the calling thread holds the server's lock.
void while_holding_lock(void (*during)(void*), void* arg);
}  // namespace testing

}  // namespace ipc_socket
}  // namespace alloc
}  // namespace gpuslack
