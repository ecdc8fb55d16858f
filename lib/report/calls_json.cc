// See calls_json.h.
#include "report/calls_json.h"

#include <string>
#include <vector>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"
#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using json_detail::Writer;

const char* copy_kind_key(CopyKind k) {
  const char* name = copy_kind_name(k);
  return name != nullptr && name[0] != '\0' ? name : "none";
}

const char* host_memory_key(HostMemory m) {
  const char* name = host_memory_name(m);
  return name != nullptr && name[0] != '\0' ? name : "none";
}

// {"allocation": {"seconds": s, "share": x}, ...}: every category, in enum
// order, even those the vector lacks.
void categories(const std::vector<CategoryTime>& times, Writer* w) {
  w->begin_object();
  for (int c = 0; c < kCategoryCount; ++c) {
    CategoryTime t;
    for (const CategoryTime& have : times)
      if (static_cast<int>(have.category) == c) t = have;
    w->key(category_key(static_cast<Category>(c))).begin_object(/*on_one_line=*/true);
    w->key("seconds").seconds(t.seconds);
    w->key("share").share(t.share);
    w->end_object();
  }
  w->end_object();
}

void thread(const ThreadRow& t, Writer* w) {
  w->begin_object();
  w->key("tid").integer(t.tid);
  w->key("name").string(t.name);
  w->key("exited").boolean(t.exited);
  w->key("lost_s").seconds(t.lost_s);
  w->key("lost_share").share(t.lost_share);
  w->key("categories");
  categories(t.categories, w);
  w->end_object();
}

void call(const CallRow& c, Writer* w) {
  w->begin_object();
  w->key("name").string(c.name);
  w->key("category").string(category_key(c.category));
  w->key("count").unsigned_integer(c.count);
  w->key("total_s").seconds(c.total_s);
  w->key("max_s").seconds(c.max_s);
  w->key("p50_s").seconds(c.p50_s);
  w->key("p99_s").seconds(c.p99_s);
  w->key("bytes").unsigned_integer(c.bytes);
  w->key("steady_s").seconds(c.steady_s);
  w->end_object();
}

void copy(const CopyRow& c, Writer* w) {
  w->begin_object();
  w->key("kind").string(copy_kind_key(c.copy));
  w->key("host").string(host_memory_key(c.host));
  w->key("count").unsigned_integer(c.count);
  w->key("bytes").unsigned_integer(c.bytes);
  w->key("total_s").seconds(c.total_s);
  w->key("async_api").boolean(c.async_api);
  w->key("host_time_gbps").share(c.host_time_gbps);
  w->end_object();
}

void call_site(const CallSiteRow& c, Writer* w) {
  w->begin_object();
  w->key("category").string(category_key(c.category));
  w->key("api").string(c.api);
  w->key("blocked_s").seconds(c.blocked_s);
  w->key("count").unsigned_integer(c.count);
  w->key("frames").begin_array();
  for (const std::string& f : c.frames) w->string(f);
  w->end_array();
  w->end_object();
}

}  // namespace

void write_calls_totals(const Summary& s, Writer* w) {
  w->key("lost_s").seconds(s.lost_s);
  w->key("lost_share").share(s.lost_share);
  w->key("categories");
  categories(s.categories, w);
}

void write_calls_rows(const Summary& s, Writer* w) {
  w->key("worst_thread");
  if (s.threads.empty()) {
    w->null();
  } else {
    thread(s.worst_thread, w);
  }
  w->key("threads").begin_array();
  for (const ThreadRow& t : s.threads) thread(t, w);
  w->end_array();
  w->key("other_threads");
  if (s.other_threads.threads == 0) {
    w->null();
  } else {
    w->begin_object();
    w->key("threads").unsigned_integer(s.other_threads.threads);
    w->key("lost_s").seconds(s.other_threads.lost_s);
    w->key("lost_share").share(s.other_threads.lost_share);
    w->key("categories");
    categories(s.other_threads.categories, w);
    w->end_object();
  }
  w->key("calls").begin_array();
  for (const CallRow& c : s.calls) call(c, w);
  w->end_array();
  w->key("copies").begin_array();
  for (const CopyRow& c : s.copies) copy(c, w);
  w->end_array();
  w->key("call_sites").begin_array();
  for (const CallSiteRow& c : s.call_sites) call_site(c, w);
  w->end_array();
}

namespace {

Category category_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  for (int c = 0; c < kCategoryCount; ++c)
    if (name == category_key(static_cast<Category>(c))) return static_cast<Category>(c);
  f.bad(key, "a category (allocation, copy, collective, sync, other)");
}

