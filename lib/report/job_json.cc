// See job_json.h.
#include "report/job_json.h"

#include <string>

#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"

namespace gpuslack {
namespace report {

using detail::Fields;

void write_job(const JobIdentity& j, json_detail::Writer* w) {
  w->begin_object();
  w->key("id").string(j.id);
  w->key("id_from").string(j.id_from);
  w->key("rank").integer(j.rank < 0 ? -1 : j.rank);
  w->key("rank_from").string(j.rank_from);
  w->key("local_rank").integer(j.local_rank < 0 ? -1 : j.local_rank);
  w->key("world_size").integer(j.world_size < 0 ? -1 : j.world_size);
  w->key("node_rank").integer(j.node_rank < 0 ? -1 : j.node_rank);
  w->key("local_world_size").integer(j.local_world_size < 0 ? -1 : j.local_world_size);
  w->key("nodes").integer(j.nodes < 0 ? -1 : j.nodes);
  w->key("node").string(j.node);
  w->key("restart").integer(j.restart < 0 ? 0 : j.restart);
  w->key("launcher").string(j.launcher);
  w->key("nccl_ranks").begin_array();
  for (const NcclRank& r : j.nccl_ranks) {
    w->begin_object(true);
    w->key("nranks").integer(r.nranks);
    w->key("rank").integer(r.rank);
    w->end_object();
  }
  w->end_array();
  w->end_object();
}

JobIdentity read_job(const Fields& top) {
  JobIdentity j;
  j.rank = top.whole("rank", -1);
  j.local_rank = top.whole("local_rank", -1);
  j.node = top.text("host");
  const JsonValue* v = nullptr;
  if (!top.object("job", &v)) return j;
  Fields f(*v, "job");
  j.id = f.text("id");
  j.id_from = f.text("id_from");
  j.rank = f.whole("rank", -1);
  j.rank_from = f.text("rank_from");
  j.local_rank = f.whole("local_rank", -1);
  j.world_size = f.whole("world_size", -1);
  j.node_rank = f.whole("node_rank", -1);
  j.local_world_size = f.whole("local_world_size", -1);
  j.nodes = f.whole("nodes", -1);
  j.node = f.text("node");
  j.restart = f.whole("restart");
  j.launcher = f.text("launcher");
  f.each("nccl_ranks", [&](const JsonValue& item, const std::string& at) {
    Fields r(item, at);
    j.nccl_ranks.push_back({r.whole("nranks"), r.whole("rank", -1)});
  });
  return j;
}

}  // namespace report
}  // namespace gpuslack
