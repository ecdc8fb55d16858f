// libcuda.so.1 of the simulated device: the host memory behind physical VMM
// allocations. The design and why: driver_vmm_backing.h, Note [One arena,
// not one memfd per handle].
#include "driver_vmm_backing.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace gpusim::drv {
namespace {

// The arena: one sparse memfd, grown by ftruncate (no memory) and carved by
// a bump pointer. Its name is no property string (driver_vmm.cc's
// memfd_name), so it can never be imported as a handle.
struct Arena {
  int fd = -1;
  off_t size = 0;  // the file's length
  off_t next = 0;  // where the next slice starts; offsets are never reused
};

Arena& arena() {
  static Arena* a = new Arena();  // never destroyed: mappings outlive main()
  return *a;
}

constexpr off_t kGrowth = 64ll << 30;  // the least the file grows by

void punch(int fd, off_t offset, size_t size) {
  fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, static_cast<off_t>(size));
}

// Copies what holds data in [from_off, from_off + size) of `from` to the
// same place relative to `to_off` in `to`; holes stay holes (SEEK_DATA), so
// untouched pages are not faulted in.
bool copy_data(int from, off_t from_off, int to, off_t to_off, size_t size) {
  std::vector<char> buf(1 << 20);
  off_t end = from_off + static_cast<off_t>(size);
  off_t cur = from_off;
  while (cur < end) {
    off_t data = lseek(from, cur, SEEK_DATA);
    if (data < 0) return errno == ENXIO;  // no data after cur
    if (data >= end) break;
    off_t hole = lseek(from, data, SEEK_HOLE);
    if (hole < 0) return false;
    hole = std::min(hole, end);
    for (off_t p = data; p < hole;) {
      size_t n = static_cast<size_t>(std::min<off_t>(hole - p, static_cast<off_t>(buf.size())));
      ssize_t got = pread(from, buf.data(), n, p);
      if (got <= 0) return false;
      if (pwrite(to, buf.data(), static_cast<size_t>(got), to_off + (p - from_off)) != got) return false;
      p += got;
    }
    cur = hole;
  }
  return true;
}

bool map_at(const LiveMapping& m, int fd, off_t base) {
  void* p = mmap(reinterpret_cast<void*>(m.addr), m.size, m.prot, MAP_SHARED | MAP_FIXED, fd,
                 base + static_cast<off_t>(m.offset));
  return p != MAP_FAILED;
}

}  // namespace

bool backing_create(size_t size, Backing* out) {
  Arena& a = arena();
  if (a.fd < 0) {
    a.fd = memfd_create("gpusim-vmm-arena", MFD_CLOEXEC);
    if (a.fd < 0) return false;
  }
  off_t need = a.next + static_cast<off_t>(size);
  if (need > a.size) {
    off_t grown = std::max({need, a.size * 2, kGrowth});
    if (ftruncate(a.fd, grown) != 0) return false;
    a.size = grown;
  }
  out->fd = a.fd;
  out->offset = a.next;
  out->own = false;
  a.next = need;
  return true;
}

bool backing_adopt(int fd, Backing* out) {
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return false;
  out->fd = own;
  out->offset = 0;
  out->own = true;
  return true;
}

void backing_destroy(const Backing& b, size_t size) {
  if (b.own) close(b.fd);
  else punch(b.fd, b.offset, size);
}

bool backing_make_own(Backing* b, size_t size, const char* name, const std::vector<LiveMapping>& live) {
  if (b->own) return true;
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return false;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 || !copy_data(b->fd, b->offset, fd, 0, size)) {
    close(fd);
    return false;
  }
  for (size_t i = 0; i < live.size(); ++i) {
    if (map_at(live[i], fd, 0)) continue;
    // Put back the ones already moved and the one that failed (a failed
    // MAP_FIXED may have unmapped it), and leave the handle in the arena.
    for (size_t j = 0; j <= i; ++j) map_at(live[j], b->fd, b->offset);
    close(fd);
    return false;
  }
  punch(b->fd, b->offset, size);
  b->fd = fd;
  b->offset = 0;
  b->own = true;
  return true;
}

constexpr char kFabricMagic[8] = {'g', 'p', 'u', 's', 'i', 'm', 'F', 'B'};

bool fabric_name(int fd, FabricName* out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  std::memset(out, 0, sizeof(*out));
  std::memcpy(out->magic, kFabricMagic, sizeof(kFabricMagic));
  out->pid = static_cast<int32_t>(getpid());
  out->fd = fd;
  out->inode = st.st_ino;
  out->dev = st.st_dev;
  out->size = static_cast<uint64_t>(st.st_size);
  return true;
}

int fabric_open(const FabricName& name) {
  if (std::memcmp(name.magic, kFabricMagic, sizeof(kFabricMagic)) != 0 || name.pid <= 0 || name.fd < 0) return -1;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", static_cast<int>(name.pid), static_cast<int>(name.fd));
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_ino != name.inode || st.st_dev != name.dev) {
    close(fd);  // the number now names another file: the handle is gone
    return -1;
  }
  return fd;
}

}  // namespace gpusim::drv
