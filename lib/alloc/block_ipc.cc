// IPC of the VMM allocator's blocks: Note [A block travels as its chunks'
// descriptors] in block_ipc.h.
#include "alloc/block_ipc.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/fork_handler.h"
#include "alloc/block_ipc_socket.h"
#include "alloc/device_allocator.h"
#include "config/options.h"
#include "cuda/driver_api.h"
#include "cuda/driver_context.h"
#include "cuda/runtime_api.h"
#include "log/log.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace gpuslack {
namespace alloc {
namespace {

constexpr char kMagic[8] = {'g', 'p', 'u', 's', 'l', 'k', 'B', '1'};
constexpr uint64_t kLayoutMagic = 0x74756f79616c6b67ull;  // "gklayout"

// The 64 bytes of a cudaIpcMemHandle_t of a block.
struct Wire {
  char magic[8];
  int32_t pid;
  int32_t layout_fd;  // the exporter's memfd holding the Layout
  uint64_t id;
  uint64_t offset;  // of the block in its first chunk
  uint64_t size;    // the bytes the block was allocated with
  int32_t device;
  uint32_t chunks;
  uint32_t flags;  // kWireFabric
  char unused[12];
};
// The chunks travel as fabric handles, over the socket, with no descriptor
// (Note [Fabric handles where the driver offers them]).
constexpr uint32_t kWireFabric = 1;
static_assert(sizeof(ipc_socket::FabricHandle) == sizeof(CUmemFabricHandle), "a fabric handle is 64 bytes");
static_assert(sizeof(Wire) == sizeof(cudaIpcMemHandle_t), "a handle is 64 bytes");

// The layout memfd: this header, then `count` LayoutChunks.
struct LayoutHeader {
  uint64_t magic;
  uint64_t id;
  uint64_t count;
};
struct LayoutChunk {
  int64_t fd;  // the exporter's descriptor of the chunk
  uint64_t bytes;
};

struct Export {
  Wire wire{};
  int layout_fd = -1;
  std::vector<int> fds;
  std::vector<uint64_t> bytes;
  std::vector<ipc_socket::FabricHandle> fabric;  // instead of fds
  // A fabric export's chunks, for an importer that asks for descriptors
  // (Note [An importer that cannot import fabric handles]).
  std::vector<CUmemGenericAllocationHandle> handles;
};

struct Import {
  CUdeviceptr va = 0;  // the reserved range
  uint64_t span = 0;
  std::vector<CUmemGenericAllocationHandle> handles;
  std::vector<uint64_t> chunk_bytes;  // each handle's, in address order
  uintptr_t block = 0;
  uint64_t size = 0;
  int refs = 0;
};

struct Exports {
  std::mutex mu;
  std::map<uintptr_t, Export> by_block;
  std::map<uint64_t, uintptr_t> by_id;
  uint64_t next_id = 1;
};
std::atomic<bool> g_any_export{false};
std::atomic<bool> g_any_import{false};  // cuMemGetAddressRange's fast path

struct Imports {
  std::mutex mu;
  std::map<std::pair<int, uint64_t>, Import> by_key;  // (pid, id)
  std::map<uintptr_t, std::pair<int, uint64_t>> by_block;
};

// Made at first use, never destroyed (used until exit); a forked child's
// are its own (Note [Block IPC after a fork]).
std::atomic<Exports*> g_exports{nullptr};
std::atomic<Imports*> g_imports{nullptr};

template <typename T>
T& made_once(std::atomic<T*>& slot) {
  T* p = slot.load(std::memory_order_acquire);
  if (__builtin_expect(p != nullptr, 1)) return *p;
  auto* made = new T();
  if (slot.compare_exchange_strong(p, made, std::memory_order_acq_rel)) return *made;
  delete made;  // another thread's came first
  return *p;
}
Exports& exports() { return made_once(g_exports); }
Imports& imports() { return made_once(g_imports); }

// The descriptors the exports hold (chunks and layouts), one bit each, for
// the child of a fork to close without reading the exports' map. A bit is
// set once its descriptor is open and cleared before it is closed, so a
// bit set is always an export's descriptor. Descriptors past
// kTrackedFds are not tracked (a child keeps its copy of them).
constexpr int kTrackedFds = 1 << 16;
std::atomic<uint64_t> g_export_fds[kTrackedFds / 64];

void track_fd(int fd) {
  if (fd >= 0 && fd < kTrackedFds) g_export_fds[fd / 64].fetch_or(1ull << (fd % 64), std::memory_order_relaxed);
}
void untrack_fd(int fd) {
  if (fd >= 0 && fd < kTrackedFds) g_export_fds[fd / 64].fetch_and(~(1ull << (fd % 64)), std::memory_order_relaxed);
}

void close_export(Export* e) {
  for (int fd : e->fds) untrack_fd(fd), close(fd);
  if (e->layout_fd >= 0) untrack_fd(e->layout_fd), close(e->layout_fd);
}

// Note [Block IPC after a fork]: the child of a fork has one thread, the
// one that forked; a lock another thread of the parent held stays held in
// it (the imports' lock is held through a whole cudaIpcOpenMemHandle,
// socket round trip included), and what it guarded may be half changed
// (Note [Fork] in session/session.cc). And what the locks guard is the
// parent's: its exports, whose handles name the parent's pid and the
// parent's descriptors; its imports, whose mappings the child did not
// open. So this handler, registered by session::start
// (register_block_ipc_fork_handlers; See Note [The stager after a fork] in
// stage/staged_copy.cc for why then), forgets both (left behind, never read again): in the child,
// a block's first cudaIpcGetMemHandle exports it anew, naming the child; a
// close of a block its parent opened is the runtime's to answer, as for
// the allocators' blocks (Note [The allocators after a fork]). It closes the
// child's copies of the exports' descriptors, found in g_export_fds: left
// open, a long-lived child (a data-loader worker) would hold the parent's
// exported chunks, device memory, after the parent freed them. The socket
// server (block_ipc_socket.cc) forgets its own state in a handler of its
// own: its thread is not in the child, and the socket it listened on bears
// the parent's pid; the child's first export starts a server of its own.
// No lock, no allocation. Test: tests/lib/alloc/block_ipc_fork_test.cc (a
// fork while another thread holds every one of these locks; the child's
// exports served by its own server).
// The parent's state the child leaves behind, kept reachable (never read,
// never freed: a thread of the parent may have held its locks), so that a
// leak checker in the child does not report it.
Exports* g_parents_exports = nullptr;
Imports* g_parents_imports = nullptr;

void forget_after_fork_child() {
  g_parents_exports = g_exports.exchange(nullptr, std::memory_order_relaxed);
  g_parents_imports = g_imports.exchange(nullptr, std::memory_order_relaxed);
  g_any_export.store(false, std::memory_order_relaxed);
  g_any_import.store(false, std::memory_order_relaxed);
  for (int w = 0; w < kTrackedFds / 64; ++w) {
    uint64_t bits = g_export_fds[w].exchange(0, std::memory_order_relaxed);
    for (; bits; bits &= bits - 1) close(w * 64 + __builtin_ctzll(bits));
  }
}
std::atomic<bool> g_fork_handler_registered{false};

// The socket server's lookup: copies of export `id`'s descriptors, or its
// fabric handles; with `descriptors`, a fabric export's chunks exported as
// descriptors now (Note [An importer that cannot import fabric handles]).
bool lookup(uint64_t id, bool descriptors, ipc_socket::Chunks* out) {
  Exports& x = exports();
  std::lock_guard<std::mutex> l(x.mu);
  auto b = x.by_id.find(id);
  if (b == x.by_id.end()) return false;
  const Export& e = x.by_block.at(b->second);
  auto fail = [out] {
    for (int c : out->fds) close(c);
    out->fds.clear();
    return false;
  };
  if (!e.fabric.empty() && descriptors) {
    // The block is live (its free ends the export under this lock): its
    // chunks' handles are too.
    const cuda::DriverApi* api = cuda::driver();
    for (CUmemGenericAllocationHandle h : e.handles) {
      int fd = -1;
      if (!api || api->mem_export_to_shareable_handle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) !=
                      CUDA_SUCCESS)
        return fail();
      out->fds.push_back(fd);
    }
  } else if (!e.fabric.empty()) {
    out->fabric = e.fabric;
  }
  for (int fd : e.fds) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return fail();
    out->fds.push_back(copy);
  }
  out->bytes = e.bytes;
  return true;
}

