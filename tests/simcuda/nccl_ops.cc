// libnccl.so.2 of the simulated device: collectives, point-to-point and
// groups.
//
// Each call becomes one op on the caller's stream (within a group: one op
// per communicator and stream, at the outermost ncclGroupEnd). When the
// stream's worker runs it, the op meets the other ranks' ops in the Clique:
//   - a collective waits at the slot of its sequence number; the last rank
//     to arrive computes every rank's output from every rank's input (all
//     "device" memory is host memory here), and every rank then holds its
//     worker until start + the modeled time, start being the last arrival;
//   - the ops of one group post all their sends first, then run their
//     collectives, then complete their receives, then wait until their sends
//     were consumed: send/recv pairs in one group never deadlock, while a
//     lone ncclSend holds its stream until the matching ncclRecv took the
//     data, as in NCCL.
// Modeled time: config().nccl_latency_us plus the bytes the nccl-tests
// bus-bandwidth definitions count, at config().nccl_gbps.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "nccl_internal.h"

namespace ncclsim {
namespace {

// --------------------------------------------------------------- datatypes --

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return x;
}
float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

// IEEE binary16, round to nearest even.
uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into inf: correct
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// FP8 (OCP): E4M3 (bias 7, no infinity, NaN = S.1111.111, max 448) and
// E5M2 (bias 15, IEEE-like). Conversions from float saturate to the largest
// finite value (__NV_SATFINITE), round to nearest even.
struct Fp8Table {
  float value[256];
  uint8_t max_finite;  // largest positive finite code
  uint8_t nan;
};

Fp8Table make_fp8(int exp_bits) {
  Fp8Table t{};
  int mant_bits = 7 - exp_bits;
  int bias = (1 << (exp_bits - 1)) - 1;
  for (int c = 0; c < 256; ++c) {
    int e = (c >> mant_bits) & ((1 << exp_bits) - 1);
    int m = c & ((1 << mant_bits) - 1);
    float v;
    if (e == 0) v = std::ldexp(static_cast<float>(m), 1 - bias - mant_bits);
    else v = std::ldexp(static_cast<float>((1 << mant_bits) | m), e - bias - mant_bits);
    bool special = exp_bits == 4 ? (c & 0x7f) == 0x7f : e == 0x1f;
    if (special) v = (exp_bits == 5 && m == 0) ? INFINITY : NAN;
    t.value[c] = (c & 0x80) ? -v : v;
  }
  t.max_finite = exp_bits == 4 ? 0x7e : 0x7b;
  t.nan = 0x7f;
  return t;
}

const Fp8Table& fp8_table(bool e4m3) {
  static const Fp8Table* e4 = new Fp8Table(make_fp8(4));
  static const Fp8Table* e5 = new Fp8Table(make_fp8(5));
  return e4m3 ? *e4 : *e5;
}

uint8_t float_to_fp8(float f, const Fp8Table& t) {
  if (std::isnan(f)) return t.nan;
  uint8_t sign = std::signbit(f) ? 0x80 : 0;
  float a = std::fabs(f);
  if (a >= t.value[t.max_finite]) return static_cast<uint8_t>(sign | t.max_finite);
  // Largest code whose value is <= a; positive codes are ordered by value.
  int lo = 0, hi = t.max_finite;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t.value[mid] <= a) lo = mid;
    else hi = mid - 1;
  }
  int c = lo;
  float below = a - t.value[c], above = t.value[c + 1] - a;
  if (above < below || (above == below && (c & 1))) ++c;
  return static_cast<uint8_t>(sign | c);
}

