// The simulated NCCL's (libnccl.so.2) collectives against NCCL's documented
// semantics, for 2, 3 and 4 ranks (the Ranks/NcclCollectives suite):
// results equal an independently computed reference for every datatype and
// reduction, in-place variants, and point-to-point within groups. Holds that
// reference computation.
//
// Ranks are threads, each on its own simulated device (GPUSIM_DEVICE_COUNT=4).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <nccl.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "nccl_test_util.h"

using namespace nccltest;

namespace {

// ------------------------------------------------- datatypes, reference ---
// Element access through the CUDA headers' own conversions, independent of
// the library's.

size_t tsize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

bool is_float(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 ||
         t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
}
bool is_unsigned(ncclDataType_t t) { return t == ncclUint8 || t == ncclUint32 || t == ncclUint64; }

float fp8_to_float(unsigned char b, __nv_fp8_interpretation_t kind) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(b, kind)));
}

double get(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8: return static_cast<const int8_t*>(p)[i];
    case ncclUint8: return static_cast<const uint8_t*>(p)[i];
    case ncclInt32: return static_cast<const int32_t*>(p)[i];
    case ncclUint32: return static_cast<const uint32_t*>(p)[i];
    case ncclInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat16: return __half2float(static_cast<const __half*>(p)[i]);
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat64: return static_cast<const double*>(p)[i];
    case ncclBfloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case ncclFloat8e4m3: return fp8_to_float(static_cast<const unsigned char*>(p)[i], __NV_E4M3);
    case ncclFloat8e5m2: return fp8_to_float(static_cast<const unsigned char*>(p)[i], __NV_E5M2);
    default: return 0;
  }
}

void put(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case ncclUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case ncclInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case ncclUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case ncclInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ncclUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case ncclFloat16: static_cast<__half*>(p)[i] = __float2half(static_cast<float>(v)); break;
    case ncclFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    case ncclBfloat16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(static_cast<float>(v)); break;
    case ncclFloat8e4m3:
      static_cast<unsigned char*>(p)[i] = __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, __NV_E4M3);
      break;
    case ncclFloat8e5m2:
      static_cast<unsigned char*>(p)[i] = __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, __NV_E5M2);
      break;
    default: break;
  }
}

// Allowed error relative to max(1, |reference|); 0: exact.
double tolerance(ncclDataType_t t, ncclRedOp_t op) {
  if (!is_float(t)) return 0;
  switch (t) {
    case ncclFloat32: return 1e-5;
    case ncclFloat64: return 1e-12;
    default: break;
  }
  if (op == ncclMax || op == ncclMin) return 0;  // picks one of the inputs
  // fp8 sums and products of these small values are exact in float, so the
  // one rounding the library does must be CUDA's __nv_cvt_float_to_fp8.
  if ((t == ncclFloat8e4m3 || t == ncclFloat8e5m2) && op != ncclAvg) return 0;
  switch (t) {
    case ncclFloat16: return 4e-3;
    case ncclBfloat16: return 3e-2;
    case ncclFloat8e4m3: return 0.13;
    default: return 0.26;  // e5m2
  }
}

double random_value(ncclDataType_t t, ncclRedOp_t op, std::mt19937& rng) {
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto ints = [&](int lo, int hi) { return static_cast<double>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  if (op == ncclProd) {
    if (is_float(t)) return (rng() & 1 ? 1 : -1) * uni(0.5, 1.5);
    return is_unsigned(t) ? ints(0, 3) : ints(-3, 3);
  }
  if (is_float(t)) return uni(-1, 1);
  if (t == ncclInt8) return ints(-30, 30);
  if (t == ncclUint8) return ints(0, 60);
  return is_unsigned(t) ? ints(0, 1000) : ints(-1000, 1000);
}

// The expected output of reducing `in` (one buffer per rank), element i.
double reference(ncclDataType_t t, ncclRedOp_t op, const std::vector<Bytes>& in, size_t i) {
  const int n = static_cast<int>(in.size());
  double acc = get(t, in[0].data(), i);
  for (int r = 1; r < n; ++r) {
    double v = get(t, in[r].data(), i);
    switch (op) {
      case ncclSum: case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = std::max(acc, v); break;
      case ncclMin: acc = std::min(acc, v); break;
      default: break;
    }
  }
  if (op == ncclAvg) acc = is_float(t) ? acc / n : std::trunc(acc / n);  // integers: SumPostDiv
  // Stored in the datatype: the one rounding a correct result may have.
  Bytes cell(8);
  put(t, cell.data(), 0, acc);
  return get(t, cell.data(), 0);
}

const ncclDataType_t kTypes[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
                                 ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
                                 ncclFloat8e4m3, ncclFloat8e5m2};
const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

// ------------------------------------------------------- collectives ------

class NcclCollectives : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Ranks, NcclCollectives, ::testing::Values(2, 3, 4),
                         [](const auto& p) { return std::to_string(p.param) + "ranks"; });