// Writes the layout memfd of `e`.
bool write_layout(Export* e) {
  std::string name = "gpuslack-ipc-" + std::to_string(e->wire.id);
  e->layout_fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (e->layout_fd < 0) return false;
  track_fd(e->layout_fd);
  std::vector<char> buf(sizeof(LayoutHeader) + e->fds.size() * sizeof(LayoutChunk));
  LayoutHeader h{kLayoutMagic, e->wire.id, e->fds.size()};
  std::memcpy(buf.data(), &h, sizeof(h));
  for (size_t i = 0; i < e->fds.size(); ++i) {
    LayoutChunk c{e->fds[i], e->bytes[i]};
    std::memcpy(buf.data() + sizeof(h) + i * sizeof(c), &c, sizeof(c));
  }
  return pwrite(e->layout_fd, buf.data(), buf.size(), 0) == static_cast<ssize_t>(buf.size());
}

// The chunks of `w` by pidfd_getfd: descriptors of this process in
// out->fds. False with errno when the kernel or ptrace rules refuse.
bool take_with_pidfd(const Wire& w, ipc_socket::Chunks* out) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, w.pid, 0));
  if (pidfd < 0) return false;
  bool ok = false;
  int layout = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, w.layout_fd, 0));
  if (layout >= 0) {
    LayoutHeader h{};
    std::vector<LayoutChunk> chunks;
    if (pread(layout, &h, sizeof(h), 0) == sizeof(h) && h.magic == kLayoutMagic && h.id == w.id &&
        h.count == w.chunks) {
      chunks.resize(h.count);
      size_t n = h.count * sizeof(LayoutChunk);
      ok = pread(layout, chunks.data(), n, sizeof(h)) == static_cast<ssize_t>(n);
    } else {
      errno = ENOENT;  // not this export's layout: it was freed
    }
    close(layout);
    for (size_t i = 0; ok && i < chunks.size(); ++i) {
      int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, static_cast<int>(chunks[i].fd), 0));
      ok = fd >= 0;
      if (ok) out->fds.push_back(fd), out->bytes.push_back(chunks[i].bytes);
    }
  }
  int saved = errno;
  close(pidfd);
  if (!ok) {
    for (int fd : out->fds) close(fd);
    out->fds.clear(), out->bytes.clear();
  }
  errno = saved;
  return ok;
}