// Codecs: how one element is loaded into the type reductions use (V) and
// stored back.
template <class T>
struct Native {
  using V = T;
  static V load(const void* p, size_t i) { return static_cast<const T*>(p)[i]; }
  static void store(void* p, size_t i, V v) { static_cast<T*>(p)[i] = v; }
};
struct Half {
  using V = float;
  static V load(const void* p, size_t i) { return half_to_float(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, size_t i, V v) { static_cast<uint16_t*>(p)[i] = float_to_half(v); }
};
struct Bf16 {
  using V = float;
  static V load(const void* p, size_t i) { return bf16_to_float(static_cast<const uint16_t*>(p)[i]); }
  static void store(void* p, size_t i, V v) { static_cast<uint16_t*>(p)[i] = float_to_bf16(v); }
};
template <bool kE4M3>
struct Fp8 {
  using V = float;
  static V load(const void* p, size_t i) {
    return fp8_table(kE4M3).value[static_cast<const uint8_t*>(p)[i]];
  }
  static void store(void* p, size_t i, V v) {
    static_cast<uint8_t*>(p)[i] = float_to_fp8(v, fp8_table(kE4M3));
  }
};

template <class F>
void with_codec(ncclDataType_t t, F&& f) {
  switch (t) {
    case ncclInt8: f(Native<int8_t>{}); break;
    case ncclUint8: f(Native<uint8_t>{}); break;
    case ncclInt32: f(Native<int32_t>{}); break;
    case ncclUint32: f(Native<uint32_t>{}); break;
    case ncclInt64: f(Native<int64_t>{}); break;
    case ncclUint64: f(Native<uint64_t>{}); break;
    case ncclFloat16: f(Half{}); break;
    case ncclFloat32: f(Native<float>{}); break;
    case ncclFloat64: f(Native<double>{}); break;
    case ncclBfloat16: f(Bf16{}); break;
    case ncclFloat8e4m3: f(Fp8<true>{}); break;
    case ncclFloat8e5m2: f(Fp8<false>{}); break;
    default: break;
  }
}

template <class V>
V combine(ncclRedOp_t op, V a, V b) {
  switch (op) {
    case ncclSum:
    case ncclAvg:
      if constexpr (std::is_integral_v<V>) {
        using U = std::make_unsigned_t<V>;  // wraps, as on the GPU
        return static_cast<V>(static_cast<U>(a) + static_cast<U>(b));
      } else {
        return a + b;
      }
    case ncclProd:
      if constexpr (std::is_integral_v<V>) {
        using U = std::make_unsigned_t<V>;
        return static_cast<V>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      } else {
        return a * b;
      }
    case ncclMax: return b > a ? b : a;
    case ncclMin: return b < a ? b : a;
    default: return a;
  }
}

// out[i] = op over ranks of in[r][first + i], for i < n.
template <class C>
void reduce_block(ncclRedOp_t op, const std::vector<const void*>& in, size_t first, size_t n,
                  void* out) {
  using V = typename C::V;
  const int ranks = static_cast<int>(in.size());
  for (size_t i = 0; i < n; ++i) {
    V acc = C::load(in[0], first + i);
    for (int r = 1; r < ranks; ++r) acc = combine<V>(op, acc, C::load(in[r], first + i));
    if (op == ncclAvg) acc = static_cast<V>(acc / static_cast<V>(ranks));  // SumPostDiv
    C::store(out, i, acc);
  }
}

// Reduces `count` elements of each rank's `in` and copies the result to
// every non-null `out`, a block at a time: each block is read completely
// before any output is written, so in-place operation is safe.
void reduce_to(ncclDataType_t type, ncclRedOp_t op, const std::vector<const void*>& in,
               size_t count, const std::vector<void*>& out) {
  const size_t ts = type_size(type);
  constexpr size_t kBlock = 64 * 1024;
  std::vector<char> tmp(std::min(count, kBlock) * ts);
  for (size_t first = 0; first < count; first += kBlock) {
    size_t n = std::min(kBlock, count - first);
    with_codec(type, [&](auto codec) { reduce_block<decltype(codec)>(op, in, first, n, tmp.data()); });
    for (void* o : out)
      if (o) std::memcpy(static_cast<char*>(o) + first * ts, tmp.data(), n * ts);
  }
}

void copy(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes) std::memmove(dst, src, bytes);
}

