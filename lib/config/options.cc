#include "config/options.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "config/environment.h"
#include "log/escape.h"
#include "log/log.h"

namespace gpuslack {
namespace {

bool parse_value(absl::string_view text, std::string* out) {
  *out = std::string(text);
  return true;
}

bool parse_value(absl::string_view text, bool* out) {
  std::string t = absl::AsciiStrToLower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return *out = true, true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return *out = false, true;
  return false;
}

bool parse_value(absl::string_view text, double* out) {
  return absl::SimpleAtod(text, out) && *out >= 0;
}

bool parse_value(absl::string_view text, int* out) { return absl::SimpleAtoi(text, out) && *out >= 0; }

template <typename T>
const char* type_name();
template <> const char* type_name<std::string>() { return "string"; }
template <> const char* type_name<bool>() { return "bool"; }
template <> const char* type_name<double>() { return "non-negative number"; }
template <> const char* type_name<int>() { return "non-negative integer"; }

// Input in an error line: Note [Escaped input].
std::string escaped_input(absl::string_view text) {
  return log::escape_bytes(std::string_view(text.data(), text.size()));
}

// See Note [Knob ranges]: strings and bools have none; a number must be finite
// (inf parses) and within its row's range.
bool in_range(const Range&, const std::string&) { return true; }
bool in_range(const Range&, bool) { return true; }
bool in_range(const Range& r, double v) {
  if (!r.numeric) return true;
  return std::isfinite(v) && ((r.or_zero && v == 0) || (v >= r.min && v <= r.max));
}
bool in_range(const Range& r, int v) { return in_range(r, static_cast<double>(v)); }

std::string show(const std::string& v) { return absl::StrFormat("\"%s\"", v); }
std::string show(bool v) { return v ? "true" : "false"; }
std::string show(double v) { return absl::StrFormat("%g", v); }
std::string show(int v) { return absl::StrFormat("%d", v); }

// A value as knobs_in_force gives it: show() without a string's quotes.
std::string plain(const std::string& v) { return v; }
template <typename T>
std::string plain(T v) {
  return show(v);
}

}  // namespace

namespace {

// parse_options, also telling which keys GPUSLACK_CONF set: `given` maps each
// key whose value was accepted to that value (the last one, as plain()).
Options parse(const char* conf, const char* output, std::vector<std::string>* errors,
              std::map<std::string, std::string>* given) {
  Options o;
  if (output != nullptr && *output != '\0') o.output_dir = output;
  if (conf == nullptr) return o;
  for (absl::string_view item : absl::StrSplit(conf, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    // key:value (PYTORCH_CUDA_ALLOC_CONF's syntax) or key=value: the key
    // ends at the first of the two.
    size_t sep = item.find_first_of(":=");
    if (sep == absl::string_view::npos) {
      errors->push_back(absl::StrFormat("GPUSLACK_CONF: '%s' is not key:value; ignored", escaped_input(item)));
      continue;
    }
    absl::string_view key = absl::StripAsciiWhitespace(item.substr(0, sep));
    absl::string_view value = absl::StripAsciiWhitespace(item.substr(sep + 1));
    bool known = false;
#define GPUSLACK_OPTION_PARSE(k, type, def, range, doc)                                              \
  if (key == #k) {                                                                                  \
    known = true;                                                                                   \
    type v{};                                                                                       \
    if (!parse_value(value, &v)) {                                                                  \
      errors->push_back(absl::StrFormat("GPUSLACK_CONF: %s:%s is not a %s; using %s", #k,          \
                                        escaped_input(value), type_name<type>(), show(type(def)))); \
    } else if (!in_range(range, v)) {                                                               \
      errors->push_back(absl::StrFormat("GPUSLACK_CONF: %s:%s is out of range (%s); using %s", #k, \
                                        escaped_input(value), range_text(range), show(type(def)))); \
    } else {                                                                                        \
      o.k = v;                                                                                      \
      (*given)[#k] = plain(v);                                                                      \
    }                                                                                               \
  }
    GPUSLACK_OPTIONS(GPUSLACK_OPTION_PARSE)
#undef GPUSLACK_OPTION_PARSE
    if (!known) errors->push_back(absl::StrFormat("GPUSLACK_CONF: unknown key '%s'; ignored", escaped_input(key)));
  }
  if (static_cast<double>(o.staging_chunk_kb) > static_cast<double>(o.staging_budget_mb) * 1024) {
    errors->push_back(absl::StrFormat(
        "GPUSLACK_CONF: staging_chunk_kb:%d is more than staging_budget_mb:%d holds; using %d", o.staging_chunk_kb,
        o.staging_budget_mb, Options().staging_chunk_kb));
    o.staging_chunk_kb = Options().staging_chunk_kb;
  }
  if (o.ipc_fds != "pidfd" && o.ipc_fds != "socket") {
    errors->push_back(absl::StrFormat("GPUSLACK_CONF: ipc_fds:%s is not one of pidfd, socket; using \"pidfd\"",
                                      escaped_input(o.ipc_fds)));
    o.ipc_fds = "pidfd";
  }
  if (o.allocator != "native" && o.allocator != "vmm") {
    errors->push_back(absl::StrFormat("GPUSLACK_CONF: allocator:%s is not one of native, vmm; using \"native\"",
                                      escaped_input(o.allocator)));
    o.allocator = "native";
  }
  if (o.device_health != "auto" && o.device_health != "off") {
    errors->push_back(absl::StrFormat("GPUSLACK_CONF: device_health:%s is not one of auto, off; using \"auto\"",
                                      escaped_input(o.device_health)));
    o.device_health = "auto";
  }
  if (o.gpu_timeline != "auto" && o.gpu_timeline != "on" && o.gpu_timeline != "off") {
    errors->push_back(absl::StrFormat("GPUSLACK_CONF: gpu_timeline:%s is not one of auto, on, off; using \"auto\"",
                                      escaped_input(o.gpu_timeline)));
    o.gpu_timeline = "auto";
  }
  // fabric: the names of nccl/cost_model.cc's link table (fabric_test checks
  // that the two agree), one link or a node's and a network's joined by '+'.
  {
    static const char* const kFabricWords[] = {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5",
                                               "ib200",   "ib400",   "roce200", "roce400"};
    bool ok = true;
    if (o.fabric != "auto") {
      std::vector<std::string> words = absl::StrSplit(o.fabric, '+');
      ok = words.size() <= 2;
      for (const std::string& w : words)
        ok = ok && std::find(std::begin(kFabricWords), std::end(kFabricWords), w) != std::end(kFabricWords);
    }
    if (!ok) {
      errors->push_back(absl::StrFormat(
          "GPUSLACK_CONF: fabric:%s is not auto or one of nvlink3, nvlink4, nvlink5, pcie4, pcie5, ib200, ib400, "
          "roce200, roce400 (a node's link and a network joined by '+'); using \"auto\"",
          escaped_input(o.fabric)));
      o.fabric = "auto";
    }
  }
  if (o.text_summary != "stderr" && o.text_summary != "file" && o.text_summary != "off") {
    errors->push_back(absl::StrFormat(
        "GPUSLACK_CONF: text_summary:%s is not one of stderr, file, off; using \"stderr\"",
        escaped_input(o.text_summary)));
    o.text_summary = "stderr";
  }
  if (o.summary_detail != "auto" && o.summary_detail != "short" && o.summary_detail != "full") {
    errors->push_back(absl::StrFormat(
        "GPUSLACK_CONF: summary_detail:%s is not one of auto, short, full; using \"auto\"",
        escaped_input(o.summary_detail)));
    o.summary_detail = "auto";
  }
  if (!log::log_level_valid(o.log_level)) {
    errors->push_back(absl::StrFormat(
        "GPUSLACK_CONF: log_level:%s is not one of off, error, warn, info, debug; using \"warn\"",
        escaped_input(o.log_level)));
    o.log_level = "warn";
  }
  return o;
}

}  // namespace

Options parse_options(const char* conf, const char* output, std::vector<std::string>* errors) {
  std::map<std::string, std::string> given;
  return parse(conf, output, errors, &given);
}

std::vector<KnobInForce> knobs_in_force(const char* conf, const char* output, bool secure,
                                        std::vector<std::string>* errors) {
  std::map<std::string, std::string> given;
  const Options o = secure ? secure_options() : parse(conf, output, errors, &given);
  const bool output_given = !secure && output != nullptr && *output != '\0';
  std::vector<KnobInForce> knobs;
  // A key GPUSLACK_CONF set keeps its source only while the value in force
  // is the one it gave: a later check (allocator's words, the staging
  // chunk's budget) may have put the default back.
#define GPUSLACK_OPTION_IN_FORCE(k, type, def, range, doc)                                           \
  {                                                                                                 \
    KnobInForce r{#k, type_name<type>(), plain(o.k), plain(type(def)), "default"};                 \
    auto it = given.find(#k);                                                                       \
    if (secure) {                                                                                   \
      if (r.value != r.default_value) r.source = "secure mode";                                    \
    } else if (it != given.end()) {                                                                 \
      r.source = it->second == r.value ? "GPUSLACK_CONF" : "default (GPUSLACK_CONF's value refused)"; \
    } else if (r.key == "output_dir" && output_given) {                                             \
      r.source = "GPUSLACK_OUTPUT";                                                                 \
    }                                                                                               \
    knobs.push_back(std::move(r));                                                                  \
  }
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_IN_FORCE)
#undef GPUSLACK_OPTION_IN_FORCE
  return knobs;
}

Options secure_options() {
  Options o;
  o.json_summary = false;
  o.log_file.clear();
  o.text_summary = "stderr";
  o.summary_detail = "full";  // no file holds the rest
  o.nvtx = false;
  o.gpu_timeline = "off";  // no library loaded from paths the environment names
  o.prometheus_dir.clear();
  o.device_health = "off";  // no library loaded, no thread started for it
  return o;
}

Options options_from_environment(bool secure, std::vector<std::string>* errors) {
  if (secure) return secure_options();
  return parse_options(environment_variable("GPUSLACK_CONF"), environment_variable("GPUSLACK_OUTPUT"), errors);
}

const Options& options() {
  static const Options* o = [] {
    std::vector<std::string> errors;
    auto* parsed = new Options(options_from_environment(secure_execution(), &errors));
    // The log takes its settings from here (Note [Who configures the log]
    // in log/log.h), before the problems are logged: they are written at
    // the parsed level, to the parsed file.
    log::configure(log::Settings{parsed->log_level, parsed->log_file});
    for (const std::string& e : errors) log::error("{}", e);
    return parsed;
  }();
  return *o;
}

// The log's first line, when nothing has configured it yet.
void log::configure_before_first_line() { options(); }

std::string range_text(const Range& r) {
  if (!r.numeric) return std::string();
  std::string text = absl::StrFormat("%.15g to %.15g", r.min, r.max);
  return r.or_zero ? "0, or " + text : text;
}

std::vector<std::string> options_doc() {
  std::vector<std::string> lines;
#define GPUSLACK_OPTION_DOC(k, type, def, range, doc)                                                          \
  lines.push_back(absl::StrFormat("%s (%s, default %s%s): %s", #k, type_name<type>(), show(type(def)),        \
                                  range.numeric ? ", range " + range_text(range) : std::string(), doc));
  GPUSLACK_OPTIONS(GPUSLACK_OPTION_DOC)
#undef GPUSLACK_OPTION_DOC
  return lines;
}

}  // namespace gpuslack
