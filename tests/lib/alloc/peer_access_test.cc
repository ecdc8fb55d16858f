// PeerAccess on the simulated driver with two devices: a granted peer may
// read and write every reservation's memory, mapped before or after the
// grant; each peer is remembered once, in the order first granted; a
// refused grant says so, each reservation having been asked.
#include "alloc/peer_access.h"

#include <cuda.h>
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "alloc/reservation.h"
#include "gpusim.h"
#include "sim_driver.h"

namespace gpuslack {
namespace alloc {
namespace {

using test_support::api;
using test_support::kMiB;

// The rights `device` has at `p` (0 when the driver says none).
unsigned long long access_of(int device, uintptr_t p) {
  CUmemLocation where{};
  where.type = CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = device;
  unsigned long long flags = 0;
  if (cuMemGetAccess(&flags, &where, static_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return 0;
  return flags;
}

uintptr_t mapped_block(Reservation& r, uint64_t bytes) {
  CUresult e = CUDA_SUCCESS;
  std::optional<uintptr_t> a = r.allocate_mapping(bytes, Reservation::kNoBudget, &e);
  EXPECT_TRUE(a) << e;
  return a.value_or(0);
}

TEST(PeerAccess, APeerMayUseEveryReservationMappedBeforeOrAfterTheGrant) {
  Reservation first(api(), 0, 64 * kMiB, 2 * kMiB), second(api(), 0, 64 * kMiB, 2 * kMiB);
  ASSERT_TRUE(first.ok()) << first.why();
  ASSERT_TRUE(second.ok()) << second.why();
  uintptr_t a = mapped_block(first, 4 * kMiB), b = mapped_block(second, 4 * kMiB);
  EXPECT_EQ(0u, access_of(1, a));  // the owner's alone so far
  PeerAccess peers(0);
  EXPECT_TRUE(peers.grant(1, {&first, &second}));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, a));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, b));
  uintptr_t later = mapped_block(first, 8 * kMiB);  // mapped after the grant
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, later));
  // A reservation made afterwards gets every peer granted so far.
  Reservation third(api(), 0, 64 * kMiB, 2 * kMiB);
  ASSERT_TRUE(third.ok()) << third.why();
  for (int peer : peers) EXPECT_EQ(CUDA_SUCCESS, third.grant(peer));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, mapped_block(third, 2 * kMiB)));
}

TEST(PeerAccess, EachPeerIsRememberedOnceInTheOrderFirstGranted) {
  PeerAccess peers(1);
  EXPECT_EQ(0u, peers.size());
  EXPECT_TRUE(peers.grant(0, {}));  // no reservation yet: nothing to refuse
  EXPECT_TRUE(peers.grant(1, {}));
  EXPECT_TRUE(peers.grant(0, {}));
  EXPECT_EQ((std::vector<int>{0, 1}), std::vector<int>(peers.begin(), peers.end()));
}

TEST(PeerAccess, ARefusedGrantSaysSoAfterAskingEveryReservation) {
  Reservation mapped(api(), 0, 64 * kMiB, 2 * kMiB), other(api(), 0, 64 * kMiB, 2 * kMiB);
  ASSERT_TRUE(mapped.ok()) << mapped.why();
  ASSERT_TRUE(other.ok()) << other.why();
  uintptr_t a = mapped_block(mapped, 2 * kMiB), b = mapped_block(other, 2 * kMiB);
  PeerAccess peers(0);
  // Device 7 does not exist: the driver refuses its access to mapped
  // memory, in each reservation (one cuMemSetAccess each).
  const long set_access = gpusim_calls("cuMemSetAccess");
  EXPECT_FALSE(peers.grant(7, {&mapped, &other}));
  EXPECT_EQ(set_access + 2, gpusim_calls("cuMemSetAccess"));
  EXPECT_EQ((std::vector<int>{7}), std::vector<int>(peers.begin(), peers.end()));  // remembered all the same
  EXPECT_TRUE(peers.grant(1, {&mapped, &other}));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, a));
  EXPECT_EQ(CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access_of(1, b));
  EXPECT_EQ((std::vector<int>{7, 1}), std::vector<int>(peers.begin(), peers.end()));
}

}  // namespace
}  // namespace alloc
}  // namespace gpuslack
