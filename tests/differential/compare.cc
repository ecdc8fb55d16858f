// See compare.h.
#include "compare.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace differential {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr size_t kContext = 4;  // earlier ops of the thread shown in a report

// The names of the codes the harness meets (the simulated runtime's
// cudaGetErrorName knows fewer), else the runtime's.
std::string error_name(int e) {
  if (e < 0) return "-";
  const char* name = nullptr;
  switch (e) {
#define DIFFERENTIAL_NAME(x) \
  case x: name = #x; break;
    DIFFERENTIAL_NAME(cudaSuccess) DIFFERENTIAL_NAME(cudaErrorInvalidValue)
    DIFFERENTIAL_NAME(cudaErrorMemoryAllocation) DIFFERENTIAL_NAME(cudaErrorInvalidPitchValue)
    DIFFERENTIAL_NAME(cudaErrorInvalidDevice) DIFFERENTIAL_NAME(cudaErrorSharedObjectInitFailed)
    DIFFERENTIAL_NAME(cudaErrorInvalidResourceHandle) DIFFERENTIAL_NAME(cudaErrorNotReady)
    DIFFERENTIAL_NAME(cudaErrorHostMemoryAlreadyRegistered) DIFFERENTIAL_NAME(cudaErrorHostMemoryNotRegistered)
    DIFFERENTIAL_NAME(cudaErrorStreamCaptureUnsupported) DIFFERENTIAL_NAME(cudaErrorStreamCaptureImplicit)
#undef DIFFERENTIAL_NAME
    default: name = cudaGetErrorName(static_cast<cudaError_t>(e));
  }
  return std::to_string(e) + " " + name;
}

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / kMiB);
  return buf;
}

// errno values a correct run may leave at random: EAGAIN from a contended
// futex (libstdc++ waits through syscall(2), which sets errno), EINTR.
bool errno_noise(int e) { return e == EAGAIN || e == EINTR; }

// Why two results differ, or "".
std::string difference(const Op& op, const Result& a, const Result& b) {
  if (a.skipped != b.skipped) return "one run skipped the op (a slot it names was not held)";
  if (a.skipped) return "";
  if (a.rc != b.rc) return "return codes differ";
  if (a.peek != b.peek || a.get != b.get) return "last errors differ";
  if (a.err != b.err && !errno_noise(a.err) && !errno_noise(b.err)) return "errno differs";
  for (int i = 0; i < 3; ++i)
    if (a.v[i] != b.v[i]) return "what the call gave back differs (v[" + std::to_string(i) + "])";
  if (op.kind == OpKind::kObserve) {
    if (a.bytes != b.bytes) return "read-back sizes differ";
    for (size_t i = 0; i < a.hashes.size(); ++i)
      if (a.hashes[i] != b.hashes[i]) {
        size_t more = 0;
        for (size_t j = i + 1; j < a.hashes.size(); ++j) more += a.hashes[j] != b.hashes[j];
        return "memory differs: bytes [" + std::to_string(i * 512) + ", " +
               std::to_string(std::min<uint64_t>((i + 1) * 512, a.bytes)) + ") first, " + std::to_string(more) +
               " more 512-byte blocks after it";
      }
  }
  return "";
}

}  // namespace

std::string describe(const Result& r) {
  if (r.skipped) return "skipped";
  std::string s = "rc " + error_name(r.rc) + ", last error peek " + error_name(r.peek) + " / get " +
                  (r.get < 0 ? std::string("(left pending)") : error_name(r.get)) +
                  ", errno " + std::to_string(r.err);
  if (r.v[0] || r.v[1] || r.v[2])
    s += ", gave back {" + std::to_string(r.v[0]) + ", " + std::to_string(r.v[1]) + ", " + std::to_string(r.v[2]) + "}";
  if (r.bytes) s += ", read " + std::to_string(r.bytes) + " B";
  return s;
}

Comparator::Comparator(const Program& program, const Trace& native, std::string mode, std::string how)
    : program_(program), native_(native), mode_(std::move(mode)), how_(std::move(how)) {}

bool Comparator::op(int thread, size_t index, const Result& hooked) {
  const Op& op = program_.threads[thread].ops[index];
  const std::string why = difference(op, native_.threads[thread][index], hooked);
  if (why.empty()) return true;
  std::string sig = "thread " + std::to_string(thread) + " op " + std::to_string(program_.threads[thread].origin_of(index)) +
                    " " + std::to_string(static_cast<int>(op.kind)) + ":" + why.substr(0, why.find(':'));
  add(op_report(thread, index, hooked, why), std::move(sig));
  return false;
}

