#include "config/options.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace gpuslack {
namespace {

TEST(Options, DefaultsWithoutConf) {
  std::vector<std::string> errors;
  Options o = parse_options(nullptr, nullptr, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("warn", o.log_level);
  EXPECT_EQ("", o.log_file);
  EXPECT_EQ("gpuslack-out", o.output_dir);
  EXPECT_EQ("stderr", o.text_summary);
  EXPECT_EQ("auto", o.summary_detail);
  EXPECT_TRUE(o.json_summary);
  EXPECT_EQ(0.0, o.summary_interval_s);
  EXPECT_EQ(100.0, o.call_site_threshold_us);
  EXPECT_EQ(5, o.top_call_sites);
  EXPECT_TRUE(o.signals);
  EXPECT_TRUE(o.nvtx);
}

TEST(Options, ParsesEveryTypeInPytorchSyntax) {
  std::vector<std::string> errors;
  Options o = parse_options(
      " log_level : debug ,log_file:/tmp/x.log,json_summary:false,summary_interval_s:2.5,"
      "top_call_sites:9,nvtx:off,text_summary:file",
      nullptr, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ("debug", o.log_level);
  EXPECT_EQ("/tmp/x.log", o.log_file);
  EXPECT_FALSE(o.json_summary);
  EXPECT_EQ(2.5, o.summary_interval_s);
  EXPECT_EQ(9, o.top_call_sites);
  EXPECT_FALSE(o.nvtx);
  EXPECT_EQ("file", o.text_summary);
}

TEST(Options, AcceptsKeyEqualsValueAndOutputVariable) {
  std::vector<std::string> errors;
  Options o = parse_options("output_dir=/a,signals=0", "/from/env", &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("/a", o.output_dir);  // the explicit key wins over GPUSLACK_OUTPUT
  EXPECT_FALSE(o.signals);
  o = parse_options("signals:1", "/from/env", &errors);
  EXPECT_EQ("/from/env", o.output_dir);
}

TEST(Options, BadInputGetsOneLineEachAndTheDefault) {
  std::vector<std::string> errors;
  Options o = parse_options(
      "colour:blue,log_level:loud,novalue,json_summary:maybe,summary_interval_s:-1,"
      "top_call_sites:many,text_summary:printer",
      nullptr, &errors);
  ASSERT_EQ(7u, errors.size());
  EXPECT_NE(std::string::npos, errors[0].find("unknown key 'colour'; ignored"));
  EXPECT_NE(std::string::npos, errors[1].find("'novalue' is not key:value; ignored"));
  EXPECT_NE(std::string::npos, errors[2].find("json_summary:maybe is not a bool; using true"));
  EXPECT_NE(std::string::npos, errors[3].find("summary_interval_s:-1 is not a non-negative number; using 0"));
  EXPECT_NE(std::string::npos, errors[4].find("top_call_sites:many is not a non-negative integer; using 5"));
  EXPECT_NE(std::string::npos, errors[5].find("text_summary:printer is not one of stderr, file, off"));
  EXPECT_NE(std::string::npos, errors[6].find("log_level:loud"));
  for (const auto& e : errors) {
    EXPECT_EQ(std::string::npos, e.find('\n'));
    EXPECT_EQ(0u, e.find("GPUSLACK_CONF: "));
  }
  EXPECT_EQ("warn", o.log_level);
  EXPECT_TRUE(o.json_summary);
  EXPECT_EQ(0.0, o.summary_interval_s);
  EXPECT_EQ(5, o.top_call_sites);
  EXPECT_EQ("stderr", o.text_summary);
}

// See Note [Knob ranges]: a summary_interval_s of inf, 1e300 or 1e-9 became a
// 0 ms period (the summary rewritten in a tight loop), 3e6 or more
// overflowed into no periodic summary at all; each now gets one line and
// the default.
TEST(Options, NonFiniteAndOutOfRangeIntervalsKeepTheDefault) {
  for (const char* bad : {"inf", "-inf", "nan", "infinity", "1e300", "1e-9", "0.05", "3e6", "604801"}) {
    std::vector<std::string> errors;
    Options o = parse_options((std::string("summary_interval_s:") + bad).c_str(), nullptr, &errors);
    ASSERT_EQ(1u, errors.size()) << bad;
    EXPECT_EQ(0u, errors[0].find(std::string("GPUSLACK_CONF: summary_interval_s:") + bad + " ")) << errors[0];
    EXPECT_NE(std::string::npos, errors[0].find("; using 0")) << errors[0];
    EXPECT_EQ(0.0, o.summary_interval_s) << bad;
  }
  std::vector<std::string> errors;
  Options o = parse_options("summary_interval_s:1e300", nullptr, &errors);
  EXPECT_EQ("GPUSLACK_CONF: summary_interval_s:1e300 is out of range (0, or 0.1 to 604800); using 0", errors.at(0));
  for (double good : {0.0, 0.1, 2.5, 604800.0}) {
    errors.clear();
    o = parse_options(absl::StrFormat("summary_interval_s:%g", good).c_str(), nullptr, &errors);
    EXPECT_TRUE(errors.empty()) << good;
    EXPECT_EQ(good, o.summary_interval_s);
  }
}

// staging_chunk_kb:2147483647 made a 2 TiB cudaHostAlloc, and a chunk past
// the budget raised the budget to fit it.
TEST(Options, StagingChunkIsBoundedAndNeverPastTheBudget) {
  std::vector<std::string> errors;
  Options o = parse_options("staging_chunk_kb:2147483647", nullptr, &errors);
  ASSERT_EQ(1u, errors.size());
  EXPECT_EQ("GPUSLACK_CONF: staging_chunk_kb:2147483647 is out of range (4 to 65536); using 1024", errors[0]);
  EXPECT_EQ(1024, o.staging_chunk_kb);
  errors.clear();
  o = parse_options("staging_chunk_kb:1048576", nullptr, &errors);
  EXPECT_EQ(1u, errors.size());
  EXPECT_EQ(1024, o.staging_chunk_kb);
  errors.clear();
  o = parse_options("staging_chunk_kb:4096,staging_budget_mb:2", nullptr, &errors);
  ASSERT_EQ(1u, errors.size());
  EXPECT_EQ("GPUSLACK_CONF: staging_chunk_kb:4096 is more than staging_budget_mb:2 holds; using 1024", errors[0]);
  EXPECT_EQ(1024, o.staging_chunk_kb);
  EXPECT_EQ(2, o.staging_budget_mb);
  errors.clear();
  o = parse_options("staging_chunk_kb:65536,staging_budget_mb:64", nullptr, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(65536, o.staging_chunk_kb);
}

template <typename T, typename Check, typename Get>
void if_numeric(Check& check, const char* key, const Range& range, const T& def, Get get) {
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double>)
    check(key, range, std::is_same_v<T, int>, static_cast<double>(def), get);
}

// Every numeric row of the table: its ends are accepted, a value past
// either end gets one line and the default.
TEST(Options, EveryNumericKnobHasARangeThatHolds) {
  int numeric = 0;
  auto check = [&numeric](const char* key, const Range& r, bool integer, double def, auto get) {
    ASSERT_TRUE(r.numeric) << key << " has no range";
    ++numeric;
    auto text = [integer](double v) { return integer ? absl::StrFormat("%.0f", v) : absl::StrFormat("%.17g", v); };
    auto parsed = [&](double v, std::vector<std::string>* errors) {
      Options o = parse_options(absl::StrFormat("%s:%s", key, text(v)).c_str(), nullptr, errors);
      return static_cast<double>(get(o));
    };
    for (double ok : {r.min, r.max}) {
      std::vector<std::string> errors;
      EXPECT_EQ(ok, parsed(ok, &errors)) << key;
      EXPECT_TRUE(errors.empty()) << key << ": " << errors.front();
    }
    std::vector<double> bad = {r.max * 2 + 1};
    if (r.min > 0) bad.push_back(integer ? r.min - 1 : r.min / 2);
    for (double v : bad) {
      if (r.or_zero && v == 0) continue;
      std::vector<std::string> errors;
      EXPECT_EQ(def, parsed(v, &errors)) << key << ":" << text(v);
      EXPECT_EQ(1u, errors.size()) << key << ":" << text(v);
    }
  };
#define CHECK_NUMERIC(k, type, def, range, doc) \
  if_numeric<type>(check, #k, range, type(def), [](const Options& o) { return o.k; });
  GPUSLACK_OPTIONS(CHECK_NUMERIC)
#undef CHECK_NUMERIC
  EXPECT_EQ(15, numeric);
}

// See Note [Escaped input]: a newline in GPUSLACK_CONF forged a second log
// line, an escape sequence reached the terminal.
TEST(Options, ErrorLinesEscapeTheInputTheyQuote) {
  std::vector<std::string> errors;
  parse_options(
      "novalue\ngpuslack FORGED,col\x1b[31mour:1,log_level:\xff\xfe,top_call_sites:1\r2,allocator:v\tmm,"
      "text_summary:\x7f",
      nullptr, &errors);
  ASSERT_EQ(6u, errors.size());
  for (const std::string& e : errors) {
    for (char c : e) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(c) << " in " << e;
  }
  EXPECT_EQ("GPUSLACK_CONF: 'novalue\\ngpuslack FORGED' is not key:value; ignored", errors[0]);
  EXPECT_EQ("GPUSLACK_CONF: unknown key 'col\\x1b[31mour'; ignored", errors[1]);
  EXPECT_EQ("GPUSLACK_CONF: top_call_sites:1\\r2 is not a non-negative integer; using 5", errors[2]);
  EXPECT_NE(std::string::npos, errors[3].find("allocator:v\\tmm is not one of"));
  EXPECT_NE(std::string::npos, errors[4].find("text_summary:\\x7f is not one of"));
  EXPECT_NE(std::string::npos, errors[5].find("log_level:\\xff\\xfe is not one of"));
}

// See Note [Secure execution]: in a setuid program GPUSLACK_CONF=log_file:...
// and GPUSLACK_OUTPUT let an unprivileged user make root create
// directories and append text of their choosing to a root-owned file.
TEST(Options, ASecureProcessReadsNoVariableAndWritesNoFile) {
  setenv("GPUSLACK_CONF", "log_file:/etc/evil.log,log_level:debug,json_summary:true,text_summary:file,nvtx:on", 1);
  setenv("GPUSLACK_OUTPUT", "/etc/evil", 1);
  std::vector<std::string> errors;
  Options secure = options_from_environment(/*secure=*/true, &errors);
  Options plain = options_from_environment(/*secure=*/false, &errors);
  unsetenv("GPUSLACK_CONF");
  unsetenv("GPUSLACK_OUTPUT");
  EXPECT_TRUE(errors.empty());
  // Nothing of the environment...
  EXPECT_EQ("", secure.log_file);
  EXPECT_EQ("warn", secure.log_level);
  EXPECT_EQ("gpuslack-out", secure.output_dir);
  // ...and no file written, no tool loaded: the text summary goes to stderr.
  EXPECT_FALSE(secure.json_summary);
  EXPECT_EQ("stderr", secure.text_summary);
  EXPECT_FALSE(secure.nvtx);
  EXPECT_EQ("off", secure.gpu_timeline);  // libcupti is looked for where CUDA_HOME says
  EXPECT_EQ("off", secure.device_health);  // no NVML loaded, no thread started for it
  EXPECT_EQ("full", secure.summary_detail);  // no file holds the rest of a short text
  // The same environment in a plain process is read.
  EXPECT_EQ("/etc/evil.log", plain.log_file);
  EXPECT_EQ("/etc/evil", plain.output_dir);
  EXPECT_EQ("file", plain.text_summary);
  // The secure options are the defaults but for what writes or loads.
  Options defaults = secure_options();
  defaults.json_summary = Options().json_summary;
  defaults.nvtx = Options().nvtx;
  defaults.gpu_timeline = Options().gpu_timeline;
  defaults.device_health = Options().device_health;
  defaults.summary_detail = Options().summary_detail;  // full: no file holds the rest
  Options def;
#define SAME_AS_DEFAULT(k, type, d, range, doc) EXPECT_EQ(def.k, defaults.k) << #k;
  GPUSLACK_OPTIONS(SAME_AS_DEFAULT)
#undef SAME_AS_DEFAULT
}

// What `python -m gpuslack doctor` shows (gpuslack_knobs_json): every knob,
// its value and where it came from.
TEST(Options, KnobsInForceSayWhereEachValueCameFrom) {
  std::vector<std::string> errors;
  std::vector<KnobInForce> knobs =
      knobs_in_force("allocator:vmm,top_call_sites:7,text_summary:nope,bogus:1", "/tmp/out", false, &errors);
  size_t rows = 0;
#define COUNT_ROW(k, type, d, range, doc) ++rows;
  GPUSLACK_OPTIONS(COUNT_ROW)
#undef COUNT_ROW
  ASSERT_EQ(rows, knobs.size());
  auto row = [&](const std::string& key) {
    for (const KnobInForce& k : knobs)
      if (k.key == key) return k;
    ADD_FAILURE() << key;
    return KnobInForce{};
  };
  EXPECT_EQ("vmm", row("allocator").value);
  EXPECT_EQ("native", row("allocator").default_value);
  EXPECT_EQ("GPUSLACK_CONF", row("allocator").source);
  EXPECT_EQ("7", row("top_call_sites").value);
  EXPECT_EQ("non-negative integer", row("top_call_sites").type);
  EXPECT_EQ("/tmp/out", row("output_dir").value);
  EXPECT_EQ("GPUSLACK_OUTPUT", row("output_dir").source);
  EXPECT_EQ("stderr", row("text_summary").value);
  EXPECT_EQ("default (GPUSLACK_CONF's value refused)", row("text_summary").source);
  EXPECT_EQ("default", row("pin").source);
  EXPECT_EQ(2u, errors.size());  // the same lines parse_options gives
  std::vector<std::string> parse_errors;
  parse_options("allocator:vmm,top_call_sites:7,text_summary:nope,bogus:1", "/tmp/out", &parse_errors);
  EXPECT_EQ(parse_errors, errors);
  // output_dir in GPUSLACK_CONF wins over GPUSLACK_OUTPUT, and says so.
  errors.clear();
  EXPECT_EQ("GPUSLACK_CONF", knobs_in_force("output_dir:/a", "/b", false, &errors)[2].source);
  // A secure process reads neither; what it changes is "secure mode".
  knobs = knobs_in_force("allocator:vmm", "/tmp/out", true, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("native", row("allocator").value);
  EXPECT_EQ("default", row("allocator").source);
  EXPECT_EQ("gpuslack-out", row("output_dir").value);
  EXPECT_EQ("false", row("json_summary").value);
  EXPECT_EQ("secure mode", row("json_summary").source);
}

TEST(Options, DocHasOneLinePerKnob) {
  std::vector<std::string> doc = options_doc();
  size_t knobs = 0;
#define COUNT_KNOB(k, type, d, range, doc) ++knobs;
  GPUSLACK_OPTIONS(COUNT_KNOB)
#undef COUNT_KNOB
  ASSERT_EQ(knobs, doc.size());
  EXPECT_EQ(0u, doc[0].find("log_level (string, default \"warn\"): "));
  EXPECT_EQ(0u, doc[1].find("log_file (string, default \"\"): "));
  EXPECT_EQ(0u, doc[6].find("summary_interval_s (non-negative number, default 0, range 0, or 0.1 to 604800): "))
      << doc[6];
}

TEST(Options, ConfigurationPageListsEveryKnob) {
  std::ifstream in(GPUSLACK_CONFIGURATION_DOC);
  ASSERT_TRUE(in) << GPUSLACK_CONFIGURATION_DOC;
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  size_t from = all.find("# Configuration\n");
  ASSERT_NE(std::string::npos, from);
  std::string page = all.substr(from, all.find("\n#", from + 1) - from);
  size_t rows = 0;
  auto check_row = [&](const char* key, const Range& range) {
    size_t at = page.find(std::string("\n| `") + key + "` |");
    ++rows;
    if (at == std::string::npos) {
      ADD_FAILURE() << key << " is missing from docs/configuration.md";
      return;
    }
    // The row's third cell is the knob's range, as the table has it.
    std::string row = page.substr(at + 1, page.find('\n', at + 1) - at - 1);
    std::vector<std::string> cells = absl::StrSplit(row, " | ");
    ASSERT_GE(cells.size(), 4u) << row;
    std::string range_cell = range.numeric ? range_text(range) : "-";
    EXPECT_EQ(range_cell, cells[2]) << key << "'s range in docs/configuration.md";
  };
#define CHECK_ROW(k, type, def, range, doc) check_row(#k, range);
  GPUSLACK_OPTIONS(CHECK_ROW)
#undef CHECK_ROW
  // And no row for a knob that does not exist.
  size_t listed = 0;
  for (size_t at = page.find("\n| `"); at != std::string::npos; at = page.find("\n| `", at + 1)) ++listed;
  EXPECT_EQ(rows, listed);
}

}  // namespace
}  // namespace gpuslack

namespace gpuslack {
namespace {

TEST(Options, SummaryDetailIsAutoShortOrFull) {
  std::vector<std::string> errors;
  EXPECT_EQ("short", parse_options("summary_detail:short", nullptr, &errors).summary_detail);
  EXPECT_EQ("full", parse_options("summary_detail:full", nullptr, &errors).summary_detail);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("auto", parse_options("summary_detail:brief", nullptr, &errors).summary_detail);
  ASSERT_EQ(1u, errors.size());
  EXPECT_EQ("GPUSLACK_CONF: summary_detail:brief is not one of auto, short, full; using \"auto\"", errors[0]);
}

TEST(Options, IpcFdsIsPidfdOrSocket) {
  std::vector<std::string> errors;
  EXPECT_EQ("pidfd", parse_options(nullptr, nullptr, &errors).ipc_fds);
  EXPECT_EQ("socket", parse_options("ipc_fds:socket", nullptr, &errors).ipc_fds);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ("pidfd", parse_options("ipc_fds:ptrace", nullptr, &errors).ipc_fds);
  ASSERT_EQ(1u, errors.size());
  EXPECT_EQ("GPUSLACK_CONF: ipc_fds:ptrace is not one of pidfd, socket; using \"pidfd\"", errors[0]);
}

}  // namespace
}  // namespace gpuslack
