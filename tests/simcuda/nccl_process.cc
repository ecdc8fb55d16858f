// libnccl.so.2 of the simulated device: communicators across processes,
// through a shared-memory segment per unique id (nccl_process.h).
#include "nccl_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

namespace ncclsim {

namespace {

constexpr char kIdMagic[8] = {'g', 'p', 'u', 's', 'i', 'm', 'N', 'C'};
constexpr uint32_t kSegmentMagic = 0x6e63636c;  // "nccl"
constexpr size_t kWindow = 4u << 20;            // bytes per rank per data step
constexpr char kPrefix[] = "gpusim-nccl-";

// The id's layout after the magic.
struct IdBody {
  uint64_t number;
  uint64_t nonce;
  int32_t pid;
};

IdBody body_of(const ncclUniqueId& id) {
  IdBody b;
  std::memcpy(&b, id.internal + sizeof(kIdMagic), sizeof(b));
  return b;
}

std::string name_of(const IdBody& b) {
  char name[96];
  std::snprintf(name, sizeof(name), "/%s%d-%016llx-%llu", kPrefix, b.pid,
                static_cast<unsigned long long>(b.nonce), static_cast<unsigned long long>(b.number));
  return name;
}

bool process_gone(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A zombie (exited, not yet reaped by its parent) is gone too.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* paren = std::strrchr(buf, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

// Unlinks segments whose creator (the pid in the name) exited: a run that
// crashed before its ranks destroyed their communicators.
void sweep_stale() {
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, sizeof(kPrefix) - 1) != 0) continue;
    int pid = std::atoi(e->d_name + sizeof(kPrefix) - 1);
    if (pid > 0 && pid != getpid() && process_gone(pid))
      shm_unlink((std::string("/") + e->d_name).c_str());
  }
  closedir(d);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(gpusim::Clock::now().time_since_epoch()).count();
}

}  // namespace

// The call a rank made, as its peers compare it.
struct CallDesc {
  int32_t kind, type, op, root;
  uint64_t count;
};

struct Segment::Slot {
  std::atomic<int32_t> claimed;   // the rank registered
  std::atomic<int32_t> gone;      // 1: destroyed, 2: aborted
  int32_t pid;
  int32_t device;
  int32_t node;                   // GPUSIM_NODE of its process
  std::atomic<uint64_t> arrived;  // sequence number of its latest collective (1-based)
  int64_t arrived_ns;             // written before `arrived`
  CallDesc call;                  // written before `arrived`
  std::atomic<uint64_t> written;  // data steps whose window it filled
  std::atomic<uint64_t> reduced;  // data steps whose share of the result it reduced
  std::atomic<uint64_t> consumed; // data steps whose windows it has read
};

