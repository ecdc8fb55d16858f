// libnccl.so.2 of the simulated device: ncclCommSplit of a communicator
// whose ranks are in different processes (README.md, "NCCL", "Across
// processes"), as torch's ProcessGroupNCCL calls it for dist.new_group()
// once the default group is bound to a device.
//
// NCCL's split is collective over the parent: every rank gives a color and
// a key (NCCL all-gathers them over the parent's bootstrap network, on the
// host, apart from the parent's kernels), and the ranks of one color,
// ordered by (key, parent rank), form a new communicator on their parent
// rank's device; NCCL_SPLIT_NOCOLOR gets NULL (src/init.cc, ncclCommSplit;
// nccl.h). Here the all-gather goes through a small shared-memory segment
// named from the parent's segment and the split's number (each rank counts
// its own splits of the parent, so the numbers agree in every process), and
// each color's communicator is then made by ncclCommInitRank's own path
// across processes with an id every member derives from the same names: no
// rank needs another's id.
//
// Waits are bounded by GPUSIM_NCCL_TIMEOUT_S, like the rest: a rank that
// does not arrive fails the split with ncclRemoteError and one stderr line.
// The exchange blocks the calling thread even for a non-blocking config
// (NCCL would return ncclInProgress at once); the new communicator's own
// init then follows the config.
//
// Thread safety: each rank's split from its own thread (or process); the
// segment's entries are written by their rank alone. Test-only.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "nccl_internal.h"

namespace ncclsim {

namespace {

// One parent rank's part, written before `ready` is released.
struct Entry {
  std::atomic<int32_t> ready;
  int32_t color;
  int32_t key;
};

struct ExchangeHeader {
  std::atomic<int32_t> done;  // ranks that read every entry; the last unlinks
};

static_assert(std::atomic<int32_t>::is_always_lock_free, "shared atomics must be lock free");

size_t entries_offset() { return (sizeof(ExchangeHeader) + 63) / 64 * 64; }
size_t exchange_size(int n) { return entries_offset() + static_cast<size_t>(n) * sizeof(Entry); }

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t hash_of(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// The parent segment's name is /gpusim-nccl-<creator pid>-<nonce>-<n>
// (nccl_process.cc): names derived from it keep the creator's pid first,
// so that ncclGetUniqueId's sweep removes them with the parent's.
int creator_pid(const std::string& parent) {
  int pid = 0;
  return std::sscanf(parent.c_str(), "/gpusim-nccl-%d-", &pid) == 1 ? pid : 0;
}

std::string exchange_name(const std::string& parent, uint64_t seq) {
  char name[96];
  std::snprintf(name, sizeof(name), "/gpusim-nccl-%d-%016llx-split", creator_pid(parent),
                static_cast<unsigned long long>(mix(hash_of(parent), seq)));
  return name;
}

// The id of color `color`'s communicator of split `seq`: the layout of
// Segment::make_id (magic, number, nonce, pid), every field derived.
ncclUniqueId child_id(const ncclUniqueId& magic_from, const std::string& parent, uint64_t seq, int color) {
  ncclUniqueId id;
  std::memcpy(&id, &magic_from, sizeof(id));  // the magic bytes, as make_id writes them
  struct {
    uint64_t number;
    uint64_t nonce;
    int32_t pid;
  } body{mix(seq, static_cast<uint64_t>(color)) | 1, mix(mix(hash_of(parent), seq), static_cast<uint64_t>(color)),
         creator_pid(parent)};
  std::memset(id.internal + 8, 0, sizeof(id.internal) - 8);
  std::memcpy(id.internal + 8, &body, sizeof(body));
  return id;
}

// All-gathers (color, key) over the parent's ranks. On success `colors` and
// `keys` hold every parent rank's.
ncclResult_t exchange(const std::string& name, int nranks, int rank, int color, int key,
                      std::vector<int>* colors, std::vector<int>* keys) {
  const size_t size = exchange_size(nranks);
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  // Every rank sizes it alike: ftruncate to the same size keeps what a
  // faster rank already wrote (a new segment starts zero-filled).
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (fd >= 0) close(fd);
    return fail(ncclSystemError, "ncclCommSplit: cannot open the shared segment " + name);
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return fail(ncclSystemError, "ncclCommSplit: cannot map the shared segment " + name);
  auto* header = static_cast<ExchangeHeader*>(base);
  auto* entries = reinterpret_cast<Entry*>(static_cast<char*>(base) + entries_offset());
  entries[rank].color = color;
  entries[rank].key = key;
  entries[rank].ready.store(1, std::memory_order_release);

  const auto deadline = gpusim::Clock::now() + std::chrono::duration_cast<gpusim::Clock::duration>(
                                                   std::chrono::duration<double>(gpusim::config().nccl_timeout_s));
  auto wait = std::chrono::microseconds(50);
  int missing = 0;
  for (;;) {
    missing = 0;
    for (int r = 0; r < nranks; ++r)
      if (!entries[r].ready.load(std::memory_order_acquire)) ++missing;
    if (missing == 0 || gpusim::Clock::now() >= deadline) break;
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::microseconds(2000));
  }
  ncclResult_t result = ncclSuccess;
  if (missing) {
    std::fprintf(stderr, "gpusim: nccl: ncclCommSplit: %d of %d ranks did not arrive within %g s (GPUSIM_NCCL_TIMEOUT_S)\n",
                 missing, nranks, gpusim::config().nccl_timeout_s);
    shm_unlink(name.c_str());
    result = fail(ncclRemoteError, "ncclCommSplit: a rank of the parent communicator did not arrive");
  } else {
    colors->resize(nranks);
    keys->resize(nranks);
    for (int r = 0; r < nranks; ++r) {
      (*colors)[r] = entries[r].color;
      (*keys)[r] = entries[r].key;
    }
    if (header->done.fetch_add(1, std::memory_order_acq_rel) + 1 == nranks) shm_unlink(name.c_str());
  }
  munmap(base, size);
  return result;
}

}  // namespace

ncclResult_t split_across_processes(ncclComm* comm, uint64_t seq, int color, int key, bool blocking,
                                    ncclComm_t* newcomm) {
  const std::string& parent = comm->clique->segment->name();
  std::vector<int> colors, keys;
  if (ncclResult_t r = exchange(exchange_name(parent, seq), comm->nranks, comm->rank, color, key, &colors, &keys))
    return r;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  // This color's ranks by (key, parent rank): the new rank is the index.
  std::vector<int> members;
  for (int r = 0; r < comm->nranks; ++r)
    if (colors[r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return keys[a] < keys[b]; });
  const int new_rank = static_cast<int>(std::find(members.begin(), members.end(), comm->rank) - members.begin());

  ncclConfig_t child = NCCL_CONFIG_INITIALIZER;
  child.blocking = blocking ? 1 : 0;
  ncclUniqueId magic_from;  // a fresh id, for its magic bytes alone
  Segment::make_id(&magic_from, 1);
  const ncclUniqueId id = child_id(magic_from, parent, seq, color);
  // On the parent rank's device, whatever the thread's current one.
  const int current = gpusim::current_device();
  gpusim::set_current_device(comm->device);
  ncclResult_t r = init_rank(newcomm, static_cast<int>(members.size()), id, new_rank, &child);
  gpusim::set_current_device(current);
  return r;
}

}  // namespace ncclsim
