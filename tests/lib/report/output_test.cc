// Output: file names, the atomic write (symlinks replaced, no temporary
// left on failure), and write_summary's promises (one log line per failure,
// no throw, errno kept, a closed stderr pipe does not kill the process).
#include "report/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "report/json.h"
#include "report/summary_reader.h"
#include "report/text.h"
#include "report/wrap.h"
#include "sample_summary.h"

namespace gpuslack {
namespace report {
namespace {

using testing_sample::sample_summary;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class Output : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "gpuslack_output_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST(FileNames, HostIsSanitizedAndRankIsOptional) {
  Summary s;
  s.host = "node 01/a:b.example-x_y";
  s.pid = 42;
  EXPECT_EQ("gpuslack-node_01_a_b.example-x_y-42.json", json_file_name(s));
  s.rank = 3;
  EXPECT_EQ("gpuslack-node_01_a_b.example-x_y-42-rank3.json", json_file_name(s));
  EXPECT_EQ("gpuslack-node_01_a_b.example-x_y-42-rank3.txt", text_file_name(s));
}

TEST_F(Output, AtomicWriteCreatesMissingDirectoriesAndTheFile) {
  std::string dir = dir_ + "/a/b/c";
  std::string error;
  ASSERT_TRUE(write_file_atomically(dir, "out.json", "{}\n", &error)) << error;
  EXPECT_EQ("{}\n", read_file(dir + "/out.json"));
  EXPECT_EQ(std::vector<std::string>{"out.json"}, entries(dir));
  struct stat st;
  ASSERT_EQ(0, stat((dir + "/out.json").c_str(), &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));

  ASSERT_TRUE(write_file_atomically(dir + "/", "out.json", "second", &error)) << error;
  EXPECT_EQ("second", read_file(dir + "/out.json"));
  EXPECT_EQ(std::vector<std::string>{"out.json"}, entries(dir));
}

TEST_F(Output, ASymlinkAtTheFinalNameIsReplacedNotFollowed) {
  std::string target = dir_ + "/target";
  { std::ofstream(target) << "precious"; }
  std::string out = dir_ + "/out";
  ASSERT_EQ(0, mkdir(out.c_str(), 0755));
  ASSERT_EQ(0, symlink(target.c_str(), (out + "/s.json").c_str()));
  std::string error;
  ASSERT_TRUE(write_file_atomically(out, "s.json", "new", &error)) << error;
  EXPECT_EQ("precious", read_file(target));
  struct stat st;
  ASSERT_EQ(0, lstat((out + "/s.json").c_str(), &st));
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ("new", read_file(out + "/s.json"));
}

TEST_F(Output, UnwritableDirectoriesFailWithAReason) {
  std::string error;
  EXPECT_FALSE(write_file_atomically("/proc/gpuslack_no_such_dir", "x.json", "x", &error));
  EXPECT_NE(std::string::npos, error.find("/proc/gpuslack_no_such_dir")) << error;
  EXPECT_EQ(std::string::npos, error.find('\n')) << error;

  std::string file = dir_ + "/regular";
  { std::ofstream(file) << "x"; }
  error.clear();
  EXPECT_FALSE(write_file_atomically(file + "/sub", "x.json", "x", &error));
  EXPECT_NE(std::string::npos, error.find("Not a directory")) << error;
  EXPECT_EQ(std::vector<std::string>{"regular"}, entries(dir_));
}

TEST_F(Output, AFailedRenameLeavesNoTemporaryFile) {
  ASSERT_EQ(0, mkdir((dir_ + "/taken.json").c_str(), 0755));  // a directory at the final name
  { std::ofstream(dir_ + "/taken.json/inside") << "x"; }
  std::string error;
  EXPECT_FALSE(write_file_atomically(dir_, "taken.json", "x", &error));
  EXPECT_NE(std::string::npos, error.find("cannot rename")) << error;
  EXPECT_EQ(std::vector<std::string>{"taken.json"}, entries(dir_));
}

TEST_F(Output, NamesWithASlashAreRefused) {
  std::string error;
  EXPECT_FALSE(write_file_atomically(dir_, "../x.json", "x", &error));
  EXPECT_FALSE(write_file_atomically(dir_, "", "x", &error));
  EXPECT_TRUE(entries(dir_).empty());
}

TEST_F(Output, WriteSummaryWritesTheTextAndJsonFiles) {
  Summary s = sample_summary();
  Options o;
  o.output_dir = dir_ + "/out";
  o.text_summary = "file";
  o.json_summary = true;
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ("", ::testing::internal::GetCapturedStderr());
  EXPECT_EQ(format_text(s), read_file(o.output_dir + "/" + text_file_name(s)));
  EXPECT_EQ(format_json(s), read_file(o.output_dir + "/" + json_file_name(s)));
}

// See Note [Text from the JSON]: figures with more digits than the JSON keeps
// are rendered as the JSON holds them, so the file renders the same text.
TEST_F(Output, TheTextIsWhatItsJsonFileRenders) {
  Summary s = sample_summary();
  s.wall_s = 12.3456789012345;
  s.lost_share = 0.12345049999;
  s.categories[0].share = 0.0004999999;  // left out of the text here; 0.0005 (0.1%) in the JSON
  s.calls[1].total_s = 1.0 / 3;
  Options o;
  o.output_dir = dir_;
  o.text_summary = "file";
  o.json_summary = true;
  write_summary(s, o);
  Summary back;
  std::string error;
  ASSERT_TRUE(read_summary_file(dir_ + "/" + json_file_name(s), &back, &error)) << error;
  EXPECT_EQ(format_text(back), read_file(dir_ + "/" + text_file_name(s)));
}

// See Note [Short summary]: summary_detail:short is the text's first lines, as
// the JSON file renders them, then one line naming that file.
TEST_F(Output, TheShortTextEndsWithWhereTheFullSummaryIs) {
  Summary s = sample_summary();
  s.wall_s = 12.3456789012345;  // more digits than the JSON keeps
  Options o;
  o.output_dir = dir_;
  o.text_summary = "file";
  o.summary_detail = "short";
  write_summary(s, o);
  Summary back;
  std::string error;
  const std::string json_path = dir_ + "/" + json_file_name(s);
  ASSERT_TRUE(read_summary_file(json_path, &back, &error)) << error;
  const std::string text = read_file(dir_ + "/" + text_file_name(s));
  const std::string pointer = wrap_line(  // at 80 columns, as every line
      "gpuslack: ", "the full summary: python -m gpuslack report " + json_path + " (summary_detail:full prints it here)");
  EXPECT_EQ(0u, pointer.find("gpuslack: the full summary: python -m gpuslack report\n")) << pointer;
  EXPECT_EQ(format_text(back, TextDetail::kShort) + pointer, text);
  EXPECT_EQ(0u, format_text(back).find(format_text(back, TextDetail::kShort)));  // the full text's first lines
  EXPECT_EQ(std::string::npos, text.find("copies by kind")) << text;

  // No JSON: the knob that prints the rest.
  o.json_summary = false;
  o.text_summary = "stderr";
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ(format_text(back, TextDetail::kShort) +
                "gpuslack: the full summary: summary_detail:full prints it here\n",
            ::testing::internal::GetCapturedStderr());
}

// summary_detail:auto: full where stderr is not a terminal (here a file,
// as in a log); full always with summary_detail:full.
TEST_F(Output, AutoDetailIsFullWhenStderrIsNoTerminal) {
  Summary s = sample_summary();
  Options o;
  o.output_dir = dir_;
  o.text_summary = "stderr";
  o.json_summary = false;
  ASSERT_EQ("auto", o.summary_detail);
  ASSERT_NE(1, isatty(STDERR_FILENO));
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ(format_text(s), ::testing::internal::GetCapturedStderr());
  o.summary_detail = "full";
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ(format_text(s), ::testing::internal::GetCapturedStderr());
}

TEST_F(Output, WriteSummaryPutsTheTextOnStderr) {
  Summary s = sample_summary();
  Options o;
  o.output_dir = dir_;
  o.text_summary = "stderr";
  o.json_summary = false;
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ(format_text(s), ::testing::internal::GetCapturedStderr());
  EXPECT_TRUE(entries(dir_).empty());

  o.text_summary = "off";
  ::testing::internal::CaptureStderr();
  write_summary(s, o);
  EXPECT_EQ("", ::testing::internal::GetCapturedStderr());
}

TEST_F(Output, AnUnwritableOutputDirCostsOneLogLineAndKeepsErrno) {
  std::string file = dir_ + "/regular";
  { std::ofstream(file) << "x"; }
  Options o;
  o.output_dir = file + "/sub";
  o.text_summary = "off";
  o.json_summary = true;
  ::testing::internal::CaptureStderr();
  errno = ENOTTY;
  EXPECT_NO_THROW(write_summary(sample_summary(), o));
  EXPECT_EQ(ENOTTY, errno);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(1u, count_of(err, "gpuslack: cannot write summary to " + file + "/sub/gpuslack-node01-123-rank0.json: "))
      << err;
  EXPECT_EQ(1u, count_of(err, "\n")) << err;
}

TEST_F(Output, FailuresGoToTheCallerWhenAsked) {
  std::string file = dir_ + "/regular";
  { std::ofstream(file) << "x"; }
  Options o;
  o.output_dir = file + "/sub";
  o.text_summary = "file";
  std::vector<std::string> failures;
  ::testing::internal::CaptureStderr();
  write_summary(sample_summary(), o, &failures);
  EXPECT_EQ("", ::testing::internal::GetCapturedStderr());
  ASSERT_EQ(2u, failures.size());
  EXPECT_EQ(0u, failures[0].find("cannot write summary to " + file + "/sub/gpuslack-node01-123-rank0.txt: "));
  EXPECT_EQ(0u, failures[1].find("cannot write summary to " + file + "/sub/gpuslack-node01-123-rank0.json: "));
}

// See Note [Escaped input]: output_dir comes from GPUSLACK_OUTPUT; a newline in
// it must not make a second log line.
TEST_F(Output, AFailureLineEscapesThePath) {
  std::string file = dir_ + "/regular";
  { std::ofstream(file) << "x"; }
  Options o;
  o.output_dir = file + "/a\ngpuslack: FORGED\x1b[2J";
  o.text_summary = "off";
  ::testing::internal::CaptureStderr();
  write_summary(sample_summary(), o);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(1u, count_of(err, "\n")) << err;
  EXPECT_EQ(0u, count_of(err, "\x1b")) << err;
  EXPECT_EQ(2u, count_of(err, "/a\\ngpuslack: FORGED\\x1b[2J")) << err;  // in the path and in the reason
}

// Note [Periodic failures]
// See Note [Claimed names]: a job's files.
Summary job_summary() {
  Summary s = sample_summary();
  s.rank = 3;
  s.job.rank = 3;
  s.job.id = "job 42/x";
  return s;
}

TEST(FileNames, AJobsNamesCarryItsSanitizedIdAndRestart) {
  Summary s = job_summary();
  EXPECT_EQ("gpuslack-job_42_x-rank3.json", json_file_name(s));
  EXPECT_EQ("gpuslack-job_42_x-rank3.prom", prometheus_file_name(s));
  s.job.restart = 2;
  EXPECT_EQ("gpuslack-job_42_x-rank3-restart2.txt", text_file_name(s));
  s.rank = -1;  // a job id without a rank: the process's own name
  EXPECT_EQ("gpuslack-node01-123.json", json_file_name(s));
}

TEST_F(Output, RewritesByTheSameProcessStayOneFile) {
  Summary s = job_summary();
  Options o;
  o.output_dir = dir_;
  o.text_summary = "off";
  for (int i = 0; i < 3; ++i) {
    s.wall_s = 10 + i;
    write_summary(s, o);
  }
  EXPECT_EQ(std::vector<std::string>{"gpuslack-job_42_x-rank3.json"}, entries(dir_));
  EXPECT_EQ(format_json(s), read_file(dir_ + "/gpuslack-job_42_x-rank3.json"));
}

TEST_F(Output, ANameAnotherProcessHoldsIsLeftAloneAndThePidIsAppended) {
  Summary s = job_summary();
  const std::string theirs = dir_ + "/gpuslack-job_42_x-rank3.json";
  { std::ofstream(theirs) << "another process's summary"; }
  Options o;
  o.output_dir = dir_;
  o.text_summary = "off";
  write_summary(s, o);
  s.wall_s = 99;
  write_summary(s, o);  // the periodic rewrite goes to the same file
  const std::string ours = "gpuslack-job_42_x-rank3-" + std::to_string(getpid()) + ".json";
  EXPECT_EQ((std::vector<std::string>{ours, "gpuslack-job_42_x-rank3.json"}), entries(dir_));  // sorted
  EXPECT_EQ("another process's summary", read_file(theirs));
  EXPECT_EQ(format_json(s), read_file(dir_ + "/" + ours));
}

TEST_F(Output, ARestartedRankWritesItsOwnFile) {
  Summary s = job_summary();
  Options o;
  o.output_dir = dir_;
  o.text_summary = "off";
  write_summary(s, o);
  s.job.restart = 1;
  write_summary(s, o);
  EXPECT_EQ((std::vector<std::string>{"gpuslack-job_42_x-rank3-restart1.json", "gpuslack-job_42_x-rank3.json"}),
            entries(dir_));
}

TEST_F(Output, MetricsGoToPrometheusDirAsTheJsonHoldsThem) {
  Summary s = job_summary();
  s.wall_s = 12.3456789012345;  // more digits than the JSON keeps
  Options o;
  o.output_dir = dir_ + "/json";
  o.text_summary = "off";
  o.prometheus_dir = dir_ + "/prom";
  write_summary(s, o);
  EXPECT_EQ(std::vector<std::string>{"gpuslack-job_42_x-rank3.prom"}, entries(o.prometheus_dir));
  std::string metrics = read_file(o.prometheus_dir + "/gpuslack-job_42_x-rank3.prom");
  EXPECT_NE(std::string::npos, metrics.find("gpuslack_wall_seconds_total{job_id=\"job 42/x\",rank=\"3\",local_rank=\"0\","
                                            "restart=\"0\",host=\"node01\"} 12.3456789\n"))
      << metrics;
  EXPECT_EQ(std::string::npos, metrics.find("pid="));
}

TEST_F(Output, MetricsUnderATakenNameCarryThePid) {
  Summary s = job_summary();
  Options o;
  o.json_summary = false;
  o.text_summary = "off";
  o.prometheus_dir = dir_;
  { std::ofstream(dir_ + "/gpuslack-job_42_x-rank3.prom") << "# another process\n"; }
  write_summary(s, o);
  std::string metrics = read_file(dir_ + "/gpuslack-job_42_x-rank3-" + std::to_string(getpid()) + ".prom");
  EXPECT_NE(std::string::npos, metrics.find(",pid=\"123\"}")) << metrics;
}

TEST_F(Output, AnUnwritablePrometheusDirIsOneFailureAndTheJsonIsWritten) {
  Summary s = sample_summary();
  { std::ofstream(dir_ + "/file") << "x"; }
  Options o;
  o.output_dir = dir_ + "/json";
  o.text_summary = "off";
  o.prometheus_dir = dir_ + "/file/prom";
  std::vector<std::string> failures;
  write_summary(s, o, &failures);
  ASSERT_EQ(1u, failures.size());
  EXPECT_NE(std::string::npos, failures[0].find(".prom")) << failures[0];
  EXPECT_EQ(std::vector<std::string>{json_file_name(s)}, entries(o.output_dir));
}

TEST(PeriodicFailures, ToldOnceUntilAWriteSucceeds) {
  PeriodicFailures p;
  const std::vector<std::string> none;
  const std::vector<std::string> two = {"cannot write summary to a: x", "cannot write summary to b: y"};
  EXPECT_TRUE(p.to_log(none).empty());
  std::vector<std::string> first = p.to_log(two);
  ASSERT_EQ(2u, first.size());
  EXPECT_EQ("cannot write summary to a: x (periodic summaries: not repeated until one is written)", first[0]);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(p.to_log(two).empty());
  EXPECT_TRUE(p.to_log(none).empty());  // recovered
  EXPECT_EQ(2u, p.to_log(two).size());  // and failing again: told again
  EXPECT_TRUE(p.to_log(two).empty());
}

TEST(WriteSummary, AClosedStderrPipeDoesNotKillTheProcess) {
  EXPECT_EXIT(
      {
        int fds[2];
        if (pipe(fds) != 0) std::exit(2);
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        Options o;
        o.text_summary = "stderr";
        o.json_summary = false;
        errno = 0;
        write_summary(sample_summary(), o);
        std::exit(errno == 0 ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace report
}  // namespace gpuslack