const char* at(const void* p, size_t bytes) { return static_cast<const char*>(p) + bytes; }
char* at(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

// Computes every rank's output of one collective; args[r] is rank r's call.
void compute(const std::vector<Work>& args) {
  const Work& w = args[0];
  const int n = static_cast<int>(args.size());
  const size_t ts = type_size(w.type);
  const size_t bytes = w.count * ts;
  std::vector<const void*> in(n);
  std::vector<void*> out(n);
  switch (w.kind) {
    case Kind::kAllReduce:
      for (int r = 0; r < n; ++r) in[r] = args[r].send, out[r] = args[r].recv;
      reduce_to(w.type, w.op, in, w.count, out);
      break;
    case Kind::kReduce:
      for (int r = 0; r < n; ++r) in[r] = args[r].send;
      reduce_to(w.type, w.op, in, w.count, {args[w.root].recv});
      break;
    case Kind::kReduceScatter:
      for (int j = 0; j < n; ++j) {
        for (int r = 0; r < n; ++r) in[r] = at(args[r].send, j * bytes);
        reduce_to(w.type, w.op, in, w.count, {args[j].recv});
      }
      break;
    case Kind::kBroadcast:
      for (int j = 0; j < n; ++j) copy(args[j].recv, args[w.root].send, bytes);
      break;
    case Kind::kAllGather:
      // In place: rank r's send is its own block r, copied onto itself.
      for (int j = 0; j < n; ++j)
        for (int r = 0; r < n; ++r) copy(at(args[j].recv, r * bytes), args[r].send, bytes);
      break;
    case Kind::kGather:
      for (int r = 0; r < n; ++r) copy(at(args[w.root].recv, r * bytes), args[r].send, bytes);
      break;
    case Kind::kScatter:
      for (int j = 0; j < n; ++j) copy(args[j].recv, at(args[w.root].send, j * bytes), bytes);
      break;
    case Kind::kAlltoAll: {
      // Staged: block j of rank r's send becomes block r of rank j's recv,
      // which would overwrite inputs still to be read if they overlap.
      std::vector<char> stage(static_cast<size_t>(n) * n * bytes);
      for (int r = 0; r < n; ++r) std::memcpy(stage.data() + r * n * bytes, args[r].send, n * bytes);
      for (int j = 0; j < n; ++j)
        for (int r = 0; r < n; ++r)
          std::memcpy(at(args[j].recv, r * bytes), stage.data() + (r * n + j) * bytes, bytes);
      break;
    }
    case Kind::kSend:
    case Kind::kRecv:
      break;
  }
}

// The bytes the nccl-tests bus bandwidth counts (doc/PERFORMANCE.md there).
double modeled_us(const Work& w, int n) {
  const double size = static_cast<double>(w.count * type_size(w.type));
  const double ranks = n, share = (ranks - 1) / ranks;
  double moved = size;
  switch (w.kind) {
    case Kind::kAllReduce: moved = 2 * share * size; break;
    case Kind::kReduceScatter: case Kind::kAllGather: case Kind::kAlltoAll:
    case Kind::kGather: case Kind::kScatter:
      moved = share * size * ranks;  // S = the total over all ranks
      break;
    default: break;  // Broadcast, Reduce, Send, Recv: S
  }
  const gpusim::Config& cfg = gpusim::config();
  return cfg.nccl_latency_us + gpusim::transfer_us(static_cast<size_t>(moved), cfg.nccl_gbps);
}

bool same_call(const Work& a, const Work& b) {
  return a.kind == b.kind && a.count == b.count && a.type == b.type && a.root == b.root &&
         (a.op == b.op || (a.kind != Kind::kAllReduce && a.kind != Kind::kReduce &&
                           a.kind != Kind::kReduceScatter));
}

// ------------------------------------------------------------ the ops ------

// Holds the worker until `end`, or until the communicator is aborted.
void hold(Clique& c, std::unique_lock<std::mutex>& l, Clock::time_point end) {
  // A condition-variable wait for the bulk (abortable), a spin for the rest
  // (wait_until is precise to a few microseconds).
  c.cv.wait_until(l, end - std::chrono::microseconds(200), [&] { return c.aborted; });
  if (c.aborted) return;
  l.unlock();
  gpusim::wait_until(end);
  l.lock();
}

// One rank's part in a collective. Clique::mu held.
void run_collective(Clique& c, std::unique_lock<std::mutex>& l, int rank, int space,
                    const Work& w) {
  if (c.aborted) return;
  const auto key = std::make_pair(space, w.seq);
  CollSlot& s = c.colls[key];
  if (s.args.empty()) s.args.resize(c.nranks);
  s.args[rank] = w;
  if (++s.arrived == c.nranks) {
    auto start = Clock::now();
    s.end = gpusim::after(start, modeled_us(w, c.nranks));
    bool match = true;
    for (const Work& o : s.args) match = match && same_call(o, w);
    if (match) {
      s.computing = true;
      l.unlock();
      compute(s.args);
      l.lock();
      s.computing = false;
    } else if (c.error == ncclSuccess) {
      c.error = ncclInvalidUsage;  // ranks called different collectives
    }
    s.done = true;
    c.cv.notify_all();
  } else {
    c.cv.wait(l, [&] { return s.done || (c.aborted && !s.computing); });
  }
  Clock::time_point end = s.done ? s.end : Clock::now();
  if (++s.left == c.nranks) c.colls.erase(key);
  hold(c, l, end);
}

// The work of one rank on one stream: a single call, or everything one
// group issued for that communicator and stream.
struct Batch {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  bool graph = false;  // recorded into a CUDA graph: numbered when run
  std::vector<Work> works;
};

// Gives each work its rendezvous number in `space`. Clique::mu held.
void number(Clique& c, int rank, int space, std::vector<Work>* works) {
  for (Work& w : *works) {
    switch (w.kind) {
      case Kind::kSend: w.seq = c.send_next[space][{rank, w.root}]++; break;
      case Kind::kRecv: w.seq = c.recv_next[space][{w.root, rank}]++; break;
      default: w.seq = c.coll_next[space][rank]++; break;
    }
  }
}

void run_batch(const Batch& b) {
  Clique& c = *b.clique;
  const int me = b.rank;
  const int space = b.graph ? kGraph : kDirect;
  std::unique_lock<std::mutex> l(c.mu);
  std::vector<Work> works = b.works;  // a graph may replay the batch
  if (b.graph) number(c, me, space, &works);
  const gpusim::Config& cfg = gpusim::config();
  Clock::time_point end = Clock::now();

  // 1. Post every send.
  for (const Work& w : works) {
    if (w.kind != Kind::kSend || c.aborted) continue;
    P2pSlot& s = c.p2p[{space, me, w.root, w.seq}];
    s.posted = true;
    s.src = w.send;
    s.bytes = w.count * type_size(w.type);
    s.posted_at = Clock::now();
    c.cv.notify_all();
  }
  // 2. The collectives, in call order.
  for (const Work& w : works)
    if (w.kind != Kind::kSend && w.kind != Kind::kRecv) run_collective(c, l, me, space, w);
  // 3. Every receive: the transfer starts once both sides are there.
  for (const Work& w : works) {
    if (w.kind != Kind::kRecv) continue;
    auto arrived = Clock::now();
    P2pSlot& s = c.p2p[{space, w.root, me, w.seq}];
    c.cv.wait(l, [&] { return s.posted || c.aborted; });
    if (c.aborted) break;
    size_t bytes = w.count * type_size(w.type);
    if (bytes != s.bytes && c.error == ncclSuccess) c.error = ncclInvalidUsage;
    const void* src = s.src;
    size_t n = std::min(bytes, s.bytes);
    l.unlock();
    copy(w.recv, src, n);
    l.lock();
    s.end = gpusim::after(std::max(arrived, s.posted_at),
                          cfg.nccl_latency_us + gpusim::transfer_us(n, cfg.nccl_gbps));
    s.consumed = true;
    end = std::max(end, s.end);
    c.cv.notify_all();
  }
  // 4. Every send was consumed.
  for (const Work& w : works) {
    if (w.kind != Kind::kSend) continue;
    const auto key = std::make_tuple(space, me, w.root, w.seq);
    P2pSlot& s = c.p2p[key];
    c.cv.wait(l, [&] { return s.consumed || c.aborted; });
    if (!s.consumed) break;
    end = std::max(end, s.end);
    c.p2p.erase(key);
  }
  hold(c, l, end);
  if (!b.graph && --c.pending[me] == 0) c.cv.notify_all();
}

// ---------------------------------------------------------------- enqueue --

CUstream_st* comm_stream(const ncclComm* comm, cudaStream_t h) {
  // NULL (and cudaStreamLegacy) is the legacy stream of the comm's device.
  if (h == nullptr || h == cudaStreamLegacy) return gpusim::legacy_stream(comm->device);
  return gpusim::resolve(h, false);
}

void submit(ncclComm* comm, CUstream_st* stream, std::vector<Work> works) {
  auto b = std::make_shared<Batch>();
  b->clique = comm->clique;
  b->rank = comm->rank;
  b->graph = gpusim::is_capturing(stream);
  b->works = std::move(works);
  if (!b->graph) {
    std::lock_guard<std::mutex> l(b->clique->mu);
    number(*b->clique, b->rank, kDirect, &b->works);
    ++b->clique->pending[b->rank];
  }
  gpusim::enqueue(stream, [b] { run_batch(*b); });
}

struct Deferred {
  ncclComm* comm;
  CUstream_st* stream;
  Work work;
};

struct GroupState {
  int depth = 0;
  std::vector<Deferred> works;
  std::vector<ncclComm*> inits;  // blocking inits whose wait is deferred
  ncclResult_t error = ncclSuccess;
};
thread_local GroupState t_group;

// A buffer the GPU will access: device memory of the comm's device, or
// pinned host memory (mapped into the device's address space).
ncclResult_t check_buffer(const ncclComm* comm, const void* p, size_t bytes, const char* what,
                          const char* name) {
  if (bytes == 0) return ncclSuccess;
  gpusim::Region r;
  if (!p || !gpusim::Memory::get().find(p, bytes, &r))
    return fail(ncclInvalidArgument, std::string(what) + ": " + name + " is not a valid device pointer");
  if ((r.kind == gpusim::MemKind::kDevice || r.kind == gpusim::MemKind::kDeviceAsync) &&
      r.device != comm->device)
    return fail(ncclInvalidArgument, std::string(what) + ": " + name + " is on another device");
  return ncclSuccess;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kAllReduce: return "AllReduce";
    case Kind::kBroadcast: return "Broadcast";
    case Kind::kReduce: return "Reduce";
    case Kind::kAllGather: return "AllGather";
    case Kind::kReduceScatter: return "ReduceScatter";
    case Kind::kAlltoAll: return "AlltoAll";
    case Kind::kGather: return "Gather";
    case Kind::kScatter: return "Scatter";
    case Kind::kSend: return "Send";
    case Kind::kRecv: return "Recv";
  }
  return "?";
}

