#include "log/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "config/options.h"
#include "log/escape.h"
#include "spdlog/sinks/basic_file_sink.h"
#include "spdlog/sinks/stdout_sinks.h"

namespace gpuslack {
namespace log {
namespace {

spdlog::level::level_enum level_of(const std::string& name) {
  if (name == "off") return spdlog::level::off;
  if (name == "error") return spdlog::level::err;
  if (name == "info") return spdlog::level::info;
  if (name == "debug") return spdlog::level::debug;
  return spdlog::level::warn;
}

std::atomic<spdlog::logger*> g_logger{nullptr};
std::mutex g_make_mu;

spdlog::logger* get_or_make(const Options& o) {
  if (spdlog::logger* l = g_logger.load(std::memory_order_acquire)) return l;
  std::lock_guard<std::mutex> lock(g_make_mu);
  if (spdlog::logger* l = g_logger.load(std::memory_order_acquire)) return l;
  spdlog::sink_ptr sink;
  std::string file_error;
  if (!o.log_file.empty()) {
    try {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(o.log_file, /*truncate=*/false);
    } catch (const std::exception& e) {
      file_error = e.what();
    }
  }
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  // Leaked on purpose: hooks may log during process exit, after static
  // destructors have run.
  auto* l = new spdlog::logger("gpuslack", std::move(sink));
  l->set_pattern("gpuslack: %v");
  l->set_level(level_of(o.log_level));
  l->flush_on(spdlog::level::trace);
  if (!file_error.empty())
    l->error("cannot open log_file {} ({}); logging to stderr", escape_bytes(o.log_file), escape_bytes(file_error));
  g_logger.store(l, std::memory_order_release);
  return l;
}

}  // namespace

spdlog::logger& logger() { return *get_or_make(options()); }

void error_raw(const Options& o, const std::string& line) { get_or_make(o)->error("{}", line); }

bool log_level_valid(const std::string& name) {
  return name == "off" || name == "error" || name == "warn" || name == "info" || name == "debug";
}

}  // namespace log
}  // namespace gpuslack
