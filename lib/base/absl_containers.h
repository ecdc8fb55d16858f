// The abseil containers lib/alloc uses, without <iostream>.
//
// abseil's hashing includes absl/strings/cord.h, which includes <iostream>;
// with GCC 12's libstdc++ every translation unit that includes <iostream>
// gets a static std::ios_base::Init object, whose constructor would run at
// load in every process gpuslack is preloaded into (shells, compilers),
// which the seal forbids (tests/interpose/check_seal.sh; Note [Lazy and
// silent] in session.h). Nothing in these containers uses the standard
// streams: <istream> and <ostream> declare what their headers name, and,
// in the library's own objects (GPUSLACK_NO_IOSTREAM, set by the CMake
// targets that go into libgpuslack.so), <iostream>'s guard is set so that
// its static object is never defined. Such an object that needs std::cout
// after this header fails to compile rather than silently getting a
// load-time constructor. Tests and benchmarks include <iostream> freely.
#pragma once

#include <istream>
#include <ostream>

#if defined(GPUSLACK_NO_IOSTREAM) && !defined(_GLIBCXX_IOSTREAM)
#define _GLIBCXX_IOSTREAM 1
#endif

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