ncclResult_t validate(ncclComm* comm, const Work& w) {
  const char* what = kind_name(w.kind);
  if (ncclResult_t r = usable(comm)) return r;
  if (w.type < 0 || w.type >= ncclNumTypes) return fail(ncclInvalidArgument, std::string(what) + ": invalid datatype");
  if (w.op < 0 || w.op >= ncclNumOps) return fail(ncclInvalidArgument, std::string(what) + ": invalid reduction op");
  const int n = comm->nranks;
  if (w.root < 0 || w.root >= n)
    return fail(ncclInvalidArgument, std::string(what) + (w.kind == Kind::kSend || w.kind == Kind::kRecv
                                                              ? ": invalid peer" : ": invalid root"));
  const size_t bytes = w.count * type_size(w.type), all = bytes * n;
  const bool root = comm->rank == w.root;
  size_t send = 0, recv = 0;
  switch (w.kind) {
    case Kind::kAllReduce: send = bytes, recv = bytes; break;
    case Kind::kBroadcast: send = root ? bytes : 0, recv = bytes; break;
    case Kind::kReduce: send = bytes, recv = root ? bytes : 0; break;
    case Kind::kAllGather: send = bytes, recv = all; break;
    case Kind::kReduceScatter: send = all, recv = bytes; break;
    case Kind::kAlltoAll: send = all, recv = all; break;
    case Kind::kGather: send = bytes, recv = root ? all : 0; break;
    case Kind::kScatter: send = root ? all : 0, recv = bytes; break;
    case Kind::kSend: send = bytes; break;
    case Kind::kRecv: recv = bytes; break;
  }
  if (ncclResult_t r = check_buffer(comm, w.send, send, what, "sendbuff")) return r;
  return check_buffer(comm, w.recv, recv, what, "recvbuff");
}

