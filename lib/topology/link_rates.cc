#include "topology/link_rates.h"

namespace gpuslack {
namespace topology {

int nvlink_generation(unsigned int nvml_version) {
  switch (nvml_version) {
    case 1: return 1;          // NVML_NVLINK_VERSION_1_0
    case 2: case 3: return 2;  // 2_0, 2_2
    case 4: case 5: return 3;  // 3_0, 3_1
    case 6: return 4;          // 4_0
    case 7: return 5;          // 5_0
    default: return 0;
  }
}

unsigned int nvml_nvlink_version(int generation) {
  switch (generation) {
    case 1: return 1;
    case 2: return 2;
    case 3: return 4;
    case 4: return 6;
    case 5: return 7;
    default: return 0;
  }
}

double nvlink_link_gbps(int generation) {
  switch (generation) {
    case 1: return 20;
    case 2: case 3: case 4: return 25;
    case 5: return 50;
    default: return 0;
  }
}

double pcie_lane_gbps(int generation) {
  switch (generation) {
    case 1: return 0.25;
    case 2: return 0.5;
    case 3: return 8.0 * 128 / 130 / 8;
    case 4: return 16.0 * 128 / 130 / 8;
    case 5: return 32.0 * 128 / 130 / 8;
    case 6: return 64.0 * 242 / 256 / 8;
    default: return 0;
  }
}

}  // namespace topology
}  // namespace gpuslack
