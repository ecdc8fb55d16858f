// A tiny CUPTI for the session's unit tests: a cuda::CuptiApi table whose
// functions act on one global state the test sets up and inspects. It
// subscribes (one or several subscribers, a holder that allows no second),
// lends and completes buffers through the callbacks the session registered,
// and writes real CUPTI record structs into them.
//
// Thread safety: the test drives it from one thread; the session's worker
// calls get_next_record and the dropped count (on the worker's own buffers).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cupti_api.h"

namespace gpuslack {
namespace fake_cupti {

struct State {
  // Set by the test.
  bool has_v2 = true;
  bool multi_supported = true;
  uint32_t version = 130202;  // cuptiGetVersion's answer (0: the entry point is missing)
  std::string holder;  // another tool holds CUPTI alone ("" none)
  int64_t ns_offset = 5'000'000'000;  // CUPTI's time = CLOCK_MONOTONIC ns + offset
  std::atomic<size_t> dropped{0};     // reported (and reset) by the dropped-records call

  // Seen by the test.
  int subscribe_calls = 0;
  int last_allow = -1;  // allowMultipleSubscribers of the last v2 call; -1: v1
  bool subscribed = false;
  bool used_v2_callbacks = false;
  bool used_legacy_callbacks = false;
  std::vector<CUpti_ActivityKind> enabled;
  int flushes = 0;

  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_BuffersCallbackRequestFunc_v2 request_v2 = nullptr;
  CUpti_BuffersCallbackCompleteFunc_v2 complete_v2 = nullptr;

  struct Pending {
    uint8_t* buffer;
    size_t size;
    size_t valid;
  };
  std::vector<Pending> pending;  // filled, not yet completed (a flush completes them)
};

State& state();
void reset();
// The table (has_v2 decides whether the _v2 entries are set).
const cuda::CuptiApi* api();

// CUPTI's clock now.
uint64_t now_ns();

// Records, built as CUPTI builds them.
CUpti_ActivityKernel11 kernel(const char* name, uint64_t start, uint64_t end, uint32_t device);
CUpti_ActivityMemcpy6 memcpy_record(uint64_t start, uint64_t end, uint32_t device);
CUpti_ActivityMemcpyPtoP4 peer_copy(uint64_t start, uint64_t end, uint32_t device);
CUpti_ActivityMemset4 memset_record(uint64_t start, uint64_t end, uint32_t device);

// Asks the session for a buffer and writes `records` (each a CUpti_Activity
// struct of its kind's size) into it, held until a flush. False when the
// session gave no buffer: the records are dropped, and counted as CUPTI
// counts them.
struct AnyRecord {
  std::vector<uint8_t> bytes;
  template <typename R>
  AnyRecord(const R& r)  // NOLINT: implicit, for brace lists
      : bytes(reinterpret_cast<const uint8_t*>(&r), reinterpret_cast<const uint8_t*>(&r) + sizeof(R)) {}
};
bool fill_buffer(const std::vector<AnyRecord>& records);
// Completes every held buffer (what a flush does), without a flush call.
void complete_pending();

}  // namespace fake_cupti
}  // namespace gpuslack