struct Segment::Header {
  std::atomic<uint32_t> magic;  // kSegmentMagic once initialized
  int32_t nranks;
  std::atomic<int32_t> joined;
  std::atomic<int32_t> attached;  // ranks not yet left
  // Bumped (and futex-woken, across processes) after every store a peer
  // may wait for: waiters sleep on it instead of polling.
  std::atomic<uint32_t> epoch;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock free");

namespace {
size_t slots_offset() { return (sizeof(Segment::Header) + 63) / 64 * 64; }
size_t windows_offset(int n) { return (slots_offset() + n * sizeof(Segment::Slot) + 4095) / 4096 * 4096; }
// n windows, then the reduced window.
size_t segment_size(int n) { return windows_offset(n) + static_cast<size_t>(n + 1) * kWindow; }
}  // namespace

namespace {
uint32_t* futex_word(void* base) { return reinterpret_cast<uint32_t*>(&static_cast<Segment::Header*>(base)->epoch); }
}  // namespace

// Wakes every rank waiting in wait_all, in any process.
void Segment::notify() {
  static_cast<Header*>(base_)->epoch.fetch_add(1, std::memory_order_acq_rel);
  syscall(SYS_futex, futex_word(base_), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

Segment::Slot& Segment::slot(int r) const {
  return reinterpret_cast<Slot*>(static_cast<char*>(base_) + slots_offset())[r];
}
char* Segment::window(int r) const { return static_cast<char*>(base_) + windows_offset(nranks_) + r * kWindow; }

void Segment::make_id(ncclUniqueId* id, uint64_t number) {
  static std::atomic<bool> swept{false};
  if (!swept.exchange(true)) sweep_stale();
  IdBody b;
  b.number = number;
  b.pid = getpid();
  std::random_device rd;
  b.nonce = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, kIdMagic, sizeof(kIdMagic));
  std::memcpy(id->internal + sizeof(kIdMagic), &b, sizeof(b));
}

uint64_t Segment::key_of(const ncclUniqueId& id) {
  if (std::memcmp(id.internal, kIdMagic, sizeof(kIdMagic)) != 0) return 0;
  IdBody b = body_of(id);
  uint64_t k = b.number * 0x9e3779b97f4a7c15ull ^ b.nonce ^ (static_cast<uint64_t>(b.pid) << 40);
  return k ? k : 1;
}

ncclResult_t Segment::join(const ncclUniqueId& id, int nranks, int rank, int device,
                           std::shared_ptr<Segment>* out) {
  const std::string name = name_of(body_of(id));
  const size_t size = segment_size(nranks);
  const auto deadline = gpusim::Clock::now() + std::chrono::seconds(5);
  int fd = -1;
  bool created = false;
  for (;;) {
    fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      created = true;
      if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        shm_unlink(name.c_str());
        return fail(ncclSystemError, "ncclCommInitRank: cannot size the shared segment " + name);
      }
      break;
    }
    if (errno != EEXIST) return fail(ncclSystemError, "ncclCommInitRank: shm_open " + name + ": " + std::strerror(errno));
    fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && st.st_size > 0) break;  // sized: the creator initializes it
      close(fd);
    }
    if (gpusim::Clock::now() > deadline)
      return fail(ncclSystemError, "ncclCommInitRank: shared segment " + name + " never initialized");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != size) {
    close(fd);
    return fail(ncclInvalidArgument, "ncclCommInitRank: nranks differs between ranks of one id");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return fail(ncclSystemError, "ncclCommInitRank: mmap of the shared segment failed");
  std::shared_ptr<Segment> s(new Segment());
  s->name_ = name;
  s->nranks_ = nranks;
  s->base_ = base;
  s->size_ = size;
  s->seq_.assign(nranks, 0);
  s->steps_.assign(nranks, 0);
  auto* h = static_cast<Header*>(base);
  if (created) {
    // ftruncate zero-filled it: every atomic starts at 0.
    h->nranks = nranks;
    h->magic.store(kSegmentMagic, std::memory_order_release);
  } else {
    while (h->magic.load(std::memory_order_acquire) != kSegmentMagic) {
      if (gpusim::Clock::now() > deadline)
        return fail(ncclSystemError, "ncclCommInitRank: shared segment " + name + " never initialized");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (h->nranks != nranks) return fail(ncclInvalidArgument, "ncclCommInitRank: nranks differs between ranks of one id");
  }
  if (ncclResult_t r = s->claim(rank, device)) return r;
  *out = std::move(s);
  return ncclSuccess;
}

ncclResult_t Segment::claim(int rank, int device) {
  Slot& me = slot(rank);
  int32_t unclaimed = 0;
  if (!me.claimed.compare_exchange_strong(unclaimed, 1))
    return fail(ncclInvalidArgument, "ncclCommInitRank: rank joined twice");
  me.pid = getpid();
  me.device = device;
  me.node = gpusim::config().node;
  auto* h = static_cast<Header*>(base_);
  h->attached.fetch_add(1, std::memory_order_acq_rel);
  h->joined.fetch_add(1, std::memory_order_release);
  notify();
  return ncclSuccess;
}

Segment::~Segment() {
  if (base_) munmap(base_, size_);
}

bool Segment::complete() const {
  return static_cast<Header*>(base_)->joined.load(std::memory_order_acquire) == nranks_;
}

std::vector<int> Segment::devices() const {
  std::vector<int> d(nranks_);
  for (int r = 0; r < nranks_; ++r) d[r] = slot(r).device;
  return d;
}

std::vector<int> Segment::nodes() const {
  std::vector<int> n(nranks_);
  for (int r = 0; r < nranks_; ++r) n[r] = slot(r).node;
  return n;
}

void Segment::unlink() { shm_unlink(name_.c_str()); }

void Segment::leave(int rank, bool aborted) {
  slot(rank).gone.store(aborted ? 2 : 1, std::memory_order_release);
  notify();
  if (static_cast<Header*>(base_)->attached.fetch_sub(1, std::memory_order_acq_rel) == 1) unlink();
}

bool Segment::supported(const Work& w) {
  return w.kind == Kind::kAllReduce || w.kind == Kind::kReduce || w.kind == Kind::kBroadcast ||
         w.kind == Kind::kAllGather;
}

ncclResult_t Segment::wait_all(int me, const std::function<bool(int)>& ready, const std::function<bool()>& stop,
                               const char* what, uint64_t seq) {
  const auto start = gpusim::Clock::now();
  const auto timeout = std::chrono::duration<double>(gpusim::config().nccl_timeout_s);
  auto next_check = start;
  auto& epoch = static_cast<Header*>(base_)->epoch;
  for (int spins = 0;; ++spins) {
    const uint32_t seen = epoch.load(std::memory_order_acquire);
    bool all = true;
    for (int r = 0; r < nranks_ && all; ++r) all = ready(r);
    if (all) return ncclSuccess;
    if (spins < 20) {
      std::this_thread::yield();
      continue;
    }
    // Sleeps until a peer stores something (or 2 ms, to check on the peers).
    struct timespec ts = {0, 2000000};
    syscall(SYS_futex, futex_word(base_), FUTEX_WAIT, seen, &ts, nullptr, 0);
    auto now = gpusim::Clock::now();
    if (now < next_check) continue;
    next_check = now + std::chrono::milliseconds(5);
    if (stop()) return fail(ncclRemoteError, "a rank of the communicator aborted it");
    for (int r = 0; r < nranks_; ++r) {
      if (r == me || ready(r)) continue;
      Slot& s = slot(r);
      const char* why = nullptr;
      if (int g = s.gone.load(std::memory_order_acquire)) why = g == 2 ? "aborted its communicator" : "destroyed its communicator";
      else if (process_gone(s.pid)) why = "exited";
      else if (now - start > timeout) why = "did not arrive in time (GPUSIM_NCCL_TIMEOUT_S)";
      if (!why) continue;
      char line[256];
      std::snprintf(line, sizeof(line), "rank %d (pid %d) %s: rank %d gives up %s of collective %llu", r,
                    s.pid, why, me, what, static_cast<unsigned long long>(seq));
      std::fprintf(stderr, "gpusim: nccl: %s\n", line);
      return fail(ncclRemoteError, line);
    }
  }
}

ncclResult_t Segment::collective(int rank, const Work& w, const std::function<bool()>& stop,
                                 gpusim::Clock::time_point* end) {
  Slot& me = slot(rank);
  const uint64_t seq = ++seq_[rank];
  me.call = {static_cast<int32_t>(w.kind), w.type, w.op, w.root, w.count};
  me.arrived_ns = now_ns();
  me.arrived.store(seq, std::memory_order_release);
  notify();
  if (ncclResult_t r = wait_all(rank, [&](int p) { return slot(p).arrived.load(std::memory_order_acquire) >= seq; },
                                stop, "waiting for the arrival", seq))
    return r;
  // Every peer is at `seq` (none can pass it before this rank's first data
  // step): their arrival and call are stable.
  int64_t start_ns = 0;
  bool match = true;
  for (int p = 0; p < nranks_; ++p) {
    const Slot& s = slot(p);
    start_ns = std::max(start_ns, s.arrived_ns);
    match = match && std::memcmp(&s.call, &me.call, sizeof(CallDesc)) == 0;
  }
  const size_t ts = type_size(w.type), bytes = w.count * ts;
  // GPUSIM_NCCL_DATA=0 (every rank alike): no data step, the time alone.
  const size_t steps = !gpusim::config().nccl_moves_data ? 0
                       : match ? std::max<size_t>(1, (bytes + kWindow - 1) / kWindow) : 1;
  const bool root = rank == w.root;
  const bool writes = w.kind != Kind::kBroadcast || root;
  for (size_t k = 0; k < steps; ++k) {
    const uint64_t step = ++steps_[rank];
    const size_t off = k * kWindow, len = match ? std::min(kWindow, bytes - off) : 0;
    if (ncclResult_t r = wait_all(rank, [&](int p) { return slot(p).consumed.load(std::memory_order_acquire) >= step - 1; },
                                  stop, "waiting for its window", seq))
      return r;
    if (len && writes) std::memcpy(window(rank), static_cast<const char*>(w.send) + off, len);
    me.written.store(step, std::memory_order_release);
    notify();
    if (ncclResult_t r = wait_all(rank, [&](int p) { return slot(p).written.load(std::memory_order_acquire) >= step; },
                                  stop, "waiting for the data", seq))
      return r;
    const bool reduces = w.kind == Kind::kAllReduce || w.kind == Kind::kReduce;
    if (reduces) {
      // Each rank reduces its share of the window into the shared result
      // (the sum in rank order, as in process), then copies all of it:
      // n times less CPU than every rank reducing everything.
      const size_t elems = len / ts, share = (elems + nranks_ - 1) / nranks_;
      const size_t first = std::min(elems, rank * share), count = std::min(elems, first + share) - first;
      if (count) {
        std::vector<const void*> in(nranks_);
        for (int p = 0; p < nranks_; ++p) in[p] = window(p) + first * ts;
        reduce_into(w.type, w.op, in, count, window(nranks_) + first * ts);
      }
      me.reduced.store(step, std::memory_order_release);
      notify();
      if (ncclResult_t r = wait_all(rank, [&](int p) { return slot(p).reduced.load(std::memory_order_acquire) >= step; },
                                    stop, "waiting for the reduction", seq))
        return r;
    }
    if (len) {
      char* recv = static_cast<char*>(w.recv);
      switch (w.kind) {
        case Kind::kAllReduce: std::memcpy(recv + off, window(nranks_), len); break;
        case Kind::kReduce:
          if (root) std::memcpy(recv + off, window(nranks_), len);
          break;
        case Kind::kBroadcast: std::memcpy(recv + off, window(w.root), len); break;
        case Kind::kAllGather:
          for (int p = 0; p < nranks_; ++p) copy(recv + p * bytes + off, window(p), len);
          break;
        default: break;
      }
    }
    me.consumed.store(step, std::memory_order_release);
    notify();
  }
  if (debug()) {
    const gpuslack::nccl::Shape shape = shape_of(nodes());
    std::fprintf(stderr, "gpusim: nccl: rank %d collective %llu: %.3f ms waiting for the last arrival, %.3f ms moving data; "
                 "%d x %d ranks, %s/%s, %d channels, modeled %.3f ms\n",
                 rank, static_cast<unsigned long long>(seq), (start_ns - me.arrived_ns) / 1e6,
                 (now_ns() - start_ns) / 1e6, shape.nodes, shape.ranks_per_node, w.algo, w.proto, w.channels,
                 modeled_us(w, nranks_) / 1e3);
  }
  *end = gpusim::after(gpusim::Clock::time_point(std::chrono::nanoseconds(start_ns)), modeled_us(w, nranks_));
  if (!match) return fail(ncclInvalidUsage, "ranks called different collectives at one sequence number");
  return ncclSuccess;
}

}  // namespace ncclsim
