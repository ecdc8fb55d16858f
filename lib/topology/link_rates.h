// What one NVLink link and one PCIe lane carry, per direction, in GB/s
// (1e9 bytes/s): the signalling rates the vendors publish, so that a GPU's
// links read from NVML become a bandwidth. Nominal figures: what NCCL
// reaches over them is lower (findings/fabric.h calibrates that).
//
// NVLink, per link and direction (NVIDIA's NVLink pages,
// https://www.nvidia.com/en-us/data-center/nvlink/, and the A100 and H100
// architecture whitepapers): generation 1 (P100: 4 links, 160 GB/s in
// both directions together) 20 GB/s; generation 2 (V100: 6 links,
// 300 GB/s) 25; generation 3 (A100: 12 links, 600 GB/s) 25; generation 4
// (H100: 18 links, 900 GB/s) 25; generation 5 (B200: 18 links,
// 1.8 TB/s) 50.
//
// NVML's nvmlDeviceGetNvLinkVersion answers an nvmlNvlinkVersion_t, not the
// generation (nvml.h: NVML_NVLINK_VERSION_1_0 = 1, _2_0 = 2, _2_2 = 3,
// _3_0 = 4, _3_1 = 5, _4_0 = 6, _5_0 = 7; NVML's own documentation said
// otherwise until 2025, hwloc issue #658): nvlink_generation() maps one to
// the other.
//
// PCIe, per lane and direction, after line coding (PCI-SIG's base
// specifications): gen 1 2.5 GT/s 8b/10b 0.25 GB/s; gen 2 5 GT/s 0.5;
// gen 3 8 GT/s 128b/130b 0.985; gen 4 16 GT/s 1.969; gen 5 32 GT/s 3.938;
// gen 6 64 GT/s (PAM4, FLIT mode: 242 of 256 bytes data) 7.563.
//
// Thread safety: pure.
#pragma once

namespace gpuslack {
namespace topology {

// The NVLink generation (1..5) of an nvmlNvlinkVersion_t; 0 when unknown.
int nvlink_generation(unsigned int nvml_version);
// The nvmlNvlinkVersion_t of generation `generation` (the simulated NVML's
// answer); 0 when unknown.
unsigned int nvml_nvlink_version(int generation);

// GB/s one link of that generation carries per direction; 0 when unknown.
double nvlink_link_gbps(int generation);
// GB/s one lane of that PCIe generation carries per direction; 0 unknown.
double pcie_lane_gbps(int generation);

}  // namespace topology
}  // namespace gpuslack
