#include "config/options.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "log/log.h"

namespace gpuslack {
namespace {

bool parse_value(absl::string_view text, std::string* out) {
  *out = std::string(text);
  return true;
}

// Parsers and names per knob type; a type no knob uses yet is unused.
[[maybe_unused]] bool parse_value(absl::string_view text, bool* out) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return *out = true, true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return *out = false, true;
  return false;
}

template <typename T>
const char* type_name();
template <> const char* type_name<std::string>() { return "string"; }
template <> [[maybe_unused]] const char* type_name<bool>() { return "bool"; }

std::string show(const std::string& v) { return absl::StrFormat("\"%s\"", v); }
[[maybe_unused]] std::string show(bool v) { return v ? "true" : "false"; }

}  // namespace

Options parse_options(const char* conf, std::vector<std::string>* errors) {
  Options o;
  if (conf == nullptr) return o;
  for (absl::string_view item : absl::StrSplit(conf, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (item.find('=') == absl::string_view::npos) {
      errors->push_back(absl::StrFormat("GPUSLACK_CONF: '%s' is not key=value; ignored", item));
      continue;
    }
    bool known = false;
#define GPUSLACK_OPTION_PARSE(k, type, def, doc)                                            \
  if (key == #k) {                                                                          \
    known = true;                                                                           \
    type v{};                                                                               \
    if (parse_value(value, &v)) {                                                           \
      o.k = v;                                                                              \
    } else {                                                                                \
      errors->push_back(absl::StrFormat("GPUSLACK_CONF: %s=%s is not a %s; using %s", #k, \
                                        value, type_name<type>(), show(type(def))));        \
    }                                                                                       \
  }
    GPUSLACK_OPTIONS(GPUSLACK_OPTION_PARSE)
#undef GPUSLACK_OPTION_PARSE
    if (!known) errors->push_back(absl::StrFormat("GPUSLACK_CONF: unknown key '%s'; ignored", key));
  }
  if (!log::log_level_valid(o.log_level)) {
    errors->push_back(absl::StrFormat(
        "GPUSLACK_CONF: log_level=%s is not one of off, error, warn, info, debug; using \"warn\"",
        o.log_level));
    o.log_level = "warn";
  }
  return o;
}

const Options& options() {
  static const Options* o = [] {
    std::vector<std::string> errors;
    auto* parsed = new Options(parse_options(std::getenv("GPUSLACK_CONF"), &errors));
    // Logged after parsing, so the log itself uses the parsed level.
    for (const std::string& e : errors) log::error_raw(*parsed, e);
    return parsed;
  }();
  return *o;
}

std::vector<std::string> options_doc() {
  std::vector<std::string> lines;
#define GPUSLACK_OPTION_DOC(k, type, def, doc) \
  lines.push_back(absl::StrFormat("%s (%s, default %s): %s", #k, type_name<type>(), show(type(def)), doc));
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_DOC)
#undef GPUSLACK_OPTION_DOC
  return lines;
}

}  // namespace gpuslack
