// What a section's JSON header names (X_json.h, sections.h's rule): the
// writer each section writes into (json_writer.h) and the object a reader
// takes its members from (json_fields.h), declared only, so that a
// section's header stays as light as the section's own types.
#pragma once

namespace gpuslack {
namespace report {
namespace json_detail {
class Writer;
}
namespace detail {
class Fields;
}
}  // namespace report
}  // namespace gpuslack
