// The summary's device health section (device_health.h) as JSON, and read
// back: "device_health" (docs/summary.schema.json), always written, its
// status by health::status_name. The reader follows summary_reader.h's
// rules (a missing member reads as its default, one of another type is
// Malformed; a missing status, from an older writer, reads as off). Round
// trip: write(read(write(h))) == write(h), held by
// tests/lib/report/sections_json_test.cc.
//
// Thread safety: pure.
#pragma once

#include "report/device_health.h"
#include "report/section_json.h"

namespace gpuslack {
namespace report {

void write_device_health(const DeviceHealthSection& h, json_detail::Writer* w);
DeviceHealthSection read_device_health(const detail::Fields& f);

}  // namespace report
}  // namespace gpuslack