// Every API call: validate, then enqueue now or at the group's end.
ncclResult_t issue(ncclComm* comm, cudaStream_t h, Work w) {
  ncclResult_t r = validate(comm, w);
  CUstream_st* stream = r == ncclSuccess ? comm_stream(comm, h) : nullptr;
  if (r == ncclSuccess && !stream) r = fail(ncclUnhandledCudaError, "invalid stream");
  if (r == ncclSuccess && w.count == 0 && w.kind != Kind::kSend && w.kind != Kind::kRecv)
    return ncclSuccess;  // NCCL skips empty collectives
  if (t_group.depth > 0) {
    if (r != ncclSuccess) {
      if (t_group.error == ncclSuccess) t_group.error = r;  // the group fails at its end
      return r;
    }
    t_group.works.push_back({comm, stream, w});
    return ncclSuccess;
  }
  if (r != ncclSuccess) return r;
  submit(comm, stream, {w});
  return ncclSuccess;
}

Work make(Kind kind, const void* send, void* recv, size_t count, ncclDataType_t type,
          ncclRedOp_t op, int root) {
  Work w;
  w.kind = kind;
  w.send = send;
  w.recv = recv;
  w.count = count;
  w.type = type;
  w.op = op;
  w.root = root;
  return w;
}

}  // namespace

