// A representative, hand-made Summary with every optional part filled
// (ranks, worst thread, an exited thread and others summed, calls of
// several categories, copies, call sites with frames, the pinned heap) and strings that need escaping: shared by the text and JSON tests
// and by write_sample_summary, whose output the schema ctest validates.
#pragma once

#include <string>
#include <vector>

#include "report/summary.h"

namespace gpuslack {
namespace report {
namespace testing_sample {

inline std::vector<CategoryTime> categories(double alloc, double copy, double coll, double sync, double other,
                                            double wall) {
  std::vector<CategoryTime> out;
  const double seconds[kCategoryCount] = {alloc, copy, coll, sync, other};
  for (int c = 0; c < kCategoryCount; ++c) {
    CategoryTime t;
    t.category = static_cast<Category>(c);
    t.seconds = seconds[c];
    t.share = seconds[c] / wall;
    out.push_back(t);
  }
  return out;
}

// 12.5 s of wall; 2.1 s allocation, 0.825 s copies, no collectives, 3.2 s
// waiting for the GPU: 23.4% lost.
inline Summary sample_summary() {
  Summary s;
  s.gpuslack_version = "0.1.0";
  s.build_info = "gpuslack 0.1.0 (test build)";
  s.reason = "exit";
  s.host = "node01";
  s.pid = 123;
  s.rank = 0;
  s.local_rank = 0;
  s.job.rank = 0;
  s.job.rank_from = "RANK";
  s.job.local_rank = 0;
  s.job.node = "node01";
  s.job.launcher = "torchrun";
  s.job.nccl_ranks = {{8, 0}, {2, 1}};
  s.wall_s = 12.5;
  s.started_utc = "2025-01-02T03:04:05Z";
  s.categories = categories(2.1, 0.825, 0, 3.2, 0.1, 12.5);
  s.lost_s = 2.925;
  s.lost_share = 0.234;

  ThreadRow main_thread;
  main_thread.tid = 4242;
  main_thread.name = "python3 \"main\"\n\x01\xff";  // quote, control chars, invalid UTF-8
  main_thread.categories = categories(2.0, 0.8, 0, 3.0, 0.1, 12.5);
  main_thread.lost_s = 2.8;
  main_thread.lost_share = 2.8 / 12.5;
  ThreadRow loader;
  loader.tid = 4250;
  loader.name = "pt_data_worker";
  loader.categories = categories(0.1, 0.025, 0, 0.2, 0, 12.5);
  loader.lost_s = 0.125;
  loader.lost_share = 0.125 / 12.5;
  loader.exited = true;
  s.threads = {main_thread, loader};
  // Exited threads summed (more than the listed few had exited).
  s.other_threads.threads = 3;
  s.other_threads.categories = categories(0.05, 0, 0, 0, 0, 12.5);
  s.other_threads.lost_s = 0.05;
  s.other_threads.lost_share = 0.05 / 12.5;
  s.worst_thread = main_thread;

  CallRow malloc_row{"cudaMalloc", Category::kAllocation, 120, 1.6, 0.052, 0.012, 0.040, 12ull << 30};
  CallRow free_row{"cudaFree", Category::kAllocation, 118, 0.5, 0.03, 0.003, 0.02, 0};
  CallRow memcpy_row{"cudaMemcpy", Category::kCopy, 40, 0.825, 0.1, 0.015, 0.09, 3ull << 30};
  CallRow sync_row{"cudaDeviceSynchronize", Category::kSync, 300, 3.2, 0.5, 0.008, 0.4, 0};
  CallRow query_row{"cudaStreamQuery", Category::kOther, 5000, 0.1, 0.0001, 0.00001, 0.00005, 0};
  s.calls = {sync_row, malloc_row, memcpy_row, free_row, query_row};

  // A rate only where host time is the transfer's (Note [Copy rates]): the
  // asynchronous device-to-device copies have none.
  s.copies = {CopyRow{CopyKind::kHostToDevice, HostMemory::kPageable, false, 30, 2ull << 30, 0.6, 3.579},
              CopyRow{CopyKind::kDeviceToHost, HostMemory::kPinned, false, 10, 1ull << 30, 0.225, 4.772},
              CopyRow{CopyKind::kDeviceToDevice, HostMemory::kNone, true, 100, 8ull << 30, 0.00005, 0},
              CopyRow{CopyKind::kMemset, HostMemory::kNone, true, 4, 4096, 0, 0}};

  s.call_sites = {
      CallSiteRow{Category::kAllocation, "cudaMalloc", 1.2, 90,
                  {"at::native::empty_cuda+0x41 (libtorch_cuda.so)", "libtorch_cuda.so+0x1234"}},
      CallSiteRow{Category::kAllocation, "cudaFree", 0.4, 100, {"caching_allocator_free+0x10 (app)"}},
      CallSiteRow{Category::kCopy, "cudaMemcpy", 0.8, 40, {"copy_\"weights\"\t+0x8 (app)", "??"}},
      CallSiteRow{Category::kSync, "cudaDeviceSynchronize", 3.2, 300, {"main+0x99 (app)"}}};

  // Pageable copies: 30 H2D, 28 of them staged; 2 D2H passed through.
  StagingCounters& g = s.staging.stats;
  s.staging.present = true;
  g.enabled = true;
  g.chunk_bytes = 1u << 20;
  g.h2d = {30, 2ull << 30, 28, (2ull << 30) - (2u << 20), 2, 2u << 20, 40000000};
  g.d2h = {2, 4096, 0, 0, 2, 4096, 0};
  g.passed_small = 2;
  g.passed_measured = 2;
  g.host_work_waits = 3;
  g.host_work_wait_ns = 1500000;
  g.budget_bytes = 256u << 20;
  g.pinned_bytes = 4u << 20;
  g.peak_in_use_bytes = 3u << 20;
  s.staging.sites = {PageableSiteRow{"cudaMemcpyAsync", 2048, 30, 2ull << 30, {"load_batch+0x2a (app)", "main+0x10 (app)"}}};

  // The pinned heap: two 64 MiB chunks, one released by a trim.
  s.pinned.present = true;
  PinnedCounters& p = s.pinned.stats;
  p.pinned = 64ull << 20;
  p.peak_pinned = 128ull << 20;
  p.live = 3ull << 20;
  p.peak_live = 100ull << 20;
  p.cap = 16ull << 30;
  p.chunk_size = 64ull << 20;
  p.chunks = 1;
  p.chunks_allocated = 2;
  p.chunks_released = 1;
  p.allocations = 1000;
  p.frees = 990;
  p.pending_free = 7;
  p.epochs = 40;
  p.deferred_frees = 2;
  p.cap_hits = 1;
  p.fallbacks = 1;
  p.passthrough = 3;
  p.trimmed = 64ull << 20;
  p.stall_s = 0.002;
  return s;
}

// The sample with a measured GPU timeline on two devices: device 0 idle
// 31% of 412 s, mostly host-bound, with a cudaFree call site.
inline Summary sample_summary_with_gpu_timeline() {
  Summary s = sample_summary();
  GpuTimelineSection& g = s.gpu_timeline;
  g.status = timeline::Status::kMeasured;
  g.stopped_by = "CUPTI (unnamed subscriber)";
  g.stopped_after_s = 400;
  g.records = 123456;
  g.dropped_by_pool = 2;
  g.dropped_by_cupti = 10;
  g.host_intervals_dropped = 1;
  g.buffer_bytes_limit = 64ull << 20;
  g.buffer_bytes_peak = 8ull << 20;
  GpuDeviceRow d;
  d.device = 0;
  d.wall_s = 412;
  d.busy_s = 284.28;
  d.idle_s = 127.72;
  d.busy_by[0] = 226.6;   // compute 55%
  d.busy_by[1] = 45.32;   // communication 11%
  d.busy_by[2] = 12.36;   // copies 3%
  d.idle_by[0] = 90.64;   // host-bound 22%
  d.idle_by[2] = 24.72;   // allocation 6%
  d.idle_by[3] = 12.36;   // copies 3%
  d.idle_sites = {IdleSiteRow{"allocation", "cudaFree", 24.0, {"train_step+0x1a (train.so)", "main+0x10 (app)"}},
                  IdleSiteRow{"copies", "cudaMemcpy", 12.0, {}}};
  d.top_kernels = {KernelRow{"gemm_kernel<float, 128>(float const*, float*)", 1000, 200.0, 0.2},
                   KernelRow{"\"quoted\" kernel", 3, 0.003, 0.001}};
  {
    // The gemm in two shapes on an H100: 64 blocks (half a wave) and 264
    // (two full waves), one block per SM.
    KernelLaunches& l = d.top_kernels[0].launches;
    l.sm_count = 132;
    l.shapes = 2;
    l.blocks_min = 64;
    l.blocks_max = 264;
    l.blocks_per_sm_min = l.blocks_per_sm_max = 1;
    l.waves_min = 0.484848;
    l.waves_max = 2;
    l.wave_efficiency = 0.613636;
    l.wave_efficiency_min = 0.484848;
    l.shaped_s = 200.0;
    l.below_sms_s = 150.0;
    l.underfilled_s = 150.0;
    l.underfilled_idle_s = 77.272727;
    l.top_shapes = {KernelShapeRow{64, 384, 168, 196608, 1, 0.484848, 0.484848, 750, 150.0},
                    KernelShapeRow{264, 384, 168, 196608, 1, 2, 1, 250, 50.0}};
    // The quoted kernel: a grid, its device's limits unknown.
    KernelLaunches& q = d.top_kernels[1].launches;
    q.shapes = 1;
    q.blocks_min = q.blocks_max = 1;
    q.shaped_s = 0.003;
    q.top_shapes = {KernelShapeRow{1, 32, 0, 0, 0, 0, 0, 3, 0.003}};
  }
  d.short_kernel_busy_s = 2.5;
  d.kernels = 250000;
  d.launches = 200000;
  d.steps.from_marks = true;
  d.steps.count = 400;
  d.steps.busy_share_p50 = 0.7;
  d.steps.busy_share_p99 = 0.4;
  d.steps.wall_p50_s = 1.0;
  d.steps.wall_p99_s = 1.5;
  d.steps.worst = {StepRow{17, 1.6, 0.64, 0.96}};
  g.devices.push_back(d);
  GpuDeviceRow d1;
  d1.device = 1;
  d1.wall_s = 412;
  d1.idle_s = 412;
  d1.idle_by[0] = 412;
  g.devices.push_back(d1);
  // Device health: device 1 throttled (sw_thermal) in 4 of 10 samples.
  s.device_health.status = health::Status::kMeasured;
  DeviceHealthRow h;
  h.device = 1;
  h.name = "NVIDIA H200";
  h.uuid = "GPU-0f0e0d0c-0b0a-0908-0706-050403020100";
  h.samples = 10;
  h.sm_clock_mhz_mean = 1830;
  h.sm_clock_mhz_min = 1500;
  h.sm_clock_max_mhz = 1980;
  h.clock_ratio_mean = 0.924242;
  h.throttled_samples = 4;
  h.throttle_reasons = {"gpu_idle", "sw_thermal"};
  h.temperature_c_mean = 71;
  h.temperature_c_max = 86;
  h.power_w_mean = 540;
  h.power_limit_w = 700;
  h.memory_used_bytes_max = 80ull << 30;
  s.device_health.devices.push_back(h);
  // The topology: rank 0 of 2 nodes x 8 on an HGX H100, GPU 0 and its NIC
  // behind one switch; a second NIC down.
  s.topology.present = true;
  s.topology.status = topology::Status::kRead;
  TopologyNode& node = s.topology.node;
  node.sysfs_root = "/";
  node.gpus_on_node = 8;
  TopologyGpu gpu;
  gpu.device = 0;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.place.bus_id = "0000:18:00.0";
  gpu.place.numa_node = 0;
  gpu.place.path = {"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:00.0", "0000:18:00.0"};
  gpu.nvlink_links = 18;
  gpu.nvlink_generation = 4;
  gpu.nvlink_gbps = 450;
  gpu.pcie_generation = gpu.pcie_max_generation = 5;
  gpu.pcie_width = gpu.pcie_max_width = 16;
  gpu.pcie_gbps = 63.0153846;
  gpu.peers = {1};
  node.gpus.push_back(gpu);
  TopologyNic nic;
  nic.name = "mlx5_0";
  nic.port = 1;
  nic.link_layer = "InfiniBand";
  nic.state = "ACTIVE";
  nic.active = true;
  nic.gbit_s = 400;
  nic.rate_from = "/sys/class/infiniband/mlx5_0/ports/1/rate";
  nic.place.bus_id = "0000:19:00.0";
  nic.place.numa_node = 0;
  nic.place.path = {"pci0000:15", "0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:19:00.0"};
  node.nics.push_back(nic);
  nic.name = "mlx5_1";
  nic.state = "DOWN";
  nic.active = false;
  nic.gbit_s = 0;
  nic.rate_from.clear();
  nic.unknown = "rate unreadable: 'x'";
  nic.place = TopologyPlace();
  nic.place.unknown = "cannot read /sys/bus/pci/devices/0000:2b:00.0/numa_node";
  node.nics.push_back(nic);
  node.corrupt = {"/sys/class/infiniband/mlx5_1/ports/1/rate: 'x'"};
  node.affinity.push_back(TopologyGpuNic{0, "mlx5_0", 1, topology::Closeness::kSamePcieSwitch});
  TopologyLinks& links = s.topology.links;
  links.intra_gbps = 450;
  links.intra_is_nvlink = true;
  links.intra_from = "measured: NVML: GPU 0 has 18 NVLink 4 links up, 25 GB/s each per direction";
  links.inter_gbps = 6.25;
  links.inter_from = "measured: 1 active RDMA port (InfiniBand), 400 Gb/s over the node's 8 GPUs (NVML)";
  links.nodes = 2;
  links.ranks_per_node = 8;
  links.shape_from = "measured: LOCAL_WORLD_SIZE=8, GROUP_WORLD_SIZE=2";
  s.job.local_world_size = 8;
  s.job.nodes = 2;
  s.series.interval_s = 2;
  SeriesDevice sd;
  sd.device = 1;
  sd.gpu_idle_share = {0.5, 0.25, 1};
  sd.memory_used_bytes = {1e9, 2e9, 2e9};
  sd.sm_clock_ratio = {1, 0.757576, 0.757576};
  s.series.devices.push_back(sd);
  s.series.reserved_bytes = {2097152, 4194304, 4194304};
  s.series.allocated_bytes = {1048576, 3145728, 0};
  return s;
}

}  // namespace testing_sample
}  // namespace report
}  // namespace gpuslack
