// The simulated CUPTI (libcupti.so.13): state shared by cupti_subscribe.cc
// (subscribers, the Callback API, versions, results), cupti_activity.cc
// (activity channels, buffers, flushing), cupti_records.cc (records from the
// device's ops, the timebase) and
// cupti_unmodeled.cc (what torch binds and the model does not express).
// README.md, "CUPTI", says what is modeled and its limits. Test-only.
//
// The model, after the CUPTI documentation (Activity API and Callback API
// sections of docs.nvidia.com/cupti, and the comments of cupti_activity.h and
// cupti_callbacks.h 13.2):
//   - a *channel* is one set of activity buffers: the process-wide one of
//     the legacy calls (cuptiActivityRegisterCallbacks, cuptiActivityEnable),
//     and one per subscriber for the per-subscriber _v2 calls. Every record
//     goes to every channel that enabled its kind, each in its own buffers;
//   - records come from libgpusim's activity sink (sim.h): the simulated
//     device's own start and end of each op, converted to CUPTI's timebase.
//
// Thread safety: every exported call may be made from any thread. Subscriber
// bookkeeping is guarded by Registry::mu; each channel by its own mutex.
// Client callbacks (buffer requested) are called with the channel's mutex
// held, so they must not call back into the activity API; buffer-completed
// callbacks are called with no lock held.
#pragma once

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_result.h>
#include <cupti_version.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim.h"

static_assert(CUPTI_API_VERSION >= 130200,
              "the simulated CUPTI needs the CUPTI 13.2 headers (scripts/deps.sh, gpuslack_cupti_headers)");

namespace cuptisim {

// The knobs (README.md, "CUPTI"), read once.
struct Knobs {
  // GPUSIM_CUPTI_VERSION: what cuptiGetVersion reports. Unset: the headers'
  // (130202, 13.2) on an r580 driver, 130300 (a CUPTI after 13.2) with
  // GPUSIM_DRIVER_VERSION 610 or newer.
  uint32_t cupti_version = CUPTI_API_VERSION;
  // GPUSIM_DRIVER_VERSION: the driver's release branch. r580, the branch
  // CUDA 13.0 (this repository's toolkit) ships with: by default CUPTI
  // allows one subscriber, as on such a machine; 610 allows several.
  int driver_branch = 580;
  std::string held_by;                         // GPUSIM_CUPTI_HELD_BY: a tool outside the process holds CUPTI
  // Several subscribers are possible: a CUPTI after 13.2 (13.2 and older
  // allow one: cupti_callbacks.h 13.2, "Only a single subscriber can be
  // registered at a time") on an r610 or newer driver.
  bool multi_supported() const { return cupti_version >= 130300 && driver_branch >= 610; }
  // A declined buffer request crashes CUPTI before 12.9 (cuptiGetVersion
  // below 27: the crash CUPTI 12.9's release notes fixed, as Kineto's
  // pytorch/kineto#1534 cites them): the simulated one aborts there.
  bool crashes_on_declined_buffer() const { return cupti_version < 27; }
};
const Knobs& knobs();

// ------------------------------------------------------------ channels ---

// The kinds a channel can produce records for.
struct Kinds {
  bool kernel = false;             // CUPTI_ACTIVITY_KIND_KERNEL
  bool concurrent_kernel = false;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  bool memcpy = false;             // CUPTI_ACTIVITY_KIND_MEMCPY
  bool memset = false;             // CUPTI_ACTIVITY_KIND_MEMSET
  bool any() const { return kernel || concurrent_kernel || memcpy || memset; }
};

// A buffer handed by the client, being filled or waiting for delivery.
struct Buffer {
  uint8_t* base = nullptr;  // as the client gave it
  size_t size = 0;
  size_t used = 0;          // bytes of records, from `base`
  size_t max_records = 0;   // 0: as many as fit
  size_t records = 0;
};

struct Channel {
  std::mutex mu;
  Kinds kinds;
  // Exactly one pair is set once callbacks are registered.
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_BuffersCallbackRequestFunc_v2 request_v2 = nullptr;
  CUpti_BuffersCallbackCompleteFunc_v2 complete_v2 = nullptr;
  // The buffers being filled: one per launching thread while
  // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER is 1 (the default), keyed
  // by OpInfo::launcher; one (key 0) when it is 0. A flush hands them all
  // over and forgets the threads (a program of many short-lived threads).
  std::unordered_map<uint32_t, Buffer> filling;
  std::deque<Buffer> full;     // waiting for the worker (or a flush)
  size_t dropped = 0;          // since the last cuptiActivityGetNumDroppedRecords
  int delivering = 0;          // buffers being handed to `complete` now
  std::condition_variable delivered;  // `delivering` dropped to 0
  bool registered() const { return request || request_v2; }
};

// The process-wide channel of the legacy calls.
Channel& legacy_channel();

// Every channel that exists now (the legacy one first), for the sink and
// the flushes. Channels are never freed (a subscriber's outlives it, idle).
std::vector<Channel*> channels();
void add_channel(Channel* c);

// Hands every buffer of `c` that holds records (and, when `all_buffers`,
// the empty current one too) to its completed callback, on this thread.
// Waits for deliveries the worker has in progress, except when called from
// inside a buffer-completed callback.
void flush_channel(Channel& c, bool all_buffers);
// Disables every kind of `c` (records stop) without touching its buffers.
void disable_all(Channel& c);
// The channels by index, for the sink (no allocation): [0, channel_count()).
int channel_count();
Channel& channel_at(int i);
// Appends one record to `c`, or drops and counts it; true when a buffer
// became full, and then the caller wakes the worker (wake_worker) once it
// holds no channel lock.
bool append(Channel& c, const void* record, size_t size);
// The launching thread of the op whose records on_op appends next, on the
// calling (stream worker) thread: the buffer append fills is that thread's.
void set_record_thread(uint32_t launcher);
// CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER (process-wide, default 1).
bool per_thread_buffers();
void wake_worker();
// libgpusim's activity sink (cupti_records.cc): one finished op, on its
// stream's worker thread; registered while any channel has a kind enabled.
void on_op(const gpusim::OpRecord& op);

// ----------------------------------------------------------- subscribers --

struct Subscriber {
  std::string name;           // as oldSubscriberName reports it
  bool allows_multiple = false;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  Channel* channel = nullptr;  // the _v2 activity calls' buffers
};

// Whether `h` is a live subscriber, and its channel (nullptr if not one;
// channels are never freed, so the pointer stays usable).
bool is_subscriber(CUpti_SubscriberHandle h);
Channel* subscriber_channel(CUpti_SubscriberHandle h);
// How the subscribers are: 2 none yet, 1 several allowed, 0 single.
uint8_t multiple_subscriber_state();
// Removes every subscriber (cuptiFinalize in single-subscriber mode).
void drop_all_subscribers();

// ------------------------------------------------------------ timestamps --

// CUPTI's timebase, in ns: the registered timestamp callback's, else
// CLOCK_REALTIME's (what CUPTI uses on Linux) — deliberately not the
// simulated device's CLOCK_MONOTONIC, so clients must align the two.
uint64_t cupti_now();
// A steady-clock (sim.h Clock) time converted to CUPTI's timebase.
uint64_t to_cupti_time(int64_t steady_ns);

// Says once on stderr that a call is not modeled (README.md, "CUPTI").
inline void unmodeled(const char* name) { gpusim::log_unanswered("cupti", name); }

}  // namespace cuptisim

#define CUPTISIM_EXPORT extern "C" __attribute__((visibility("default")))