bool group_defer_init(ncclComm* comm) {
  if (t_group.depth == 0) return false;
  t_group.inits.push_back(comm);
  return true;
}

}  // namespace ncclsim

using namespace ncclsim;

// ------------------------------------------------------------ collectives --

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0));
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kBroadcast, buff, buff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kReduce, sendbuff, recvbuff, count, datatype, op, root));
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0));
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0));
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0));
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kGather, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kScatter, sendbuff, recvbuff, count, datatype, ncclSum, root));
}

// ---------------------------------------------------------- point to point --

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kSend, sendbuff, nullptr, count, datatype, ncclSum, peer));
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, stream, make(Kind::kRecv, nullptr, recvbuff, count, datatype, ncclSum, peer));
}

// ----------------------------------------------------------------- groups --

NCCL_API(ncclResult_t, ncclGroupStart) {
  ++t_group.depth;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGroupEnd) {
  GroupState& g = t_group;
  if (g.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--g.depth > 0) return ncclSuccess;
  std::vector<Deferred> works = std::move(g.works);
  std::vector<ncclComm*> inits = std::move(g.inits);
  ncclResult_t result = g.error;
  g = GroupState();
  for (ncclComm* c : inits)
    if (ncclResult_t r = wait_init(c); r != ncclSuccess && result == ncclSuccess) result = r;
  if (result != ncclSuccess) return result;  // the whole group is dropped, as in NCCL
  // One op per (communicator, stream), in order of first use.
  std::vector<std::pair<ncclComm*, CUstream_st*>> order;
  std::map<std::pair<ncclComm*, CUstream_st*>, std::vector<Work>> batches;
  for (Deferred& d : works) {
    auto key = std::make_pair(d.comm, d.stream);
    auto [it, fresh] = batches.try_emplace(key);
    if (fresh) order.push_back(key);
    it->second.push_back(d.work);
  }
  for (const auto& key : order) submit(key.first, key.second, std::move(batches[key]));
  return ncclSuccess;
}
