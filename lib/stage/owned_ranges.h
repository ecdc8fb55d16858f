// Owned ranges: what a staged copy must know of device memory that
// gpuslack's own allocator hands out, and who tells it.
//
// The runtime sees a reservation of gpuslack's VMM allocator as one large
// mapping, so it cannot check a copy against the block the application
// allocated in it (Note [The whole range first], staged_copy.h): the stager
// asks owned_range() first. lib/stage may not include lib/alloc (features
// do not include each other), so it declares the question here and takes
// the answer by injection: lib/session, which may include both, sets
// alloc::vmm_range as the check when a session starts
// (set_owned_range_check), before any hooked call can reach a stager.
//
// With no check set (a stager used without a session, as its unit tests
// do), no memory is gpuslack's own: every range goes to the driver's check
// (cuda::within_allocation), which is also what alloc::vmm_range answers
// while no allocator was made.
//
// Thread safety: any thread. The check is one atomic pointer; setting it
// again (a forked child's session) replaces it with the same function.
#pragma once

#include <atomic>
#include <cstddef>

namespace gpuslack {
namespace stage {

// Where [p, p + bytes) lies: not in memory gpuslack's allocator owns (the
// runtime's, or the host's: the driver checks it), inside one live block
// within the bytes it was allocated with, or anywhere else in that memory
// (a freed block, free space, past the bytes asked for: refused).
enum class OwnedRange { kNotOwned, kInside, kOutside };
using OwnedRangeCheck = OwnedRange (*)(const void* p, size_t bytes);

namespace detail {
inline std::atomic<OwnedRangeCheck> g_owned_range_check{nullptr};
}  // namespace detail

// Installs the check (nullptr: none).
inline void set_owned_range_check(OwnedRangeCheck check) {
  detail::g_owned_range_check.store(check, std::memory_order_release);
}

// The installed check's answer; kNotOwned with none installed.
inline OwnedRange owned_range(const void* p, size_t bytes) {
  OwnedRangeCheck check = detail::g_owned_range_check.load(std::memory_order_acquire);
  return check ? check(p, bytes) : OwnedRange::kNotOwned;
}

}  // namespace stage
}  // namespace gpuslack
