#include "report/knobs_json.h"

#include <vector>

#include "config/options.h"
#include "report/json.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {

std::string knobs_json(const char* conf, const char* output, bool secure) {
  std::vector<std::string> errors;
  const std::vector<KnobInForce> knobs = knobs_in_force(conf, output, secure, &errors);
  json_detail::Writer w;
  w.begin_object();
  w.key("secure").boolean(secure);
  w.key("knobs").begin_array();
  for (const KnobInForce& k : knobs) {
    w.begin_object(/*on_one_line=*/true);
    w.key("key").string(k.key);
    w.key("type").string(k.type);
    w.key("value").string(k.value);
    w.key("default").string(k.default_value);
    w.key("source").string(k.source);
    w.end_object();
  }
  w.end_array();
  w.key("errors").begin_array();
  for (const std::string& e : errors) w.string(e);
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace report
}  // namespace gpuslack