// Note [Fabric handles where the driver offers them]: where the device says
// it offers fabric handles (CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED),
// the chunks are created asking for them as well as for POSIX descriptors
// (GranuleMap, Note [What the driver refuses at creation]: a refusal drops
// the fabric type first), and a block is exported as its chunks' fabric
// handles (cuMemExportToShareableHandle, CU_MEM_HANDLE_TYPE_FABRIC: 64
// bytes each, meaningful to any process the IMEX channel admits). No
// descriptor travels: the importer asks the exporter's socket for the
// chunks' sizes and handles (plain bytes) and imports each
// (cuMemImportFromShareableHandle), so neither pidfd_getfd nor SCM_RIGHTS
// is needed. A chunk created without the fabric type (before the driver's
// refusal was learnt, or where it is not offered) fails its export, and the
// whole block then goes the descriptors' way. The handle's flags say which
// (kWireFabric). Lifetimes are the same: the import holds the memory until
// its close, and a freed block's export is gone from the socket.
bool export_fabric(const cuda::DriverApi* api, int device, const std::vector<GranuleMap::Chunk>& chunks,
                   std::vector<ipc_socket::FabricHandle>* out) {
  CUdevice dev;
  int offered = 0;
  if (api->device_get(&dev, device) != CUDA_SUCCESS ||
      api->device_get_attribute(&offered, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, dev) != CUDA_SUCCESS ||
      !offered)
    return false;
  for (const GranuleMap::Chunk& c : chunks) {
    ipc_socket::FabricHandle f;
    if (api->mem_export_to_shareable_handle(f.data, c.handle, CU_MEM_HANDLE_TYPE_FABRIC, 0) != CUDA_SUCCESS) {
      out->clear();
      return false;
    }
    out->push_back(f);
  }
  return true;
}