std::string Comparator::op_report(int thread, size_t index, const Result& hooked, const std::string& why) const {
  const ThreadProgram& tp = program_.threads[thread];
  const std::vector<Op>& ops = tp.ops;
  std::string s = "differential: MISMATCH under gpuslack (" + mode_ + "), seed " + std::to_string(program_.seed) +
                  ", thread " + std::to_string(thread) + ", op #" + std::to_string(tp.origin_of(index)) + ": " + why +
                  "\n";
  s += "  op:            " + describe(ops[index]) + "\n";
  s += "  runtime alone: " + describe(native_.threads[thread][index]) + "\n";
  s += "  gpuslack:      " + describe(hooked) + "\n";
  s += "  the thread's ops before it:\n";
  for (size_t i = index > kContext ? index - kContext : 0; i < index; ++i)
    s += "    #" + std::to_string(tp.origin_of(i)) + " " + describe(ops[i]) + "  -> " + describe(native_.threads[thread][i]) + "\n";
  s += "  rerun: " + how_ + "\n";
  return s;
}

bool Comparator::global(size_t b, const GlobalResult& h) {
  const GlobalResult& n = native_.globals[b];
  std::string why;
  auto both = [&](const char* what, int64_t x, int64_t y) {
    if (why.empty() && x != y) why = std::string(what) + ": runtime alone " + std::to_string(x) + ", gpuslack " + std::to_string(y);
  };
  both("cudaDeviceSynchronize", n.sync_rc, h.sync_rc);
  both("cudaMemGetInfo", n.info_rc, h.info_rc);
  both("total memory", static_cast<int64_t>(n.total), static_cast<int64_t>(h.total));
  both("live device buffers", n.live_device_blocks, h.live_device_blocks);
  auto free_rule = [&](const char* when, uint64_t nf, uint64_t hf) {
    if (why.empty() && hf != nf)
      why = std::string("free memory ") + when + ": runtime alone " + mib(nf) + " (" + std::to_string(nf) +
            " B), gpuslack " + mib(hf) + " (" + std::to_string(hf) + " B); they must be equal";
  };
  free_rule("at the barrier", n.free_bytes, h.free_bytes);
  if (n.final) {
    both("big allocation size", static_cast<int64_t>(n.big), static_cast<int64_t>(h.big));
    both("cudaMallocFromPoolAsync of the big size (pass-through)", n.big_pool_rc, h.big_pool_rc);
    both("cudaMalloc of the big size", n.big_malloc_rc, h.big_malloc_rc);
    both("cudaMallocFromPoolAsync of the big size, after the cudaMalloc was freed", n.big_pool_again_rc,
         h.big_pool_again_rc);
    both("cudaMemGetInfo after them", n.after_info_rc, h.after_info_rc);
    free_rule("after the big allocations", n.free_after, h.free_after);
  }
  if (why.empty()) return true;
  std::string sig = "barrier " + std::to_string(b) + " " + why.substr(0, why.find(':'));
  add("differential: MISMATCH under gpuslack (" + mode_ + "), seed " + std::to_string(program_.seed) + ", barrier " +
      std::to_string(b) + (n.final ? " (the last: every buffer freed, the device synchronized)" : "") + ": " + why +
      "\n  big allocation: " + mib(n.big) + "; free at the barrier: runtime alone " + mib(n.free_bytes) +
      ", gpuslack " + mib(h.free_bytes) + "; after: " + mib(n.free_after) + ", " + mib(h.free_after) +
      "\n  rerun: " + how_ + "\n",
      std::move(sig));
  return false;
}

bool Comparator::finish(const Trace& hooked) {
  if (native_.kernel_violations == 0 && hooked.kernel_violations == 0) return true;
  add("differential: MISMATCH under gpuslack (" + mode_ + "), seed " + std::to_string(program_.seed) +
      ": busy kernels saw their buffer change while they ran: runtime alone " +
      std::to_string(native_.kernel_violations) + ", gpuslack " + std::to_string(hooked.kernel_violations) +
      " (memory handed out while a queued kernel still used it)\n  rerun: " + how_ + "\n",
      "kernel violations");
  return false;
}

void Comparator::add(std::string text, std::string signature) {
  std::lock_guard<std::mutex> l(mu_);
  if (reports_.empty()) signature_ = std::move(signature);
  reports_.push_back(std::move(text));
}

std::string Comparator::signature() const {
  std::lock_guard<std::mutex> l(mu_);
  return signature_;
}

bool Comparator::failed() const {
  std::lock_guard<std::mutex> l(mu_);
  return !reports_.empty();
}

std::string Comparator::report() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string s;
  for (const std::string& r : reports_) s += r;
  return s;
}

}  // namespace differential
