// libcuda.so.1 of the simulated device: where the bytes of a physical VMM
// allocation (a cuMemCreate or cuMemImportFromShareableHandle handle) live.
// driver_vmm.cc keeps the handles, reservations and mappings; this keeps
// their host memory, without one open file descriptor per handle.
//
// Note [One arena, not one memfd per handle]: a created handle is a slice
// [offset, offset + size) of one sparse arena memfd shared by every handle of
// the process: creating it opens nothing, mapping it maps the arena at that
// offset (MAP_SHARED, so every mapping of the handle shows the same bytes),
// and destroying it punches the slice out (fallocate PUNCH_HOLE), which
// returns its pages at once. Slices are carved by a bump pointer and their
// offsets never reused (the file is sparse and 2^63 bytes long at most:
// centuries of churn), so no free list is needed, and the handles created one
// after another sit next to each other in the file, which lets the kernel
// merge their mappings when they are also next to each other in memory
// (fewer VMAs, vm.max_map_count). Pages are faulted in only when touched.
// A handle that must be a file of its own (the first
// cuMemExportToShareableHandle) gets a dedicated memfd named after its
// properties (what an importer reads them from): backing_make_own() copies
// the slice's data (holes stay holes) into a new memfd, re-maps every live
// mapping of the handle onto it (MAP_FIXED, with the protection
// cuMemSetAccess last gave it), then punches the slice. Imports hold a dup
// of the fd they were given. So only handles shared between processes hold a
// descriptor, and export, rare (IPC), pays for the move. No op of the
// simulated device runs during the move (device_access_lock in sim.h: the
// stream workers hold it shared around each op; before it, a memset of
// another thread's block on the same handle could land in the old pages
// after their copy and be lost, which the differential harness caught). The
// imperfection left: a host thread writing the handle's memory directly
// (no real GPU lets one) during its FIRST export may still lose the write;
// later exports are dups.
//
// Rejected: a private "home" mapping per handle over a closed memfd, further
// mappings made by mremap(old_size = 0): it doubles the VMAs (30,000 handles
// would need 60,000 of vm.max_map_count's 65,530), and an export could get
// its fd back only through /proc/self/map_files, which needs
// CAP_CHECKPOINT_RESTORE.
//
// Measured (bench/trace_replay --map-chunk-mb 2, GPUSIM_DEVICE_MEMORY=80G,
// a synthetic trace of 58.6 GiB live; one memfd per handle before):
//   before: stopped at RLIMIT_NOFILE (20,000 here) after 41.7 GiB mapped,
//           then failed every allocation; killed after 180 s;
//   after:  30,095 handles, 7 descriptors, at most 66 lines in
//           /proc/self/maps (consecutive slices merge), 5-10 s (the modeled
//           driver costs); it also runs with RLIMIT_NOFILE at 64.
// On 29.3 GiB (15,095 handles), which both complete: 2.7-3.4 s, 15,101
// descriptors and 14,775 maps before; 2.2-2.3 s, 7 and 65 after.
//
// Test-only; never included by the product. Not thread-safe: every call is
// made under the VMM's lock (driver_vmm.cc).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpusim::drv {

// The file holding a handle's bytes, and where in it they start.
struct Backing {
  int fd = -1;      // the arena's (not owned), or the handle's own memfd
  off_t offset = 0;
  bool own = false;  // fd is this handle's alone: closed by backing_destroy
};

// A live mapping of a handle, as backing_make_own() must re-create it.
struct LiveMapping {
  uintptr_t addr = 0;
  size_t size = 0;
  size_t offset = 0;  // into the handle
  int prot = 0;       // its current page protection
};

// A new zero-filled slice of `size` bytes of the arena. False when the
// arena cannot be created or grown.
bool backing_create(size_t size, Backing* out);

// A backing of its own over a duplicate of `fd` (an imported memfd; the
// caller keeps `fd`). False when it cannot be duplicated.
bool backing_adopt(int fd, Backing* out);

// Gives the bytes back: punches the slice out of the arena, or closes the
// handle's own memfd. No mapping of it may remain.
void backing_destroy(const Backing& b, size_t size);

// Moves an arena slice to a memfd of its own named `name` (a no-op for a
// backing that is already its own): copies its data, re-maps each of
// `live` onto the new file, punches the slice. On failure `b` and every
// mapping are as before, and false is returned.
bool backing_make_own(Backing* b, size_t size, const char* name, const std::vector<LiveMapping>& live);

// Note [A fabric handle names a memfd of its exporter]: a real fabric
// handle (CU_MEM_HANDLE_TYPE_FABRIC, CUmemFabricHandle: 64 bytes) names an
// allocation to the IMEX service, which lets another process of the same
// IMEX channel import it with no file descriptor passed. Here the 64 bytes
// name the exporter's own memfd of the handle: its pid, its descriptor
// number, and the file's inode and device (so a reused number is told
// apart), behind a magic. The importer opens /proc/<pid>/fd/<n> (a new open
// file of the same memfd: the same bytes; the kernel asks only that both
// run as the same user, PTRACE_MODE_READ, not the ptrace attach that
// pidfd_getfd needs) and checks the inode. So it works between processes
// of one host while the exporter holds the handle, as a real fabric handle
// works while its allocation lives. Not multi-node, not IMEX.
struct FabricName {
  char magic[8];  // "gpusimFB"
  int32_t pid;
  int32_t fd;
  uint64_t inode;
  uint64_t dev;
  uint64_t size;
  char unused[24];
};
static_assert(sizeof(FabricName) == 64, "a CUmemFabricHandle is 64 bytes");

// The name of `fd` (a handle's own memfd) of this process.
bool fabric_name(int fd, FabricName* out);
// Opens the memfd `name` names: a descriptor of this process the caller
// closes, or -1 when the name names nothing live.
int fabric_open(const FabricName& name);

}  // namespace gpusim::drv
