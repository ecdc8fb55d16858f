#include "alloc/peer_access.h"

#include <algorithm>

#include "alloc/reservation.h"
#include "log/log.h"

namespace gpuslack {
namespace alloc {

bool PeerAccess::grant(int peer, const std::vector<Reservation*>& reservations) {
  if (std::find(peers_.begin(), peers_.end(), peer) == peers_.end()) peers_.push_back(peer);
  CUresult r = CUDA_SUCCESS;
  for (Reservation* res : reservations) {
    CUresult g = res->grant(peer);
    if (r == CUDA_SUCCESS) r = g;
  }
  if (r != CUDA_SUCCESS)
    log::warn("device {}: granting device {} access to gpuslack's memory failed (error {})", device_, peer,
              static_cast<int>(r));
  return r == CUDA_SUCCESS;
}

}  // namespace alloc
}  // namespace gpuslack