CopyKind copy_kind_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  if (name == "none") return CopyKind::kNone;
  for (int k = 1; k < kCopyKindCount; ++k)
    if (name == copy_kind_name(static_cast<CopyKind>(k))) return static_cast<CopyKind>(k);
  f.bad(key, "a copy kind (H2D, D2H, D2D, peer, H2H, memset, none)");
}

HostMemory host_memory_of(const Fields& f, const char* key) {
  std::string name = f.text(key);
  if (name == "none") return HostMemory::kNone;
  for (int m = 1; m < kHostMemoryCount; ++m)
    if (name == host_memory_name(static_cast<HostMemory>(m))) return static_cast<HostMemory>(m);
  f.bad(key, "host memory (pageable, pinned, none)");
}

// Every category, in enum order, as json.cc writes them (missing ones 0).
std::vector<CategoryTime> read_categories(const Fields& parent, const char* key) {
  std::vector<CategoryTime> out(kCategoryCount);
  const JsonValue* v = nullptr;
  parent.object(key, &v);
  for (int c = 0; c < kCategoryCount; ++c) {
    out[c].category = static_cast<Category>(c);
    if (!v) continue;
    const char* name = category_key(static_cast<Category>(c));
    const JsonValue* t = v->find(name);
    if (!t) continue;
    Fields time(*t, parent.where(key) + "." + name);
    out[c].seconds = time.number("seconds");
    out[c].share = time.number("share");
  }
  return out;
}

ThreadRow read_thread(const Fields& f) {
  ThreadRow t;
  t.tid = f.whole("tid");
  t.name = f.text("name");
  t.exited = f.flag("exited");
  t.lost_s = f.number("lost_s");
  t.lost_share = f.number("lost_share");
  t.categories = read_categories(f, "categories");
  return t;
}

CallRow read_call(const Fields& f) {
  CallRow c;
  c.name = f.text("name");
  c.category = category_of(f, "category");
  c.count = f.count("count");
  c.total_s = f.number("total_s");
  c.max_s = f.number("max_s");
  c.p50_s = f.number("p50_s");
  c.p99_s = f.number("p99_s");
  c.bytes = f.count("bytes");
  c.steady_s = f.number("steady_s");
  return c;
}

CopyRow read_copy(const Fields& f) {
  CopyRow c;
  c.copy = copy_kind_of(f, "kind");
  c.host = host_memory_of(f, "host");
  c.count = f.count("count");
  c.bytes = f.count("bytes");
  c.total_s = f.number("total_s");
  c.async_api = f.flag("async_api");
  // Summaries written before issue 17 hold "gbps" (bytes / host time for
  // every row, Note [Copy rates] in calls.h): not read.
  c.host_time_gbps = f.number("host_time_gbps");
  return c;
}

CallSiteRow read_call_site(const Fields& f) {
  CallSiteRow c;
  c.category = category_of(f, "category");
  c.api = f.text("api");
  c.blocked_s = f.number("blocked_s");
  c.count = f.count("count");
  c.frames = f.strings("frames");
  return c;
}
}  // namespace

void read_calls(const Fields& f, Summary* s) {
  s->lost_s = f.number("lost_s");
  s->lost_share = f.number("lost_share");
  s->categories = read_categories(f, "categories");
  const JsonValue* v = nullptr;
  if (f.object("worst_thread", &v)) {
    s->worst_thread = read_thread(Fields(*v, "worst_thread"));
  } else {
    s->worst_thread.categories = read_categories(f, "worst_thread");  // null: every category 0, as build_calls
  }
  f.each("threads", [&](const JsonValue& item, const std::string& at) { s->threads.push_back(read_thread(Fields(item, at))); });
  if (f.object("other_threads", &v)) {
    Fields o(*v, "other_threads");
    s->other_threads.threads = o.count("threads");
    s->other_threads.lost_s = o.number("lost_s");
    s->other_threads.lost_share = o.number("lost_share");
    s->other_threads.categories = read_categories(o, "categories");
  }
  f.each("calls", [&](const JsonValue& item, const std::string& at) { s->calls.push_back(read_call(Fields(item, at))); });
  f.each("copies", [&](const JsonValue& item, const std::string& at) { s->copies.push_back(read_copy(Fields(item, at))); });
  f.each("call_sites",
         [&](const JsonValue& item, const std::string& at) { s->call_sites.push_back(read_call_site(Fields(item, at))); });
}

}  // namespace report
}  // namespace gpuslack