// Note [An importer that cannot import fabric handles]: the exporter
// chooses fabric handles from its own device's attribute, but a process
// that opens the handle may be unable to import them (a container without
// an IMEX channel: cuMemImportFromShareableHandle refuses) where
// descriptors would serve it. Such an importer asks the exporter's socket
// again for the same chunks as descriptors (the exporter exports them from
// the chunks' handles then: the chunks are created with both types), says
// so in one log line, and asks for descriptors at once for every later
// fabric handle. Test: interpose.ipc_fabric_import_refused (the importer's
// simulated driver offers no fabric handles).
std::atomic<bool> g_fabric_import_refused{false};

// The chunks of `w` from the exporter's socket, checked against the
// handle: as many as it names, fabric handles only when asked for them.
bool fetch_chunks(const Wire& w, bool descriptors, ipc_socket::Chunks* got) {
  if (!ipc_socket::fetch(w.pid, w.id, w.chunks, descriptors, got)) return false;
  const bool fabric = !descriptors && (w.flags & kWireFabric) != 0;
  if (got->bytes.size() == w.chunks && got->fabric.size() == (fabric ? w.chunks : 0) &&
      got->fds.size() == (fabric ? 0 : w.chunks))
    return true;
  for (int fd : got->fds) close(fd);
  got->fds.clear();
  return false;
}

// Imports every chunk of `got` (its fabric handles, or its descriptors)
// into `handles`, stopping at the first refusal (the handles imported
// before it stay in `handles`, for the caller to release).
CUresult import_chunks(const cuda::DriverApi* api, bool fabric, const ipc_socket::Chunks& got,
                       std::vector<CUmemGenericAllocationHandle>* handles) {
  for (size_t i = 0; i < got.bytes.size(); ++i) {
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = fabric ? api->mem_import_from_shareable_handle(&handle, const_cast<unsigned char*>(got.fabric[i].data),
                                                                CU_MEM_HANDLE_TYPE_FABRIC)
                        : api->mem_import_from_shareable_handle(
                              &handle, reinterpret_cast<void*>(static_cast<intptr_t>(got.fds[i])),
                              CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return r;
    handles->push_back(handle);
  }
  return CUDA_SUCCESS;
}

}  // namespace

void register_block_ipc_fork_handlers() {
  register_fork_child_once(g_fork_handler_registered, forget_after_fork_child);
  ipc_socket::register_fork_handler();
}

bool ipc_is_block_handle(const cudaIpcMemHandle_t& h) { return std::memcmp(h.reserved, kMagic, sizeof(kMagic)) == 0; }

cudaError_t ipc_get_handle(DeviceAllocator* a, void* p, cudaIpcMemHandle_t* out) {
  if (!out) return cudaErrorInvalidValue;
  Exports& x = exports();
  {
    std::lock_guard<std::mutex> l(x.mu);
    auto it = x.by_block.find(reinterpret_cast<uintptr_t>(p));
    if (it != x.by_block.end()) {
      std::memcpy(out, &it->second.wire, sizeof(Wire));
      return cudaSuccess;
    }
  }
  uint64_t requested = 0;
  std::vector<GranuleMap::Chunk> chunks;
  if (!a->chunks_of_block(p, &requested, &chunks) || chunks.empty()) return cudaErrorInvalidValue;
  const cuda::DriverApi* api = cuda::driver();
  if (!api || cuda::bind_runtime_context(a->device()) != CUDA_SUCCESS) return cudaErrorInvalidValue;
  Export e;
  // The socket serves importers that pidfd_getfd refuses, and every
  // importer of fabric handles: without it, the descriptors' way.
  const bool serving = ipc_socket::serve(lookup);
  if (serving && export_fabric(api, a->device(), chunks, &e.fabric)) {
    for (const GranuleMap::Chunk& c : chunks) e.bytes.push_back(c.bytes), e.handles.push_back(c.handle);
    e.wire.flags = kWireFabric;
  }
  for (size_t i = 0; e.fabric.empty() && i < chunks.size(); ++i) {
    const GranuleMap::Chunk& c = chunks[i];
    int fd = -1;
    CUresult r = api->mem_export_to_shareable_handle(&fd, c.handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (r != CUDA_SUCCESS) {
      close_export(&e);
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true))
        log::warn("cudaIpcGetMemHandle: the driver refused to export the VMM allocator's memory as a POSIX file "
                  "descriptor (error {}); use GPUSLACK_CONF=allocator:native for programs that share device "
                  "memory over IPC",
                  static_cast<int>(r));
      return cudaErrorNotSupported;
    }
    track_fd(fd);
    e.fds.push_back(fd);
    e.bytes.push_back(c.bytes);
  }
  std::memcpy(e.wire.magic, kMagic, sizeof(kMagic));
  e.wire.pid = static_cast<int32_t>(getpid());
  e.wire.offset = reinterpret_cast<uintptr_t>(p) - chunks.front().offset;
  e.wire.size = requested;
  e.wire.device = a->device();
  e.wire.chunks = static_cast<uint32_t>(chunks.size());
  std::lock_guard<std::mutex> l(x.mu);
  auto it = x.by_block.find(reinterpret_cast<uintptr_t>(p));
  if (it != x.by_block.end()) {  // another thread exported it meanwhile
    close_export(&e);
    std::memcpy(out, &it->second.wire, sizeof(Wire));
    return cudaSuccess;
  }
  e.wire.id = x.next_id++;
  if (e.fabric.empty() && !write_layout(&e)) {
    close_export(&e);
    return cudaErrorMemoryAllocation;
  }
  e.wire.layout_fd = e.layout_fd;
  std::memcpy(out, &e.wire, sizeof(Wire));
  x.by_id[e.wire.id] = reinterpret_cast<uintptr_t>(p);
  x.by_block[reinterpret_cast<uintptr_t>(p)] = std::move(e);
  g_any_export.store(true, std::memory_order_release);
  return cudaSuccess;
}

