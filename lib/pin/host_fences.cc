#include "pin/host_fences.h"

#include <cuda.h>

#include "cuda/driver_api.h"
#include "cuda/runtime_api.h"
#include "base/clock.h"

namespace gpuslack {
namespace pin {
namespace {

// Makes `device` current for the scope (events are recorded on, and created
// for, the current device), then restores the caller's.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    if (cuda::get_device(&previous_) != cudaSuccess) {
      cuda::get_last_error();
      previous_ = -1;
    }
    if (previous_ != device && cuda::set_device(device) != cudaSuccess) cuda::get_last_error();
  }
  ~OnDevice() {
    int now = -1;
    if (previous_ >= 0 && cuda::get_device(&now) == cudaSuccess && now != previous_) cuda::set_device(previous_);
  }

 private:
  int previous_ = -1;
};

}  // namespace

void HostFences::saw_device(int device) {
  if (device >= 0 && device < kMaxDevices) seen_ |= 1ull << device;
}

std::vector<int> HostFences::devices_in_use() {
  uint64_t mask = seen_;
  int current = -1;
  if (cuda::get_device(&current) == cudaSuccess) {
    saw_device(current);
    mask = seen_;
  } else {
    cuda::get_last_error();
  }
  if (const cuda::DriverApi* api = cuda::driver()) {
    int count = 0;
    if (api->device_get_count(&count) == CUDA_SUCCESS) {
      for (int d = 0; d < count && d < kMaxDevices; ++d) {
        CUdevice dev;
        unsigned int flags = 0;
        int active = 0;
        if (api->device_get(&dev, d) == CUDA_SUCCESS && api->primary_ctx_get_state(dev, &flags, &active) == CUDA_SUCCESS &&
            active)
          mask |= 1ull << d;
      }
    }
  }
  std::vector<int> devices;
  for (int d = 0; d < kMaxDevices; ++d)
    if (mask & (1ull << d)) devices.push_back(d);
  return devices;
}

sync::FreeEpochs& HostFences::epochs_of(int device) {
  if (!epochs_[device]) epochs_[device] = std::make_unique<sync::FreeEpochs>(device);
  return *epochs_[device];
}

void HostFences::close() {
  // Batches a device could not fence before (a record failed) go first.
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!epochs_[d] || epochs_[d]->open_blocks() == 0) continue;
    OnDevice on(d);
    epochs_[d]->close();
  }
  if (open_.empty()) return;
  std::vector<int> devices = devices_in_use();
  if (devices.empty()) return;  // no runtime to fence with: the blocks wait
  const std::vector<uint64_t> blocks(open_.begin(), open_.end());
  for (int d : devices) {
    OnDevice on(d);
    // On failure the blocks join that device's open epoch (above, next time).
    epochs_of(d).close_on(blocks, {}, true);
  }
  for (uintptr_t b : open_) outstanding_[b] += static_cast<int>(devices.size());
  open_.clear();
  ++epochs_closed_;
}

void HostFences::settle(const std::vector<uint64_t>& done, std::vector<uintptr_t>* ready) {
  for (uint64_t b : done) {
    auto it = outstanding_.find(static_cast<uintptr_t>(b));
    if (it == outstanding_.end()) continue;  // cannot happen
    if (--it->second > 0) continue;
    ready->push_back(it->first);
    outstanding_.erase(it);
  }
}

void HostFences::poll(std::vector<uintptr_t>* ready) {
  if (outstanding_.empty()) return;
  std::vector<uint64_t> done;
  for (auto& epochs : epochs_) {
    if (!epochs) continue;
    done.clear();
    epochs->poll(&done);
    settle(done, ready);
  }
}

double HostFences::wait_all(std::vector<uintptr_t>* ready) {
  double start = clock::monotonic_seconds();
  close();
  std::vector<uint64_t> done;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!epochs_[d]) continue;
    OnDevice on(d);
    done.clear();
    epochs_[d]->wait_all(&done);
    settle(done, ready);
  }
  return clock::monotonic_seconds() - start;
}

}  // namespace pin
}  // namespace gpuslack
