# The dependencies, each used for what it is made for (docs/dependencies.md):
# the CUDA toolkit's headers only; abseil and jemalloc built by
# scripts/deps.sh into GPUSLACK_DEPS_DIR; spdlog and fmt header-only.
find_package(Threads REQUIRED)
find_package(CUDAToolkit 12 REQUIRED)  # headers: CUDA::toolkit, CUDA::nvtx3

set(GPUSLACK_ABSEIL_VERSION 20220623.1)
set(GPUSLACK_JEMALLOC_VERSION 5.3.0)
# Keep equal to *_RECIPE in scripts/deps.sh.
set(GPUSLACK_ABSEIL_RECIPE 1)
set(GPUSLACK_JEMALLOC_RECIPE 2)
set(_absl_prefix "${GPUSLACK_DEPS_DIR}/abseil-${GPUSLACK_ABSEIL_VERSION}-r${GPUSLACK_ABSEIL_RECIPE}/install")
set(_je_prefix "${GPUSLACK_DEPS_DIR}/jemalloc-${GPUSLACK_JEMALLOC_VERSION}-r${GPUSLACK_JEMALLOC_RECIPE}")
# The wheel's build (scripts/wheel.sh): both built by its toolchain, in its
# own cache folder.
set(GPUSLACK_ZIG_DEPS_DIR "" CACHE PATH "abseil and jemalloc built by the wheel's toolchain (scripts/wheel.sh)")
if(GPUSLACK_ZIG_DEPS_DIR)
  set(_absl_prefix "${GPUSLACK_ZIG_DEPS_DIR}/abseil-${GPUSLACK_ABSEIL_VERSION}/install")
  set(_je_prefix "${GPUSLACK_ZIG_DEPS_DIR}/jemalloc-${GPUSLACK_JEMALLOC_VERSION}")
endif()
if(NOT EXISTS "${_absl_prefix}" OR NOT EXISTS "${_je_prefix}/lib/libgpuslack_jemalloc.a")
  message(FATAL_ERROR "gpuslack: abseil/jemalloc not found under ${GPUSLACK_DEPS_DIR}; "
                      "run scripts/deps.sh first (README, Install)")
endif()

# abseil: position-independent, hidden, inline namespace gpuslack_lts_20220623.
string(FIND "${absl_DIR}" "${_absl_prefix}" _absl_here)
if(DEFINED absl_DIR AND NOT _absl_here EQUAL 0)
  unset(absl_DIR CACHE)  # found elsewhere before (another cache): look again
endif()
find_package(absl CONFIG REQUIRED PATHS "${_absl_prefix}" NO_DEFAULT_PATH)

# jemalloc: prefixed gpuslack_je_, private, no initial-exec TLS.
add_library(gpuslack_jemalloc STATIC IMPORTED GLOBAL)
set_target_properties(gpuslack_jemalloc PROPERTIES
  IMPORTED_LOCATION "${_je_prefix}/lib/libgpuslack_jemalloc.a"
  INTERFACE_INCLUDE_DIRECTORIES "${_je_prefix}/include"
  INTERFACE_LINK_LIBRARIES "Threads::Threads")

# CUPTI headers (13.2: cuptiSubscribe_v2 with allowMultipleSubscribers, the
# per-subscriber _v2 activity calls), from the nvidia-cuda-cupti wheel that
# scripts/deps.sh unpacks; the toolkit's own cupti*.h are 13.0's. Headers
# only: CUPTI is loaded at run time, never linked. Use the target
# gpuslack_cupti_headers: its -I comes before the toolkit's -isystem, so
# these headers win over the toolkit's. Include the parts (<cupti_activity.h>,
# <cupti_callbacks.h>, <cupti_result.h>, <cupti_version.h>), not the umbrella
# <cupti.h>: its generated_cuda*_meta.h need CUDA 13.2's cuda.h.
set(GPUSLACK_CUPTI_HEADERS_VERSION 13.2.86)  # keep equal to CUPTI_HEADERS_VERSION in scripts/deps.sh
set(GPUSLACK_CUPTI_INCLUDE_DIR "" CACHE PATH
    "CUPTI 13.2+ headers (empty: the deps cache's cupti-headers-${GPUSLACK_CUPTI_HEADERS_VERSION}/include)")
set(_cupti_include "${GPUSLACK_CUPTI_INCLUDE_DIR}")
if(NOT _cupti_include)
  set(_cupti_include "${GPUSLACK_DEPS_DIR}/cupti-headers-${GPUSLACK_CUPTI_HEADERS_VERSION}/include")
endif()
if(NOT EXISTS "${_cupti_include}/cupti_callbacks.h")
  message(FATAL_ERROR "gpuslack: CUPTI headers not found under ${_cupti_include}; "
                      "run scripts/deps.sh first (README, Install)")
endif()
file(STRINGS "${_cupti_include}/cupti_callbacks.h" _cupti_multi REGEX "allowMultipleSubscribers")
if(NOT _cupti_multi)
  message(FATAL_ERROR "gpuslack: ${_cupti_include} holds CUPTI headers older than 13.2 "
                      "(no allowMultipleSubscribers); scripts/deps.sh fetches 13.2's")
endif()
add_library(gpuslack_cupti_headers INTERFACE)
target_include_directories(gpuslack_cupti_headers INTERFACE "${_cupti_include}")
target_link_libraries(gpuslack_cupti_headers INTERFACE CUDA::toolkit)

# NVML's header (nvml.h), from the nvidia-nvml-dev wheel that scripts/deps.sh
# unpacks (the toolkit installed here has none). Header only: NVML is loaded
# at run time (lib/cuda/nvml_api.h), never linked.
set(GPUSLACK_NVML_HEADERS_VERSION 13.0.87)  # keep equal to NVML_HEADERS_VERSION in scripts/deps.sh
set(_nvml_include "${GPUSLACK_DEPS_DIR}/nvml-headers-${GPUSLACK_NVML_HEADERS_VERSION}/include")
if(NOT EXISTS "${_nvml_include}/nvml.h")
  message(FATAL_ERROR "gpuslack: nvml.h not found under ${_nvml_include}; "
                      "run scripts/deps.sh first (README, Install)")
endif()
add_library(gpuslack_nvml_headers INTERFACE)
target_include_directories(gpuslack_nvml_headers SYSTEM INTERFACE "${_nvml_include}")

# spdlog + fmt header-only. Debian's spdlog forces external fmt and its
# header-only target links the shared libfmt (with FMT_SHARED, which makes
# fmt's API visible): point it at fmt's header-only target instead.
find_package(fmt 9 REQUIRED)
find_package(spdlog 1.10 REQUIRED)
set_target_properties(spdlog::spdlog_header_only PROPERTIES
  INTERFACE_LINK_LIBRARIES "Threads::Threads;fmt::fmt-header-only")
# The wheel's toolchain brings glibc 2.28's headers: the copies of fmt's and
# spdlog's headers alone stand in for /usr/include (scripts/wheel.sh).
set(GPUSLACK_LOG_HEADERS_DIR "" CACHE PATH "fmt's and spdlog's headers alone (empty: where Debian put them)")
if(GPUSLACK_LOG_HEADERS_DIR)
  set_target_properties(spdlog::spdlog_header_only fmt::fmt-header-only PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${GPUSLACK_LOG_HEADERS_DIR}")
endif()

if(GPUSLACK_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(GPUSLACK_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