void ipc_block_freed(const void* p) {
  if (!g_any_export.load(std::memory_order_acquire)) return;
  Exports& x = exports();
  std::lock_guard<std::mutex> l(x.mu);
  auto it = x.by_block.find(reinterpret_cast<uintptr_t>(p));
  if (it == x.by_block.end()) return;
  close_export(&it->second);
  x.by_id.erase(it->second.wire.id);
  x.by_block.erase(it);
}

cudaError_t ipc_open_handle(const cudaIpcMemHandle_t& h, unsigned flags, void** p) {
  if (!p || (flags & ~static_cast<unsigned>(cudaIpcMemLazyEnablePeerAccess))) return cudaErrorInvalidValue;
  *p = nullptr;
  Wire w;
  std::memcpy(&w, &h, sizeof(w));
  if (w.pid == static_cast<int32_t>(getpid())) return cudaErrorDeviceUninitialized;
  if (w.chunks == 0 || w.size == 0) return cudaErrorInvalidValue;
  auto key = std::make_pair(static_cast<int>(w.pid), w.id);
  Imports& m = imports();
  std::lock_guard<std::mutex> l(m.mu);
  if (auto it = m.by_key.find(key); it != m.by_key.end()) {
    ++it->second.refs;
    *p = reinterpret_cast<void*>(it->second.block);
    return cudaSuccess;
  }
  ipc_socket::Chunks got;
  // Note [An importer that cannot import fabric handles]
  bool fabric = (w.flags & kWireFabric) != 0 && !g_fabric_import_refused.load(std::memory_order_relaxed);
  bool taken = false;
  if ((w.flags & kWireFabric) == 0 && options().ipc_fds != "socket") {
    taken = take_with_pidfd(w, &got);
    if (!taken && errno != EPERM && errno != EACCES && errno != ENOSYS) return cudaErrorInvalidValue;
  }
  if (!taken && !fetch_chunks(w, !fabric, &got)) return cudaErrorInvalidValue;
  const cuda::DriverApi* api = cuda::driver();
  int device = 0;
  if (!api || cuda::get_device(&device) != cudaSuccess ||
      cuda::bind_runtime_context(device) != CUDA_SUCCESS) {
    for (int fd : got.fds) close(fd);
    return cudaErrorInvalidValue;
  }
  Import im;
  for (uint64_t b : got.bytes) im.span += b;
  CUresult r = import_chunks(api, fabric, got, &im.handles);
  if (r != CUDA_SUCCESS && fabric) {
    // This process cannot import what the exporter's driver offered (no
    // IMEX channel here): the same chunks, as descriptors.
    for (CUmemGenericAllocationHandle handle : im.handles) api->mem_release(handle);
    im.handles.clear();
    if (!g_fabric_import_refused.exchange(true))
      log::info("cudaIpcOpenMemHandle: this process cannot import fabric handles (error {}); the VMM allocator's "
                "blocks come to it as descriptors over the exporter's socket",
                static_cast<int>(r));
    got = ipc_socket::Chunks();
    if (!fetch_chunks(w, true, &got)) return cudaErrorInvalidValue;
    r = import_chunks(api, false, got, &im.handles);
  }
  for (int fd : got.fds) close(fd);  // the imported handles hold the memory
  if (r == CUDA_SUCCESS) r = api->mem_address_reserve(&im.va, im.span, 0, 0, 0);
  size_t mapped = 0;
  for (uint64_t off = 0; r == CUDA_SUCCESS && mapped < im.handles.size(); ++mapped) {
    r = api->mem_map(im.va + off, got.bytes[mapped], 0, im.handles[mapped], 0);
    if (r != CUDA_SUCCESS) break;
    off += got.bytes[mapped];
  }
  if (r == CUDA_SUCCESS) {
    std::vector<CUmemAccessDesc> access(1);
    access[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access[0].location.id = device;
    access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (w.device != device) {
      access.push_back(access[0]);
      access[1].location.id = w.device;
    }
    r = api->mem_set_access(im.va, im.span, access.data(), access.size());
    if (r != CUDA_SUCCESS && access.size() > 1)  // the exporter's device may not be visible here
      r = api->mem_set_access(im.va, im.span, access.data(), 1);
  }
  if (r != CUDA_SUCCESS || w.offset + w.size > im.span) {
    for (size_t i = 0, off = 0; i < mapped; off += got.bytes[i], ++i) api->mem_unmap(im.va + off, got.bytes[i]);
    for (CUmemGenericAllocationHandle handle : im.handles) api->mem_release(handle);
    if (im.va) api->mem_address_free(im.va, im.span);
    return r == CUDA_SUCCESS ? cudaErrorInvalidValue : cudaErrorMapBufferObjectFailed;
  }
  im.block = static_cast<uintptr_t>(im.va) + w.offset;
  im.size = w.size;
  im.refs = 1;
  im.chunk_bytes = got.bytes;
  *p = reinterpret_cast<void*>(im.block);
  m.by_block[im.block] = key;
  m.by_key[key] = std::move(im);
  g_any_import.store(true, std::memory_order_release);
  return cudaSuccess;
}

bool ipc_close_handle(void* p, cudaError_t* result) {
  Imports& m = imports();
  Import im;
  {
    std::lock_guard<std::mutex> l(m.mu);
    auto b = m.by_block.find(reinterpret_cast<uintptr_t>(p));
    if (b == m.by_block.end()) return false;
    auto it = m.by_key.find(b->second);
    *result = cudaSuccess;
    if (--it->second.refs > 0) return true;
    im = std::move(it->second);
    m.by_key.erase(it);
    m.by_block.erase(b);
  }
  const cuda::DriverApi* api = cuda::driver();
  cuda::bind_runtime_context();  // the driver's calls need a context on this thread
  // Work queued on the device may still use the mapping: cuMemUnmap waits
  // for it, as a real driver's does (cuda.h, \note_sync).
  uint64_t off = 0;
  for (size_t i = 0; i < im.handles.size(); ++i) {
    api->mem_unmap(im.va + off, im.chunk_bytes[i]);
    api->mem_release(im.handles[i]);
    off += im.chunk_bytes[i];
  }
  api->mem_address_free(im.va, im.span);
  return true;
}

bool ipc_imported_range(const void* p, uintptr_t* base, size_t* size) {
  if (!g_any_import.load(std::memory_order_acquire)) return false;
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  Imports& m = imports();
  std::lock_guard<std::mutex> l(m.mu);
  auto b = m.by_block.upper_bound(a);
  if (b == m.by_block.begin()) return false;
  --b;
  const Import& im = m.by_key.at(b->second);
  if (a - im.block >= im.size) return false;
  *base = im.block;
  *size = im.size;
  return true;
}

namespace testing {
void while_holding_ipc_locks(void (*during)(void*), void* arg) {
  register_block_ipc_fork_handlers();  // as session::start would have
  std::lock_guard<std::mutex> e(exports().mu);
  std::lock_guard<std::mutex> i(imports().mu);
  ipc_socket::testing::while_holding_lock(during, arg);
}
}  // namespace testing

}  // namespace alloc
}  // namespace gpuslack
