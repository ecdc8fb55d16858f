// See executor.h: the threads, the barrier and its global checks; the ops
// themselves are in executor_ops.cc.
#include "executor.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "crash_report.h"
#include "executor_state.h"
#include "gpusim.h"

namespace differential {
namespace {

using detail::ThreadState;

constexpr uint64_t kMiB = 1024 * 1024;
// The big allocations at the end leave this much of the free memory.
constexpr uint64_t kBigHeadroom = 64 * kMiB;

// Every thread meets; abort() releases them all for good.
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  bool wait() {
    std::unique_lock<std::mutex> l(mu_);
    if (aborted_) return false;
    const uint64_t gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return true;
    }
    cv_.wait(l, [&] { return generation_ != gen || aborted_; });
    return !aborted_;
  }
  void abort() {
    std::lock_guard<std::mutex> l(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

struct Run {
  const Program& program;
  const RunConfig& config;
  Trace trace;
  std::vector<ThreadState> states;
  Barrier barrier;
  // Ops take it shared, exclusive ops (double frees) alone: nothing is
  // allocated anywhere between a free and the same pointer's second free.
  std::shared_mutex ops_mu;
  std::atomic<bool> stop{false};

  Run(const Program& p, const RunConfig& c)
      : program(p), config(c), states(p.threads.size()), barrier(static_cast<int>(p.threads.size())) {}

  void stop_all() {
    stop.store(true);
    barrier.abort();
  }
};

void check_global(Run& run, size_t b, const GlobalResult& g) {
  if (run.config.check_global && !run.config.check_global(b, g)) run.stop_all();
}

// Thread 0, every other thread waiting at the barrier.
void global_checks(Run& run, size_t b) {
  const Api& a = *run.config.api;
  GlobalResult g;
  g.final = b + 1 == static_cast<size_t>(run.program.barriers);
  g.sync_rc = a.cudaDeviceSynchronize();
  size_t free_bytes = 0, total = 0;
  g.info_rc = a.cudaMemGetInfo(&free_bytes, &total);
  g.free_bytes = free_bytes;
  g.total = total;
  for (const ThreadState& t : run.states)
    for (const detail::Slot& s : t.slots) g.live_device_blocks += s.live() && device_side(s.kind);
  if (g.final) {
    if (run.config.reference && b < run.config.reference->globals.size()) g.big = run.config.reference->globals[b].big;
    else g.big = free_bytes > 3 * kBigHeadroom ? free_bytes - kBigHeadroom : 0;
    if (g.big) {
      cudaMemPool_t pool = nullptr;
      cudaDeviceGetDefaultMemPool(&pool, 0);
      // A pass-through allocation (gpuslack serves cudaMalloc, not pools),
      // then a cudaMalloc, then the pool again: each must succeed where
      // the runtime alone succeeds (docs/allocator.md).
      auto pool_once = [&] {
        void* p = nullptr;
        int rc = a.cudaMallocFromPoolAsync(&p, g.big, pool, nullptr);
        if (rc == cudaSuccess) a.cudaFreeAsync(p, nullptr);
        a.cudaStreamSynchronize(nullptr);
        return rc;
      };
      g.big_pool_rc = pool_once();
      void* p = nullptr;
      g.big_malloc_rc = a.cudaMalloc(&p, g.big);
      if (g.big_malloc_rc == cudaSuccess) a.cudaFree(p);
      a.cudaDeviceSynchronize();
      g.big_pool_again_rc = pool_once();
    }
    a.cudaDeviceSynchronize();
    free_bytes = 0;
    g.after_info_rc = a.cudaMemGetInfo(&free_bytes, &total);
    g.free_after = free_bytes;
  }
  cudaGetLastError();
  run.trace.globals[b] = g;
  check_global(run, b, g);
}

void thread_main(Run& run, int t) {
  ThreadState& st = run.states[t];
  alignas(64) char stack[kStackBytes] = {};
  st.stack = stack;
  const std::vector<Op>& ops = run.program.threads[t].ops;
  std::vector<Result>& results = run.trace.threads[t];
  cudaEventCreateWithFlags(&st.events[0], cudaEventDisableTiming);
  cudaEventCreateWithFlags(&st.events[1], cudaEventDisableTiming);
  cudaDeviceGetDefaultMemPool(&st.pool, 0);
  size_t barrier = 0;
  for (size_t i = 0; i < ops.size() && !run.stop.load(); ++i) {
    const Op& op = ops[i];
    st.index = i;
    crash_report::at(t, i);
    if (op.kind == OpKind::kBarrier) {
      if (!run.barrier.wait()) break;
      if (t == 0) global_checks(run, barrier);
      ++barrier;
      if (!run.barrier.wait()) break;
      continue;
    }
    Result& r = results[i];
    if (op.not_under_vmm && run.config.vmm) {
      r.skipped = true;
    } else if (op.exclusive) {
      std::unique_lock<std::shared_mutex> l(run.ops_mu);
      r.skipped = !detail::run_op(st, op, &r);
    } else {
      std::shared_lock<std::shared_mutex> l(run.ops_mu);
      r.skipped = !detail::run_op(st, op, &r);
    }
    r.peek = cudaPeekAtLastError();
    if (op.clear_error) r.get = cudaGetLastError();
    if (run.config.check && !run.config.check(t, i, r)) run.stop_all();
  }
  crash_report::at(t, ops.size());
  if (!run.stop.load()) detail::release_all(st);
  cudaEventDestroy(st.events[0]);
  cudaEventDestroy(st.events[1]);
  cudaGetLastError();
  st.stack = nullptr;
}

}  // namespace

Trace execute(const Program& program, const RunConfig& config, bool* stopped) {
  Run run(program, config);
  run.trace.threads.resize(program.threads.size());
  run.trace.globals.resize(static_cast<size_t>(program.barriers));
  for (size_t t = 0; t < program.threads.size(); ++t) {
    run.trace.threads[t].resize(program.threads[t].ops.size());
    ThreadState& st = run.states[t];
    st.config = &config;
    st.api = config.api;
    st.seed = program.seed;
    st.thread = static_cast<int>(t);
    st.slots.resize(static_cast<size_t>(program.slots));
  }
  const long violations_before = gpusim_busy_kernel_violations();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < program.threads.size(); ++t) threads.emplace_back(thread_main, std::ref(run), static_cast<int>(t));
  for (std::thread& th : threads) th.join();
  run.trace.kernel_violations = gpusim_busy_kernel_violations() - violations_before;
  if (stopped) *stopped = run.stop.load();
  return std::move(run.trace);
}

}  // namespace differential
