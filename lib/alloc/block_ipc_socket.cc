#include "alloc/block_ipc_socket.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "base/fork_handler.h"
#include "base/quiet_thread.h"

namespace gpuslack {
namespace alloc {
namespace ipc_socket {
namespace {

constexpr uint64_t kMagic = 0x33636970736c7067ull;  // "gplspic3"
constexpr size_t kFdsPerMessage = 200;              // SCM_MAX_FD is 253
constexpr int kTimeoutMs = 10000;

struct Request {
  uint64_t magic;
  uint64_t id;
  uint64_t flags;  // kWantDescriptors
};
// Descriptors even for an export made of fabric handles.
constexpr uint64_t kWantDescriptors = 1;
struct Reply {
  uint64_t magic;
  uint64_t count;   // chunks; 0: no such export
  uint64_t fabric;  // 1: fabric handles follow the sizes, no descriptors
};

socklen_t address(pid_t pid, sockaddr_un* a) {
  std::memset(a, 0, sizeof(*a));
  a->sun_family = AF_UNIX;
  int n = std::snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "gpuslack-ipc-%d", static_cast<int>(pid));
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

bool wait_for(int fd, short events) {
  pollfd p{fd, events, 0};
  int r;
  do r = poll(&p, 1, kTimeoutMs);
  while (r < 0 && errno == EINTR);
  return r == 1 && (p.revents & events);
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    if (!wait_for(fd, POLLOUT)) return false;
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w, n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (!wait_for(fd, POLLIN)) return false;
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= static_cast<size_t>(r);
  }
  return true;
}

// One byte, with up to kFdsPerMessage descriptors attached.
bool send_fds(int sock, const int* fds, size_t n) {
  char byte = 'f';
  iovec iov{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * n));
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * n);
  std::memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  if (!wait_for(sock, POLLOUT)) return false;
  return sendmsg(sock, &m, MSG_NOSIGNAL) == 1;
}

// Appends the descriptors of one message to `out`.
bool recv_fds(int sock, std::vector<int>* out) {
  char byte;
  iovec iov{&byte, 1};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kFdsPerMessage));
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  if (!wait_for(sock, POLLIN) || recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1) return false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const int* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
    out->insert(out->end(), fds, fds + n);
  }
  return (m.msg_flags & MSG_CTRUNC) == 0;
}

void answer(int conn, const std::function<bool(uint64_t, bool, Chunks*)>& lookup) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) return;
  Request req{};
  if (!read_all(conn, &req, sizeof(req)) || req.magic != kMagic) return;
  Chunks c;
  Reply reply{kMagic, lookup(req.id, (req.flags & kWantDescriptors) != 0, &c) ? c.bytes.size() : 0,
              c.fabric.empty() ? 0u : 1u};
  bool ok = write_all(conn, &reply, sizeof(reply)) && reply.count > 0 &&
            write_all(conn, c.bytes.data(), c.bytes.size() * sizeof(uint64_t));
  if (ok && reply.fabric) ok = write_all(conn, c.fabric.data(), c.fabric.size() * sizeof(FabricHandle));
  for (size_t i = 0; ok && i < c.fds.size(); i += kFdsPerMessage)
    ok = send_fds(conn, c.fds.data() + i, std::min(kFdsPerMessage, c.fds.size() - i));
  for (int fd : c.fds) close(fd);
}

std::mutex g_serve_mu;
// The server's socket; -2: not tried yet, -1: failed. Written under g_serve_mu.
std::atomic<int> g_listening{-2};

// In the child of a fork (Note [Block IPC after a fork] in block_ipc.cc):
// the server's thread is not there, and its socket bears the parent's pid
// (importers asking for the child's exports would find no one). The child
// closes its copy of the socket (the parent's server keeps its own) and
// makes the lock anew: its first export starts a server of its own. No
// lock, no allocation.
void forget_after_fork_child() {
  int s = g_listening.exchange(-2, std::memory_order_relaxed);
  if (s >= 0) close(s);
  new (&g_serve_mu) std::mutex();
}
std::atomic<bool> g_fork_handler_registered{false};

}  // namespace

void register_fork_handler() { register_fork_child_once(g_fork_handler_registered, forget_after_fork_child); }

bool serve(std::function<bool(uint64_t id, bool descriptors, Chunks* out)> lookup) {
  std::lock_guard<std::mutex> l(g_serve_mu);
  const int tried = g_listening.load(std::memory_order_relaxed);
  if (tried != -2) return tried >= 0;
  g_listening.store(-1, std::memory_order_relaxed);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  sockaddr_un a;
  socklen_t n = address(getpid(), &a);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), n) != 0 || listen(s, 16) != 0) {
    close(s);
    return false;
  }
  g_listening.store(s, std::memory_order_relaxed);
  // The server lives as long as the process (a daemon thread, detached).
  start_quiet_thread([s, lookup = std::move(lookup)] {
    for (;;) {
      int conn = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      answer(conn, lookup);
      close(conn);
    }
  }).detach();
  return true;
}

// The server at the other end runs as this process's user, as answer()
// asks of its clients: an abstract name can be bound by anyone first.
bool server_is_this_user(int sock) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  return getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == getuid();
}

bool fetch(pid_t pid, uint64_t id, uint32_t chunks, bool descriptors, Chunks* out) {
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  sockaddr_un a;
  socklen_t n = address(pid, &a);
  bool ok = false;
  Reply reply{};
  Request req{kMagic, id, descriptors ? kWantDescriptors : 0};
  if (connect(s, reinterpret_cast<sockaddr*>(&a), n) == 0 && server_is_this_user(s) &&
      write_all(s, &req, sizeof(req)) && read_all(s, &reply, sizeof(reply)) && reply.magic == kMagic &&
      reply.count > 0 && reply.count == chunks && chunks < (1u << 24)) {
    out->bytes.resize(reply.count);
    ok = read_all(s, out->bytes.data(), reply.count * sizeof(uint64_t));
    if (reply.fabric) {  // never asked for with `descriptors`: the caller refuses it
      out->fabric.resize(reply.count);
      ok = ok && read_all(s, out->fabric.data(), reply.count * sizeof(FabricHandle));
    } else {
      while (ok && out->fds.size() < reply.count) ok = recv_fds(s, &out->fds);
      ok = ok && out->fds.size() == reply.count;
    }
  }
  close(s);
  if (!ok) {
    for (int fd : out->fds) close(fd);
    out->fds.clear();
    out->fabric.clear();
  }
  return ok;
}

namespace testing {
void while_holding_lock(void (*during)(void*), void* arg) {
  std::lock_guard<std::mutex> l(g_serve_mu);
  during(arg);
}
}  // namespace testing

}  // namespace ipc_socket
}  // namespace alloc
}  // namespace gpuslack
