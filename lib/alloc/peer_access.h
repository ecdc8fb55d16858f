// PeerAccess: the devices granted access to one device's allocator memory
// (cudaDeviceEnablePeerAccess, cudaIpcOpenMemHandle on another device:
// process_allocators.cc), so that every reservation the allocator has, and
// every one it makes later, maps its memory for them too.
//
// Contract. grant(peer, reservations) remembers `peer` (once, in the order
// first granted, whatever the grants return: a reservation keeps granting a
// peer it was told of, GranuleMap::grant) and grants it read-write access
// to all of each reservation's memory, mapped now or later. It returns
// whether every grant succeeded; on a failure it logs one line naming both
// devices and the driver's error, and goes on with the other reservations.
// Iterating gives the peers granted so far: the allocator grants each to a
// reservation it makes later.
//
// No locking: the allocator serializes every call under its mutex. CUDA
// calls: the reservations' cuMemSetAccess, from grant() only.
#pragma once

#include <cstddef>
#include <vector>

namespace gpuslack {
namespace alloc {

class Reservation;

class PeerAccess {
 public:
  // Access to the memory of `device`.
  explicit PeerAccess(int device) : device_(device) {}

  bool grant(int peer, const std::vector<Reservation*>& reservations);

  std::vector<int>::const_iterator begin() const { return peers_.begin(); }
  std::vector<int>::const_iterator end() const { return peers_.end(); }
  size_t size() const { return peers_.size(); }

 private:
  int device_;
  std::vector<int> peers_;  // granted access to every reservation
};

}  // namespace alloc
}  // namespace gpuslack
