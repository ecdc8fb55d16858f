// The machine names of timeline.h's enums, as the JSON summary writes them.
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

}  // namespace timeline
}  // namespace gpuslack