TEST_P(NcclCollectives, AllReduceMatchesReferenceForEveryTypeAndOp) {
  const int n = GetParam();
  struct Case {
    ncclDataType_t t;
    ncclRedOp_t op;
    size_t count;
    std::vector<Bytes> in, out;
  };
  std::vector<Case> cases;
  std::mt19937 rng(1234 + n);
  for (ncclDataType_t t : kTypes)
    for (ncclRedOp_t op : kOps) {
      // One case spans several of the library's 64K-element blocks.
      size_t count = (t == ncclFloat32 && op == ncclSum) ? 150001 : 1000 + rng() % 100;
      Case c{t, op, count, std::vector<Bytes>(n, Bytes(count * tsize(t))), std::vector<Bytes>(n)};
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) put(t, c.in[r].data(), i, random_value(t, op, rng));
      cases.push_back(std::move(c));
    }
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    for (Case& c : cases) {
      size_t bytes = c.in[r].size();
      void* send = to_device(c.in[r].data(), bytes);
      void* recv = nullptr;
      ASSERT_EQ(cudaSuccess, cudaMalloc(&recv, bytes));
      ASSERT_EQ(ncclSuccess, ncclAllReduce(send, recv, c.count, c.t, c.op, comm, s));
      ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
      c.out[r] = from_device(recv, bytes);
      cudaFree(send);
      cudaFree(recv);
    }
  });
  for (const Case& c : cases) {
    double tol = tolerance(c.t, c.op);
    int bad = 0;
    for (size_t i = 0; i < c.count && bad < 5; ++i) {
      double want = reference(c.t, c.op, c.in, i);
      for (int r = 0; r < n; ++r) {
        double got = get(c.t, c.out[r].data(), i);
        bool ok = tol == 0 ? got == want : std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "type " << c.t << " op " << c.op << " rank " << r << " element " << i
                        << ": got " << got << ", want " << want;
      }
    }
  }
}

TEST_P(NcclCollectives, AllGatherBroadcastReduceAndReduceScatter) {
  const int n = GetParam();
  const size_t count = 3001;
  const int bcast_root = n - 1, reduce_root = 1;
  std::vector<std::vector<int32_t>> gathered(n), bcast(n), scattered(n), reduced(n);
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    std::vector<int32_t> mine(count * n);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = val(r, i);
    void* send = to_device(mine.data(), mine.size() * 4);
    void *gather_out, *bcast_out, *rs_out, *reduce_out;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&gather_out, count * n * 4));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&bcast_out, count * 4));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&rs_out, count * 4));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&reduce_out, count * 4));
    ASSERT_EQ(ncclSuccess, ncclAllGather(send, gather_out, count, ncclInt32, comm, s));
    ASSERT_EQ(ncclSuccess, ncclBroadcast(send, bcast_out, count, ncclInt32, bcast_root, comm, s));
    ASSERT_EQ(ncclSuccess, ncclReduceScatter(send, rs_out, count, ncclInt32, ncclSum, comm, s));
    ASSERT_EQ(ncclSuccess, ncclReduce(send, r == reduce_root ? reduce_out : nullptr, count, ncclInt32,
                                      ncclMax, reduce_root, comm, s));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    gathered[r] = download<int32_t>(gather_out, count * n);
    bcast[r] = download<int32_t>(bcast_out, count);
    scattered[r] = download<int32_t>(rs_out, count);
    if (r == reduce_root) reduced[r] = download<int32_t>(reduce_out, count);
    for (void* p : {send, gather_out, bcast_out, rs_out, reduce_out}) cudaFree(p);
  });
  for (int j = 0; j < n; ++j) {
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(val(r, i), gathered[j][r * count + i]) << j;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(val(bcast_root, i), bcast[j][i]);
      int32_t sum = 0;
      for (int r = 0; r < n; ++r) sum += val(r, j * count + i);
      ASSERT_EQ(sum, scattered[j][i]) << "rank " << j << " element " << i;
    }
  }
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(val(n - 1, i), reduced[reduce_root][i]);
}

TEST_P(NcclCollectives, AlltoAllGatherAndScatter) {
  const int n = GetParam();
  const size_t count = 1003;
  const int gather_root = n - 1, scatter_root = 1;
  std::vector<std::vector<int32_t>> a2a(n), gathered(n), scattered(n);
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    std::vector<int32_t> mine(count * n);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = val(r, i);
    void* send = to_device(mine.data(), mine.size() * 4);
    void *a2a_out, *gather_out = nullptr, *scatter_out;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&a2a_out, count * n * 4));
    if (r == gather_root) {
      ASSERT_EQ(cudaSuccess, cudaMalloc(&gather_out, count * n * 4));
    }
    ASSERT_EQ(cudaSuccess, cudaMalloc(&scatter_out, count * 4));
    ASSERT_EQ(ncclSuccess, ncclAlltoAll(send, a2a_out, count, ncclInt32, comm, s));
    ASSERT_EQ(ncclSuccess, ncclGather(send, gather_out, count, ncclInt32, gather_root, comm, s));
    ASSERT_EQ(ncclSuccess, ncclScatter(r == scatter_root ? send : nullptr, scatter_out, count, ncclInt32,
                                       scatter_root, comm, s));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    a2a[r] = download<int32_t>(a2a_out, count * n);
    if (r == gather_root) gathered[r] = download<int32_t>(gather_out, count * n);
    scattered[r] = download<int32_t>(scatter_out, count);
    for (void* p : {send, a2a_out, gather_out, scatter_out}) cudaFree(p);
  });
  for (int j = 0; j < n; ++j)
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        // Block j of rank r's send is block r of rank j's receive.
        ASSERT_EQ(val(r, j * count + i), a2a[j][r * count + i]);
        ASSERT_EQ(val(r, i), gathered[gather_root][r * count + i]);
      }
  for (int j = 0; j < n; ++j)
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(val(scatter_root, j * count + i), scattered[j][i]);
}

