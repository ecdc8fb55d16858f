// Each section's JSON writer and reader on their own (the _json.h beside
// each section: sections.h), with every member of the section set: written
// into a document, read back by the section's reader, written again the
// same (write -> read -> write; section_round_trip.h), the device health's
// and the series' in device_health_json_test.cc and series_json_test.cc.
// And the copies at the boundary of the GPU timeline's kernels and steps
// (gpu_timeline.h) and of the topology's node (topology.h) keep every
// field.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "report/allocator_json.h"
#include "report/calls_json.h"
#include "report/gpu_timeline_json.h"
#include "report/job_json.h"
#include "report/json.h"
#include "report/json_fields.h"
#include "report/json_reader.h"
#include "report/json_writer.h"
#include "report/pinned_json.h"
#include "report/staging_json.h"
#include "report/summary.h"
#include "report/summary_reader.h"
#include "report/topology.h"
#include "section_round_trip.h"

namespace gpuslack {
namespace report {
namespace {

using detail::Fields;
using json_detail::Writer;
using testing_round_trip::document;
using testing_round_trip::expect_round_trip;
using testing_round_trip::parsed;

std::vector<CategoryTime> five_categories(double base) {
  std::vector<CategoryTime> out;
  for (int c = 0; c < kCategoryCount; ++c) out.push_back({static_cast<Category>(c), base + c, 0.01 * (c + 1)});
  return out;
}

TEST(SectionsJson, JobRoundTrips) {
  JobIdentity j;
  j.id = "job-42";
  j.id_from = "SLURM_JOB_ID";
  j.rank = 5;
  j.rank_from = "RANK";
  j.local_rank = 1;
  j.world_size = 16;
  j.node_rank = 2;
  j.local_world_size = 4;
  j.nodes = 4;
  j.node = "node-\"2\"";
  j.restart = 3;
  j.launcher = "torchrun";
  j.nccl_ranks = {{16, 5}, {4, 1}};
  const auto write = [](const JobIdentity& x, Writer* w) {
    w->key("job");
    write_job(x, w);
  };
  const std::string json = document([&](Writer* w) { write(j, w); });
  expect_round_trip<JobIdentity>(json, read_job, write);
  const JobIdentity back = read_job(Fields(parsed(json), ""));
  EXPECT_EQ("job-42", back.id);
  EXPECT_EQ(4, back.local_world_size);
  ASSERT_EQ(2u, back.nccl_ranks.size());
  EXPECT_EQ(1, back.nccl_ranks[1].rank);
}

// A summary from before "job": the top-level rank, local rank and host.
TEST(SectionsJson, AJobFromBeforeTheMemberReadsTheTopLevel) {
  const JobIdentity j = read_job(Fields(parsed(R"({"rank": 3, "local_rank": 1, "host": "h"})"), ""));
  EXPECT_EQ(3, j.rank);
  EXPECT_EQ(1, j.local_rank);
  EXPECT_EQ("h", j.node);
  EXPECT_EQ(-1, j.world_size);
}

TEST(SectionsJson, CallsRoundTrip) {
  Summary s;
  s.wall_s = 10;
  s.lost_s = 2.5;
  s.lost_share = 0.25;
  s.categories = five_categories(1);
  ThreadRow t;
  t.tid = 77;
  t.name = "trainer \x01";
  t.exited = true;
  t.lost_s = 1.5;
  t.lost_share = 0.15;
  t.categories = five_categories(0.5);
  s.threads = {t, t};
  s.threads[1].tid = 78;
  s.worst_thread = t;
  s.other_threads.threads = 9;
  s.other_threads.lost_s = 0.75;
  s.other_threads.lost_share = 0.075;
  s.other_threads.categories = five_categories(0.25);
  s.calls = {{"cudaFree", Category::kAllocation, 12, 1.25, 0.5, 0.01, 0.4, 4096, 0.625}};
  CopyRow c;
  c.copy = CopyKind::kHostToDevice;
  c.host = HostMemory::kPageable;
  c.async_api = true;
  c.count = 4;
  c.bytes = 1 << 20;
  c.total_s = 0.125;
  c.host_time_gbps = 8.5;
  s.copies = {c};
  s.call_sites = {{Category::kCopy, "cudaMemcpy", 0.25, 3, {"train_step+0x1a (train.so)", "main"}}};
  const auto write = [](const Summary& x, Writer* w) {
    write_calls_totals(x, w);
    write_calls_rows(x, w);
  };
  const auto read = [](const Fields& f) {
    Summary x;
    read_calls(f, &x);
    return x;
  };
  const std::string json = document([&](Writer* w) { write(s, w); });
  expect_round_trip<Summary>(json, read, write);
  const Summary back = read(Fields(parsed(json), ""));
  EXPECT_EQ(9u, back.other_threads.threads);
  ASSERT_EQ(1u, back.copies.size());
  EXPECT_EQ(CopyKind::kHostToDevice, back.copies[0].copy);
  EXPECT_TRUE(back.copies[0].async_api);
  EXPECT_EQ(0.625, back.calls.at(0).steady_s);
  EXPECT_EQ(78, back.threads.at(1).tid);
}

// No thread made a hooked call: "worst_thread" and "other_threads" null,
// and the worst thread reads back with every category at 0.
TEST(SectionsJson, CallsWithNoThreadRoundTrip) {
  Summary s;
  s.categories = five_categories(0);
  const auto write = [](const Summary& x, Writer* w) {
    write_calls_totals(x, w);
    write_calls_rows(x, w);
  };
  const std::string json = document([&](Writer* w) { write(s, w); });
  EXPECT_NE(std::string::npos, json.find("\"worst_thread\": null"));
  EXPECT_NE(std::string::npos, json.find("\"other_threads\": null"));
  Summary back;
  read_calls(Fields(parsed(json), ""), &back);
  EXPECT_EQ(static_cast<size_t>(kCategoryCount), back.worst_thread.categories.size());
  EXPECT_EQ(json, document([&](Writer* w) { write(back, w); }));
}

TEST(SectionsJson, AllocatorRoundTrips) {
  AllocatorRow a;
  a.device = 1;
  AllocatorCounters& c = a.stats;
  c.allocated = 1;
  c.peak_allocated = 2;
  c.reserved = 3;
  c.peak_reserved = 4;
  c.largest_free = 5;
  c.pending_free = 6;
  c.allocations = 7;
  c.frees = 8;
  c.granules_mapped = 9;
  c.granules_unmapped = 10;
  c.chunks_mapped = 11;
  c.chunks_unmapped = 12;
  c.reservations = 13;
  c.oom_retries = 14;
  c.failed_allocations = 15;
  c.stall_s = 0.25;
  c.stream_reuses = 16;
  c.deferred_frees = 17;
  c.capture_fallbacks = 18;
  c.unmap_calls = 19;
  c.set_access_calls = 20;
  c.created_without = kCreatedWithoutPosixFd | kCreatedWithoutRdma;
  a.utilization = 0.5;
  a.timeline.t_s = {0, 1.5};
  a.timeline.allocated = {100, 200};
  a.timeline.reserved = {300, 400};
  AllocatorStatus status;
  status.selected = "vmm";
  status.off = {{2, "no VMM support"}};
  struct Section {
    std::vector<AllocatorRow> rows;
    AllocatorStatus status;
  };
  const auto write = [](const Section& x, Writer* w) { write_allocator(x.rows, x.status, w); };
  const auto read = [](const Fields& f) {
    Section x;
    read_allocator(f, &x.rows, &x.status);
    return x;
  };
  const std::string json = document([&](Writer* w) { write(Section{{a}, status}, w); });
  expect_round_trip<Section>(json, read, write);
  const Section back = read(Fields(parsed(json), ""));
  ASSERT_EQ(1u, back.rows.size());
  EXPECT_EQ(20u, back.rows[0].stats.set_access_calls);
  EXPECT_EQ(kCreatedWithoutPosixFd | kCreatedWithoutRdma, back.rows[0].stats.created_without);
  EXPECT_EQ("no VMM support", back.status.off.at(0).why);
}

TEST(SectionsJson, AnAllocatorSelectedThatIsNeitherIsMalformed) {
  std::vector<AllocatorRow> rows;
  AllocatorStatus status;
  try {
    read_allocator(Fields(parsed(R"({"allocator_status": {"selected": "cuda"}})"), ""), &rows, &status);
    FAIL() << "read";
  } catch (const detail::Malformed& m) {
    EXPECT_EQ("allocator_status.selected: expected native or vmm", m.what);
  }
}

TEST(SectionsJson, StagingRoundTrips) {
  StagingSection st;
  st.present = true;
  StagingCounters& s = st.stats;
  s.enabled = true;
  s.exact = true;
  s.async_d2h = true;
  s.threshold_bytes = 1;
  s.chunk_bytes = 2;
  s.h2d = {3, 4, 5, 6, 7, 8, 9000};
  s.d2h = {10, 11, 12, 13, 14, 15, 16000};
  s.passed_off = 17;
  s.passed_small = 18;
  s.passed_capture = 19;
  s.passed_capture_unknown = 20;
  s.passed_exact = 21;
  s.passed_error_pending = 22;
  s.passed_unsupported = 23;
  s.passed_measured = 24;
  s.passed_unknown_work = 25;
  s.partial = 26;
  s.host_work_waits = 27;
  s.host_work_wait_ns = 28000;
  s.legacy_h2d = 29;
  s.legacy_other_streams = 30;
  s.budget_waits = 31;
  s.budget_wait_ns = 32000;
  s.async_d2h_copies = 33;
  s.budget_bytes = 34;
  s.pinned_bytes = 35;
  s.peak_in_use_bytes = 36;
  s.pin_failures = 37;
  st.sites = {{"cudaMemcpy", 2, 40, 1 << 30, {"load_batch (data.so)"}}};
  const auto write = [](const StagingSection& x, Writer* w) {
    w->key("staging");
    write_staging(x, w);
  };
  const auto read = [](const Fields& f) { return read_staging(Fields(*f.get("staging"), "staging")); };
  const std::string json = document([&](Writer* w) { write(st, w); });
  expect_round_trip<StagingSection>(json, read, write);
  const StagingSection back = read(Fields(parsed(json), ""));
  EXPECT_TRUE(back.present);
  EXPECT_EQ(16000u, back.stats.d2h.blocked_ns);
  EXPECT_EQ(37u, back.stats.pin_failures);
  EXPECT_EQ(40u, back.sites.at(0).copies);
}

TEST(SectionsJson, PinnedRoundTrips) {
  PinnedSection p;
  p.present = true;
  PinnedCounters& c = p.stats;
  c.pinned = 1;
  c.peak_pinned = 2;
  c.live = 3;
  c.peak_live = 4;
  c.cap = 5;
  c.chunk_size = 6;
  c.chunks = 7;
  c.chunks_allocated = 8;
  c.chunks_released = 9;
  c.allocations = 10;
  c.frees = 11;
  c.pending_free = 12;
  c.epochs = 13;
  c.deferred_frees = 14;
  c.cap_hits = 15;
  c.fallbacks = 16;
  c.passthrough = 17;
  c.trimmed = 18;
  c.stall_s = 0.5;
  const auto write = [](const PinnedSection& x, Writer* w) {
    w->key("pinned");
    write_pinned(x, w);
  };
  const auto read = [](const Fields& f) { return read_pinned(Fields(*f.get("pinned"), "pinned")); };
  const std::string json = document([&](Writer* w) { write(p, w); });
  expect_round_trip<PinnedSection>(json, read, write);
  const PinnedSection back = read(Fields(parsed(json), ""));
  EXPECT_TRUE(back.present);
  EXPECT_EQ(18u, back.stats.trimmed);
  EXPECT_EQ(0.5, back.stats.stall_s);
}

GpuTimelineSection every_timeline_member_set() {
  GpuTimelineSection g;
  g.status = timeline::Status::kMeasured;
  g.detail = "d";
  g.how_to_enable = "h";
  g.stopped_by = "nsys";
  g.stopped_after_s = 1.5;
  g.records = 1;
  g.dropped_by_pool = 2;
  g.buffers_beyond_cap = 3;
  g.dropped_by_cupti = 4;
  g.host_intervals_dropped = 5;
  g.buffer_bytes_limit = 6;
  g.buffer_bytes_peak = 7;
  GpuDeviceRow d;
  d.device = 1;
  d.wall_s = 10;
  d.busy_s = 6;
  d.idle_s = 4;
  for (int i = 0; i < timeline::kBusyCount; ++i) d.busy_by[i] = 0.5 + i;
  for (int i = 0; i < timeline::kIdleCount; ++i) d.idle_by[i] = 0.25 + i;
  d.idle_sites = {{"allocation", "cudaFree", 1.25, {"f (a.so)"}}};
  KernelRow k{"gemm", 100, 2.5, 0.025, {}};
  KernelLaunches& l = k.launches;
  l.sm_count = 132;
  l.shapes = 2;
  l.blocks_min = 64;
  l.blocks_max = 264;
  l.blocks_per_sm_min = 1;
  l.blocks_per_sm_max = 2;
  l.waves_min = 0.484848;
  l.waves_max = 2;
  l.wave_efficiency = 0.75;
  l.wave_efficiency_min = 0.484848;
  l.shaped_s = 2.5;
  l.below_sms_s = 1.5;
  l.underfilled_s = 1.5;
  l.underfilled_idle_s = 0.75;
  l.top_shapes = {KernelShapeRow{64, 384, 168, 196608, 1, 0.484848, 0.484848, 75, 1.5}};
  // A kernel whose records carried no grid: no "launch"; one with a grid
  // but unknown limits: no blocks_per_sm, waves.
  KernelRow plain{"copy_kernel", 3, 0.003, 0.001, {}};
  KernelRow unknown_limits{"k", 2, 0.002, 0.001, {}};
  unknown_limits.launches.shapes = 1;
  unknown_limits.launches.blocks_min = unknown_limits.launches.blocks_max = 8;
  unknown_limits.launches.top_shapes = {KernelShapeRow{8, 32, 0, 0, 0, 0, 0, 2, 0.002}};
  d.top_kernels = {k, plain, unknown_limits};
  d.short_kernel_busy_s = 0.125;
  d.kernels = 105;
  d.launches = 90;
  d.steps.from_marks = true;
  d.steps.count = 20;
  d.steps.busy_share_p50 = 0.6;
  d.steps.busy_share_p99 = 0.4;
  d.steps.wall_p50_s = 0.5;
  d.steps.wall_p99_s = 0.75;
  d.steps.worst = {StepRow{17, 1.6, 0.64, 0.96}};
  g.devices = {d};
  return g;
}

TEST(SectionsJson, GpuTimelineRoundTrips) {
  const GpuTimelineSection g = every_timeline_member_set();
  const auto write = [](const GpuTimelineSection& x, Writer* w) {
    w->key("gpu_timeline");
    write_gpu_timeline(x, w);
  };
  const auto read = [](const Fields& f) { return read_gpu_timeline(Fields(*f.get("gpu_timeline"), "gpu_timeline")); };
  const std::string json = document([&](Writer* w) { write(g, w); });
  expect_round_trip<GpuTimelineSection>(json, read, write);
  const GpuTimelineSection back = read(Fields(parsed(json), ""));
  EXPECT_EQ(timeline::Status::kMeasured, back.status);
  ASSERT_EQ(1u, back.devices.size());
  ASSERT_EQ(3u, back.devices[0].top_kernels.size());
  EXPECT_EQ(132, back.devices[0].top_kernels[0].launches.sm_count);
  EXPECT_EQ(0u, back.devices[0].top_kernels[1].launches.shapes);
  EXPECT_EQ(0, back.devices[0].top_kernels[2].launches.sm_count);
  EXPECT_EQ(17u, back.devices[0].steps.worst.at(0).index);
}

// The whole summary with every moved section set reads back and writes the
// same bytes through format_json and summary_from_json.
TEST(SectionsJson, TheWholeSummaryRoundTrips) {
  Summary s;
  s.categories = five_categories(1);
  s.gpu_timeline = every_timeline_member_set();
  s.pinned.present = true;
  s.pinned.stats.cap = 1 << 30;
  s.staging.present = true;
  s.staging.stats.h2d.seen = 4;
  s.allocator_status.selected = "vmm";
  s.allocator.resize(1);
  s.job.id = "j";
  const std::string json = format_json(s);
  Summary back;
  std::string error;
  ASSERT_TRUE(summary_from_json(json, &back, &error)) << error;
  EXPECT_EQ(json, format_json(back));
}

// The copies at the boundary (gpu_timeline.h): every field of the
// timeline's kernel and step rows reaches the report's.
TEST(SectionsJson, TheTimelinesKernelsAndStepsAreCopiedWhole) {
  timeline::KernelRow k;
  k.name = "gemm";
  k.count = 1;
  k.total_s = 2;
  k.mean_s = 3;
  timeline::KernelLaunches& l = k.launches;
  l.sm_count = 4;
  l.shapes = 5;
  l.blocks_min = 6;
  l.blocks_max = 7;
  l.blocks_per_sm_min = 8;
  l.blocks_per_sm_max = 9;
  l.waves_min = 10;
  l.waves_max = 11;
  l.wave_efficiency = 12;
  l.wave_efficiency_min = 13;
  l.shaped_s = 14;
  l.below_sms_s = 15;
  l.underfilled_s = 16;
  l.underfilled_idle_s = 17;
  l.top_shapes = {timeline::KernelShapeRow{18, 19, 20, 21, 22, 23, 24, 25, 26}};
  const KernelRow r = kernel_row(k);
  EXPECT_EQ("gemm", r.name);
  EXPECT_EQ(1u, r.count);
  EXPECT_EQ(2, r.total_s);
  EXPECT_EQ(3, r.mean_s);
  const KernelLaunches& o = r.launches;
  EXPECT_EQ(4, o.sm_count);
  EXPECT_EQ(5u, o.shapes);
  EXPECT_EQ(6u, o.blocks_min);
  EXPECT_EQ(7u, o.blocks_max);
  EXPECT_EQ(8, o.blocks_per_sm_min);
  EXPECT_EQ(9, o.blocks_per_sm_max);
  EXPECT_EQ(10, o.waves_min);
  EXPECT_EQ(11, o.waves_max);
  EXPECT_EQ(12, o.wave_efficiency);
  EXPECT_EQ(13, o.wave_efficiency_min);
  EXPECT_EQ(14, o.shaped_s);
  EXPECT_EQ(15, o.below_sms_s);
  EXPECT_EQ(16, o.underfilled_s);
  EXPECT_EQ(17, o.underfilled_idle_s);
  ASSERT_EQ(1u, o.top_shapes.size());
  const KernelShapeRow& x = o.top_shapes[0];
  EXPECT_EQ(18u, x.blocks);
  EXPECT_EQ(19u, x.threads_per_block);
  EXPECT_EQ(20u, x.registers_per_thread);
  EXPECT_EQ(21u, x.shared_bytes_per_block);
  EXPECT_EQ(22, x.blocks_per_sm);
  EXPECT_EQ(23, x.waves);
  EXPECT_EQ(24, x.wave_efficiency);
  EXPECT_EQ(25u, x.count);
  EXPECT_EQ(26, x.total_s);

  timeline::Steps st;
  st.from_marks = true;
  st.count = 1;
  st.busy_share_p50 = 2;
  st.busy_share_p99 = 3;
  st.wall_p50_s = 4;
  st.wall_p99_s = 5;
  st.worst = {timeline::StepRow{6, 7, 8, 9}};
  const Steps s = steps_of(st);
  EXPECT_TRUE(s.from_marks);
  EXPECT_EQ(1u, s.count);
  EXPECT_EQ(2, s.busy_share_p50);
  EXPECT_EQ(3, s.busy_share_p99);
  EXPECT_EQ(4, s.wall_p50_s);
  EXPECT_EQ(5, s.wall_p99_s);
  ASSERT_EQ(1u, s.worst.size());
  EXPECT_EQ(6u, s.worst[0].index);
  EXPECT_EQ(7, s.worst[0].wall_s);
  EXPECT_EQ(8, s.worst[0].busy_s);
  EXPECT_EQ(9, s.worst[0].idle_s);
}

// The copy at the boundary (topology.h): every field of the topology
// room's node reaches the report's.
TEST(SectionsJson, TheTopologysNodeIsCopiedWhole) {
  topology::NodeTopology node;
  topology::Gpu g;
  g.device = 1;
  g.name = "H100";
  g.nvlink_links = 18;
  g.nvlink_generation = 4;
  g.nvlink_gbps = 450;
  g.pcie_generation = 5;
  g.pcie_width = 16;
  g.pcie_max_generation = 6;
  g.pcie_max_width = 32;
  g.pcie_gbps = 63;
  g.peers = {0, 2};
  g.place = {"0000:18:00.0", 1, {"pci0000:17", "0000:18:00.0"}, "u"};
  g.unknown = "gpu?";
  node.gpus = {g};
  node.gpus_unknown = "gu";
  node.gpus_on_node = 8;
  topology::Nic n;
  n.name = "mlx5_0";
  n.port = 2;
  n.rdma = false;
  n.link_layer = "Ethernet";
  n.netdev = "eth0";
  n.state = "up";
  n.active = true;
  n.gbit_s = 400;
  n.rate_from = "rate";
  n.place = {"0000:19:00.0", 0, {"pci0000:17"}, ""};
  n.unknown = "nic?";
  node.nics = {n};
  node.nics_unknown = "nu";
  node.affinity = {topology::GpuNic{1, "mlx5_0", 2, topology::Closeness::kSameNumaNode}};
  node.sysfs_root = "/root";
  node.corrupt = {"/x: 'y'"};
  const TopologyNode r = topology_node(node);
  ASSERT_EQ(1u, r.gpus.size());
  const TopologyGpu& rg = r.gpus[0];
  EXPECT_EQ(1, rg.device);
  EXPECT_EQ("H100", rg.name);
  EXPECT_EQ(18, rg.nvlink_links);
  EXPECT_EQ(4, rg.nvlink_generation);
  EXPECT_EQ(450, rg.nvlink_gbps);
  EXPECT_EQ(5, rg.pcie_generation);
  EXPECT_EQ(16, rg.pcie_width);
  EXPECT_EQ(6, rg.pcie_max_generation);
  EXPECT_EQ(32, rg.pcie_max_width);
  EXPECT_EQ(63, rg.pcie_gbps);
  EXPECT_EQ((std::vector<int>{0, 2}), rg.peers);
  EXPECT_EQ("0000:18:00.0", rg.place.bus_id);
  EXPECT_EQ(1, rg.place.numa_node);
  EXPECT_EQ(2u, rg.place.path.size());
  EXPECT_EQ("u", rg.place.unknown);
  EXPECT_EQ("gpu?", rg.unknown);
  EXPECT_EQ("gu", r.gpus_unknown);
  EXPECT_EQ(8, r.gpus_on_node);
  ASSERT_EQ(1u, r.nics.size());
  const TopologyNic& rn = r.nics[0];
  EXPECT_EQ("mlx5_0", rn.name);
  EXPECT_EQ(2, rn.port);
  EXPECT_FALSE(rn.rdma);
  EXPECT_EQ("Ethernet", rn.link_layer);
  EXPECT_EQ("eth0", rn.netdev);
  EXPECT_EQ("up", rn.state);
  EXPECT_TRUE(rn.active);
  EXPECT_EQ(400, rn.gbit_s);
  EXPECT_EQ("rate", rn.rate_from);
  EXPECT_EQ("0000:19:00.0", rn.place.bus_id);
  EXPECT_EQ("nic?", rn.unknown);
  EXPECT_EQ("nu", r.nics_unknown);
  ASSERT_EQ(1u, r.affinity.size());
  EXPECT_EQ(1, r.affinity[0].device);
  EXPECT_EQ("mlx5_0", r.affinity[0].nic);
  EXPECT_EQ(2, r.affinity[0].port);
  EXPECT_EQ(topology::Closeness::kSameNumaNode, r.affinity[0].closeness);
  EXPECT_EQ("/root", r.sysfs_root);
  EXPECT_EQ((std::vector<std::string>{"/x: 'y'"}), r.corrupt);
}

}  // namespace
}  // namespace report
}  // namespace gpuslack
