// A device's per-SM limits (timeline/occupancy.h) from the driver's
// attributes (cuDeviceGetAttribute, through cuda/driver_api.h): what the
// timeline's analysis asks once per device, on its worker thread
// (AnalysisOptions::device_limits).
//
// Thread safety: any thread.
#pragma once

#include "timeline/occupancy.h"

namespace gpuslack {
namespace timeline {

// False when there is no driver or it refuses an attribute (limits unknown).
bool driver_device_limits(int ordinal, DeviceLimits* out);

}  // namespace timeline
}  // namespace gpuslack
