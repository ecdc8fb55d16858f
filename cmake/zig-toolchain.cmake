# The wheel's toolchain (docs/design.md, "The wheel's toolchain"): zig's
# clang, targeting glibc 2.28's symbol stubs (the -target in the wrappers), with its own
# libc++/libc++abi/libunwind linked statically. scripts/wheel.sh writes the
# compiler wrappers (zig-cc, zig-c++, zig-ar, zig-ranlib) into
# GPUSLACK_ZIG_BIN and passes both variables; the same file serves
# abseil's build in the dependency cache.
#   cmake -DCMAKE_TOOLCHAIN_FILE=cmake/zig-toolchain.cmake -DGPUSLACK_ZIG_BIN=DIR
# x86_64 (here: a native build) or aarch64 (a cross build: CMake then
# looks for the CUDA headers under targets/<arch>-linux, the Debian
# multiarch folders under /usr/lib/<arch>-linux-gnu).
if(NOT GPUSLACK_ZIG_ARCH)
  set(GPUSLACK_ZIG_ARCH x86_64)
endif()
if(NOT GPUSLACK_ZIG_ARCH STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR "${GPUSLACK_ZIG_ARCH}")
endif()
# Where Debian keeps the CMake files of fmt and spdlog (header-only use):
# zig's clang reports no multiarch folder of its own.
set(CMAKE_LIBRARY_ARCHITECTURE "${GPUSLACK_ZIG_ARCH}-linux-gnu")
if(NOT GPUSLACK_ZIG_BIN)
  set(GPUSLACK_ZIG_BIN "$ENV{GPUSLACK_ZIG_BIN}")
endif()
if(NOT EXISTS "${GPUSLACK_ZIG_BIN}/zig-c++")
  message(FATAL_ERROR "gpuslack: GPUSLACK_ZIG_BIN (${GPUSLACK_ZIG_BIN}) holds no zig-c++; scripts/wheel.sh writes it")
endif()
# Passed on to try_compile's projects.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GPUSLACK_ZIG_BIN GPUSLACK_ZIG_ARCH)
set(CMAKE_C_COMPILER "${GPUSLACK_ZIG_BIN}/zig-cc")
set(CMAKE_CXX_COMPILER "${GPUSLACK_ZIG_BIN}/zig-c++")
set(CMAKE_AR "${GPUSLACK_ZIG_BIN}/zig-ar" CACHE FILEPATH "")
set(CMAKE_RANLIB "${GPUSLACK_ZIG_BIN}/zig-ranlib" CACHE FILEPATH "")
# The libraries it links are the target's (glibc stubs, its libc++): never
# the host's /usr/lib. Headers of header-only packages are the exception
# (cmake/dependencies.cmake, GPUSLACK_LOG_HEADERS_DIR).
set(GPUSLACK_ZIG ON)
