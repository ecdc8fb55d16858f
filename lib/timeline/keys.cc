// The names of timeline.h's enums: the machine names the JSON summary writes
// (*_key) and the ones a person reads (*_name), each defined here once for
// C++ and, through gpuslack_labels_json, Python (Note [One formatter per unit]).
#include "timeline/timeline.h"

namespace gpuslack {
namespace timeline {

const char* status_key(Status s) {
  switch (s) {
    case Status::kOff: return "off";
    case Status::kNotStarted: return "not_started";
    case Status::kMeasured: return "measured";
    case Status::kHeldByOther: return "held_by_other";
    case Status::kUnavailable: return "unavailable";
  }
  return "not_started";
}

const char* busy_key(Busy b) {
  switch (b) {
    case Busy::kCompute: return "compute";
    case Busy::kCommunication: return "communication";
    case Busy::kCopies: return "copies";
    case Busy::kMemsets: return "memsets";
  }
  return "compute";
}

const char* idle_key(Idle i) {
  switch (i) {
    case Idle::kHostBound: return "host_bound";
    case Idle::kLaunchBound: return "launch_bound";
    case Idle::kAllocation: return "allocation";
    case Idle::kCopies: return "copies";
    case Idle::kCollectives: return "collectives";
    case Idle::kSync: return "sync";
    case Idle::kOther: return "other";
  }
  return "other";
}

const char* busy_name(Busy b) { return busy_key(b); }

const char* idle_name(Idle i) {
  switch (i) {
    case Idle::kHostBound: return "host-bound";
    case Idle::kLaunchBound: return "launch-bound";
    case Idle::kAllocation: return "allocation";
    case Idle::kCopies: return "copies";
    case Idle::kCollectives: return "collectives";
    case Idle::kSync: return "synchronization";
    case Idle::kOther: return "other calls";
  }
  return "other calls";
}

}  // namespace timeline
}  // namespace gpuslack
