// libnccl.so.2 of the simulated device: what collectives compute and how
// long they take. Datatypes (the 16-bit and fp8 ones converted through
// float), reductions, every collective's data movement, and the modeled
// time by the nccl-tests bus-bandwidth definitions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "nccl_internal.h"

namespace ncclsim {

// --------------------------------------------------------------- datatypes --

size_t type_size(int t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

namespace {

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

const char* at(const void* p, size_t bytes) { return static_cast<const char*>(p) + bytes; }
char* at(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

}  // namespace

// --------------------------------------------------------- collectives ----

void copy(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes) std::memmove(dst, src, bytes);
}

void reduce_into(int type, int op, const std::vector<const void*>& in, size_t count, void* out) {
  reduce_to(static_cast<ncclDataType_t>(type), static_cast<ncclRedOp_t>(op), in, count, {out});
}

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
      reduce_to(static_cast<ncclDataType_t>(w.type), static_cast<ncclRedOp_t>(w.op), in, w.count, out);
      break;
    case Kind::kReduce:
      for (int r = 0; r < n; ++r) in[r] = args[r].send;
      reduce_to(static_cast<ncclDataType_t>(w.type), static_cast<ncclRedOp_t>(w.op), in, w.count, {args[w.root].recv});
      break;
    case Kind::kReduceScatter:
      for (int j = 0; j < n; ++j) {
        for (int r = 0; r < n; ++r) in[r] = at(args[r].send, j * bytes);
        reduce_to(static_cast<ncclDataType_t>(w.type), static_cast<ncclRedOp_t>(w.op), in, w.count, {args[j].recv});
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
  if (w.fabric_us > 0) return w.fabric_us;
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

}  // namespace ncclsim