TEST_P(NcclCollectives, InPlaceVariants) {
  const int n = GetParam();
  const size_t count = 2049;
  std::vector<std::vector<int32_t>> ar(n), ag(n), rs(n), bc(n);
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    std::vector<int32_t> block(count), big(count * n, -1);
    for (size_t i = 0; i < count; ++i) block[i] = val(r, i);
    // AllReduce: sendbuff == recvbuff.
    void* a = to_device(block.data(), count * 4);
    ASSERT_EQ(ncclSuccess, ncclAllReduce(a, a, count, ncclInt32, ncclSum, comm, s));
    // AllGather: sendbuff == recvbuff + rank * sendcount.
    std::vector<int32_t> g = big;
    std::copy(block.begin(), block.end(), g.begin() + r * count);
    char* gbuf = static_cast<char*>(to_device(g.data(), g.size() * 4));
    ASSERT_EQ(ncclSuccess, ncclAllGather(gbuf + r * count * 4, gbuf, count, ncclInt32, comm, s));
    // ReduceScatter: recvbuff == sendbuff + rank * recvcount.
    std::vector<int32_t> full(count * n);
    for (size_t i = 0; i < full.size(); ++i) full[i] = val(r, i);
    char* rbuf = static_cast<char*>(to_device(full.data(), full.size() * 4));
    ASSERT_EQ(ncclSuccess, ncclReduceScatter(rbuf, rbuf + r * count * 4, count, ncclInt32, ncclSum, comm, s));
    // ncclBcast: always in place.
    void* b = to_device(block.data(), count * 4);
    ASSERT_EQ(ncclSuccess, ncclBcast(b, count, ncclInt32, 0, comm, s));
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    ar[r] = download<int32_t>(a, count);
    ag[r] = download<int32_t>(gbuf, count * n);
    rs[r] = download<int32_t>(rbuf + r * count * 4, count);
    bc[r] = download<int32_t>(b, count);
    for (void* p : {a, static_cast<void*>(gbuf), static_cast<void*>(rbuf), b}) cudaFree(p);
  });
  for (int j = 0; j < n; ++j)
    for (size_t i = 0; i < count; ++i) {
      int32_t sum = 0, rsum = 0;
      for (int r = 0; r < n; ++r) sum += val(r, i), rsum += val(r, j * count + i);
      ASSERT_EQ(sum, ar[j][i]);
      ASSERT_EQ(rsum, rs[j][i]);
      ASSERT_EQ(val(0, i), bc[j][i]);
      for (int r = 0; r < n; ++r) ASSERT_EQ(val(r, i), ag[j][r * count + i]);
    }
}

TEST_P(NcclCollectives, SendRecvBothWaysRoundTheRingInOneGroup) {
  const int n = GetParam();
  const size_t count = 4099;
  std::vector<std::vector<int32_t>> from_prev(n), from_next(n);
  run_ranks(n, [&](int r, ncclComm_t comm, cudaStream_t s) {
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<int32_t> to_next(count), to_prev(count);
    for (size_t i = 0; i < count; ++i) to_next[i] = val(r, i), to_prev[i] = -val(r, i);
    void* a = to_device(to_next.data(), count * 4);
    void* b = to_device(to_prev.data(), count * 4);
    void *ra, *rb;
    ASSERT_EQ(cudaSuccess, cudaMalloc(&ra, count * 4));
    ASSERT_EQ(cudaSuccess, cudaMalloc(&rb, count * 4));
    ASSERT_EQ(ncclSuccess, ncclGroupStart());
    ASSERT_EQ(ncclSuccess, ncclSend(a, count, ncclInt32, next, comm, s));
    ASSERT_EQ(ncclSuccess, ncclSend(b, count, ncclInt32, prev, comm, s));
    ASSERT_EQ(ncclSuccess, ncclRecv(ra, count, ncclInt32, prev, comm, s));
    ASSERT_EQ(ncclSuccess, ncclRecv(rb, count, ncclInt32, next, comm, s));
    ASSERT_EQ(ncclSuccess, ncclGroupEnd());
    ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
    from_prev[r] = download<int32_t>(ra, count);
    from_next[r] = download<int32_t>(rb, count);
    for (void* p : {a, b, ra, rb}) cudaFree(p);
  });
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(val((r + n - 1) % n, i), from_prev[r][i]);
      ASSERT_EQ(-val((r + 1) % n, i), from_next[r][i]);
    }
}

}  // namespace
