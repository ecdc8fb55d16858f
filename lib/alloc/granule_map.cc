#include "alloc/granule_map.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include "log/log.h"

namespace gpuslack {
namespace alloc {
namespace {

// What the driver refused, per device ordinal, for the process (every
// reservation of a device shares it); kProbed: the retry was made,
// whatever it found. See Note [What the driver refuses at creation].
constexpr int kDevices = 64;
constexpr unsigned kProbed = 4;
// The fabric handle type refused (GranuleMap::kRefused* are 1 and 2); not
// in refused(): the summary's words are the POSIX type's and the RDMA flag's.
constexpr unsigned kRefusedFabric = 8;
std::atomic<unsigned> g_refused[kDevices];
std::mutex g_probe_mu;

unsigned refused_on(int device) {
  return device >= 0 && device < kDevices ? g_refused[device].load(std::memory_order_acquire) : 0;
}

std::string refused_text(unsigned refused) {
  std::string s;
  if (refused & kRefusedFabric) s = "the fabric handle type";
  if (refused & GranuleMap::kRefusedPosixFd)
    s += std::string(s.empty() ? "" : " and ") + "the POSIX file-descriptor handle type";
  if (refused & GranuleMap::kRefusedRdma) s += std::string(s.empty() ? "" : " and ") + "the GPUDirect RDMA flag";
  return s;
}

}  // namespace

unsigned GranuleMap::refused() const { return refused_on(device_) & (kRefusedPosixFd | kRefusedRdma); }

CUresult GranuleMap::create(CUmemGenericAllocationHandle* handle, uint64_t bytes) {
  auto with = [&](unsigned drop) {
    CUmemAllocationProp p = prop_;
    unsigned types = static_cast<unsigned>(p.requestedHandleTypes);
    if (drop & kRefusedPosixFd) types &= ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (drop & kRefusedFabric) types &= ~static_cast<unsigned>(CU_MEM_HANDLE_TYPE_FABRIC);
    p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(types);
    if (drop & kRefusedRdma) p.allocFlags.gpuDirectRDMACapable = 0;
    return api_->mem_create(handle, bytes, &p, 0);
  };
  unsigned known = refused_on(device_);
  CUresult r = with(known);
  if (r == CUDA_SUCCESS || r == CUDA_ERROR_OUT_OF_MEMORY || (known & kProbed) || device_ < 0 || device_ >= kDevices)
    return r;
  std::lock_guard<std::mutex> lock(g_probe_mu);
  known = refused_on(device_);
  if (known & kProbed) return with(known);  // another reservation probed meanwhile
  // Only what was asked for can be dropped. An answer of out-of-memory
  // accepted the properties: what was dropped was what the driver refused.
  // The fabric type first (Note [Fabric handles where the driver offers them]
  // in block_ipc.cc), then the RDMA flag, then the POSIX type, then pairs.
  const unsigned asked = ((prop_.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ? kRefusedPosixFd : 0) |
                         ((prop_.requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) ? kRefusedFabric : 0) |
                         (prop_.allocFlags.gpuDirectRDMACapable ? kRefusedRdma : 0);
  constexpr unsigned kF = kRefusedFabric, kR = kRefusedRdma, kP = kRefusedPosixFd;
  for (unsigned drop : {kF, kR, kF | kR, kP, kP | kF, kP | kR, kP | kF | kR}) {
    if (drop & ~asked) continue;
    CUresult retried = with(drop);
    if (retried != CUDA_SUCCESS && retried != CUDA_ERROR_OUT_OF_MEMORY) continue;
    g_refused[device_].store(drop | kProbed, std::memory_order_release);
    // The fabric type alone is what every process without an IMEX channel
    // is refused: the ordinary case there, so a debug line; its blocks still
    // go to other processes as descriptors.
    log::logger().log(drop == kF ? spdlog::level::debug : spdlog::level::warn,
                      "device {}: cuMemCreate refused {} (error {}); the VMM allocator creates its memory without it "
                      "from now on{}",
                      device_, refused_text(drop), static_cast<int>(r),
                      (drop & kRefusedPosixFd) && (drop & kRefusedFabric || !(asked & kRefusedFabric))
                          ? " (its blocks cannot be exported to another process)"
                          : "");
    return retried;
  }
  g_refused[device_].store(kProbed, std::memory_order_release);
  return r;
}

CUresult GranuleMap::unmap_call(CUdeviceptr at, uint64_t bytes) {
  ++unmap_calls_;
  return api_->mem_unmap(at, bytes);
}

CUresult GranuleMap::set_access_call(CUdeviceptr at, uint64_t bytes, const CUmemAccessDesc* desc, size_t count) {
  ++set_access_calls_;
  return api_->mem_set_access(at, bytes, desc, count);
}

GranuleMap::GranuleMap(const cuda::DriverApi* api, int device, uint64_t bytes, uint64_t max_chunk_bytes)
    : api_(api), device_(device) {
  if (!api_) {
    why_ = "no CUDA driver";
    return;
  }
  CUdevice dev;
  if (api_->device_get(&dev, device) != CUDA_SUCCESS) {
    why_ = "no device " + std::to_string(device);
    return;
  }
  int vmm = 0, rdma = 0, fabric = 0;
  api_->device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  if (!vmm) {
    why_ = "the driver does not support virtual memory management on this device";
    return;
  }
  api_->device_get_attribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, dev);
  // Fabric handles only where offered: asked for elsewhere, creation fails.
  api_->device_get_attribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, dev);
  prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop_.location.id = device;
  prop_.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | (fabric ? CU_MEM_HANDLE_TYPE_FABRIC : 0));
  prop_.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
  size_t granularity = 0;
  if (api_->mem_get_allocation_granularity(&granularity, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
          CUDA_SUCCESS ||
      granularity == 0) {
    why_ = "cuMemGetAllocationGranularity failed";
    return;
  }
  granularity_ = granularity;
  CUmemAccessDesc owner{};
  owner.location = prop_.location;
  owner.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access_.push_back(owner);
  uint64_t size = (bytes + granularity_ - 1) / granularity_ * granularity_;
  CUdeviceptr base = 0;
  if (CUresult r = api_->mem_address_reserve(&base, size, granularity_, 0, 0); r != CUDA_SUCCESS) {
    why_ = "cuMemAddressReserve of " + std::to_string(size) + " bytes failed with error " +
           std::to_string(static_cast<int>(r));
    return;
  }
  base_ = base;
  size_ = size;
  handles_.assign(size_ / granularity_, 0);
  chunk_first_.assign(handles_.size(), 0);
  chunk_len_.assign(handles_.size(), 0);
  max_chunk_ = max_chunk_bytes / granularity_ > 1 ? max_chunk_bytes / granularity_ : 1;
}

GranuleMap::~GranuleMap() {
  if (!base_) return;
  release_kept();
  unmap_whole_chunks(0, handles_.size(), false);
  api_->mem_address_free(base_, size_);
}

CUresult GranuleMap::map_chunk(size_t first, size_t count, CUmemGenericAllocationHandle handle) {
  // See Note [Access once per mapped range]: no cuMemSetAccess here.
  uint64_t bytes = count * granularity_;
  if (!handle) {
    release_kept();  // none fits: their memory is the device's again first
    if (CUresult r = create(&handle, bytes); r != CUDA_SUCCESS) return r;
  } else {
    ++moved_;
  }
  CUdeviceptr at = base_ + first * granularity_;
  if (CUresult r = api_->mem_map(at, bytes, 0, handle, 0); r != CUDA_SUCCESS) {
    api_->mem_release(handle);
    return r;
  }
  for (size_t i = first; i < first + count; ++i) {
    handles_[i] = handle;
    chunk_first_[i] = static_cast<uint32_t>(first);
  }
  chunk_len_[first] = static_cast<uint32_t>(count);
  mapped_ += count;
  map_count_ += count;
  ++chunk_maps_;
  return CUDA_SUCCESS;
}

CUmemGenericAllocationHandle GranuleMap::take_kept(size_t most, size_t* count) {
  // See Note [Moving a page instead of making one]: the largest that fits.
  size_t best = kept_.size();
  for (size_t k = 0; k < kept_.size(); ++k)
    if (kept_[k].second <= most && (best == kept_.size() || kept_[k].second > kept_[best].second)) best = k;
  if (best == kept_.size()) return 0;
  CUmemGenericAllocationHandle handle = kept_[best].first;
  *count = kept_[best].second;
  kept_[best] = kept_.back();
  kept_.pop_back();
  kept_granules_ -= *count;
  return handle;
}

bool GranuleMap::chunks(uint64_t offset, uint64_t bytes, std::vector<Chunk>* out) const {
  if (!base_ || bytes == 0 || offset + bytes > size_) return false;
  std::vector<Chunk> found;
  size_t last = (offset + bytes - 1) / granularity_;
  for (size_t i = offset / granularity_; i <= last;) {
    if (!handles_[i]) return false;
    size_t first = chunk_first_[i];
    found.push_back({handles_[i], first * granularity_, chunk_len_[first] * granularity_});
    exported_.insert(handles_[i]);  // Note [Moving a page instead of making one]: never kept
    i = first + chunk_len_[first];
  }
  out->insert(out->end(), found.begin(), found.end());
  return true;
}

void GranuleMap::release_kept() {
  for (const auto& [handle, count] : kept_) api_->mem_release(handle);
  kept_.clear();
  kept_granules_ = 0;
}

void GranuleMap::unmap_chunk(size_t first, bool keep) {
  unmap_call(base_ + first * granularity_, chunk_len_[first] * granularity_);
  forget_chunk(first, keep);
}

size_t GranuleMap::forget_chunk(size_t first, bool keep) {
  size_t count = chunk_len_[first];
  if (keep && !exported_.count(handles_[first])) {
    kept_.emplace_back(handles_[first], count);
    kept_granules_ += count;
  } else {
    exported_.erase(handles_[first]);
    api_->mem_release(handles_[first]);
  }
  for (size_t i = first; i < first + count; ++i) handles_[i] = 0;
  chunk_len_[first] = 0;
  mapped_ -= count;
  unmap_count_ += count;
  ++chunk_unmaps_;
  return count;
}

CUresult GranuleMap::map(uint64_t offset, uint64_t bytes, bool in_pages, uint64_t long_run_bytes) {
  const size_t max_chunk = in_pages ? max_chunk_ : 1;
  if (!base_ || bytes == 0 || offset + bytes > size_) return CUDA_ERROR_INVALID_VALUE;
  size_t first = offset / granularity_, last = (offset + bytes - 1) / granularity_;
  // Past the cap whatever happens: fail before any driver call.
  if (limit_ && (mapped_ + unmapped_bytes(offset, bytes) / granularity_) * granularity_ > limit_)
    return CUDA_ERROR_OUT_OF_MEMORY;
  std::vector<size_t> done;  // first granules of the chunks this call mapped
  auto undo = [&](CUresult r) {
    for (size_t c : done) unmap_chunk(c);  // all or nothing
    return r;
  };
  for (size_t i = first; i <= last;) {
    if (handles_[i]) {
      ++i;
      continue;
    }
    // A run of unmapped granules: kept handles first, the largest that fits
    // (Note [Moving a page instead of making one]); else one handle over
    // the run when Note [One handle for a long run] allows, else pages.
    size_t unmapped_run = 1;
    while (i + unmapped_run <= last && !handles_[i + unmapped_run]) ++unmapped_run;
    size_t run = 1;
    if (in_pages && max_chunk_ > 1 && unmapped_run >= kLongRunPages * max_chunk_ &&
        unmapped_run * granularity_ <= long_run_bytes)
      run = unmapped_run;
    else  // a chunk never crosses a page boundary (Note [Pages mapped whole])
      while (i + run <= last && !handles_[i + run] && run < max_chunk && (i + run) % max_chunk_ != 0) ++run;
    size_t count = 0;
    CUmemGenericAllocationHandle kept = take_kept(run, &count);
    if (!kept) {
      count = run;
      // map_chunk() releases the kept handles before it creates one.
      if (limit_ && (mapped_ + run) * granularity_ > limit_) return undo(CUDA_ERROR_OUT_OF_MEMORY);
    }
    CUresult r = map_chunk(i, count, kept);
    if (r != CUDA_SUCCESS && !kept && count > 1) {
      // The device may hold the memory but not as one handle this size:
      // granule by granule, as the smallest chunks.
      size_t mapped_here = 0;
      for (; mapped_here < count; ++mapped_here) {
        if ((r = map_chunk(i + mapped_here, 1, 0)) != CUDA_SUCCESS) break;
        done.push_back(i + mapped_here);
      }
      if (r != CUDA_SUCCESS) return undo(r);
      i += count;
      continue;
    }
    if (r != CUDA_SUCCESS) return undo(r);
    done.push_back(i);
    i += count;
  }
  if (done.empty()) return CUDA_SUCCESS;
  // See Note [Access once per mapped range]: every granule from the first chunk
  // mapped here to the end of the last is mapped now (by this call or
  // before it), so one call grants the owner and every peer all of them.
  size_t from = done.front(), to = done.back() + chunk_len_[done.back()];  // done is in address order
  if (CUresult r = set_access_call(base_ + from * granularity_, (to - from) * granularity_, access_.data(), access_.size());
      r != CUDA_SUCCESS)
    return undo(r);
  return CUDA_SUCCESS;
}

size_t GranuleMap::unmap(uint64_t offset, uint64_t bytes, bool keep, uint64_t most) {
  if (!base_ || bytes == 0 || offset >= size_) return 0;
  uint64_t end = offset + bytes > size_ ? size_ : offset + bytes;
  size_t first = (offset + granularity_ - 1) / granularity_;  // wholly inside only
  const size_t most_granules = most == ~0ull ? ~size_t{0} : (most + granularity_ - 1) / granularity_;
  return unmap_whole_chunks(first, end / granularity_, keep, most_granules);
}

uint64_t GranuleMap::whole_chunk_bytes(uint64_t offset, uint64_t bytes, uint64_t enough) const {
  if (!base_ || bytes == 0 || offset >= size_) return 0;
  uint64_t end = offset + bytes > size_ ? size_ : offset + bytes;
  size_t first = (offset + granularity_ - 1) / granularity_, stop = end / granularity_;  // as unmap()
  uint64_t whole = 0;
  for (size_t i = first; i < stop && whole < enough;) {
    if (!handles_[i]) {
      ++i;
      continue;
    }
    size_t c = chunk_first_[i], len = chunk_len_[c];
    if (c >= first && c + len <= stop) whole += len * granularity_;
    i = c + len;
  }
  return whole;
}

size_t GranuleMap::unmap_whole_chunks(size_t first, size_t stop, bool keep, size_t most) {
  // See Note [One unmap per run]: chunks collected while they follow one
  // another, then one cuMemUnmap over them and each one's handle after it.
  std::vector<size_t> run;  // first granules of adjacent chunks
  size_t released = 0, taken = 0;
  auto flush = [&] {
    if (run.empty()) return;
    size_t last = run.back();
    unmap_call(base_ + run.front() * granularity_, (last + chunk_len_[last] - run.front()) * granularity_);
    for (size_t c : run) released += forget_chunk(c, keep);
    run.clear();
  };
  for (size_t i = first; i < stop;) {
    if (!handles_[i]) {
      flush();
      ++i;
      continue;
    }
    size_t c = chunk_first_[i], len = chunk_len_[c];
    if (taken >= most) break;
    if (c >= first && c + len <= stop) {  // the whole chunk is inside
      taken += len;
      if (!run.empty() && run.back() + chunk_len_[run.back()] != c) flush();
      run.push_back(c);
    } else {
      flush();
    }
    i = c + len;
  }
  flush();
  return released;
}

CUresult GranuleMap::grant(int device) {
  if (!base_) return CUDA_ERROR_INVALID_VALUE;
  for (const CUmemAccessDesc& d : access_)
    if (d.location.id == device) return CUDA_SUCCESS;
  CUmemAccessDesc peer{};
  peer.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  peer.location.id = device;
  peer.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  access_.push_back(peer);  // later maps grant it whatever happens below
  // One cuMemSetAccess per run of mapped granules: it may span mappings.
  for (size_t i = 0; i < handles_.size();) {
    if (!handles_[i]) {
      ++i;
      continue;
    }
    size_t run = i;
    while (run < handles_.size() && handles_[run]) ++run;
    if (CUresult r = set_access_call(base_ + i * granularity_, (run - i) * granularity_, &peer, 1);
        r != CUDA_SUCCESS)
      return r;
    i = run;
  }
  return CUDA_SUCCESS;
}

bool GranuleMap::mapped_range(uint64_t offset, uint64_t bytes) const {
  if (!base_ || bytes == 0 || offset + bytes > size_) return false;
  for (size_t i = offset / granularity_, last = (offset + bytes - 1) / granularity_; i <= last; ++i)
    if (!handles_[i]) return false;
  return true;
}

uint64_t GranuleMap::unmapped_bytes(uint64_t offset, uint64_t bytes, uint64_t enough) const {
  if (!base_ || bytes == 0 || offset + bytes > size_ || offset + bytes < offset) return ~0ull;
  uint64_t unmapped = 0;
  for (size_t i = offset / granularity_, last = (offset + bytes - 1) / granularity_; i <= last && unmapped < enough; ++i)
    if (!handles_[i]) unmapped += granularity_;
  return unmapped;
}

void GranuleMap::page_span(uint64_t offset, uint64_t bytes, uint64_t* span_offset, uint64_t* span_bytes) const {
  *span_offset = offset;
  *span_bytes = bytes;
  if (!base_ || bytes == 0 || offset + bytes > size_ || max_chunk_ <= 1) return;
  size_t first = offset / granularity_, last = (offset + bytes - 1) / granularity_;
  size_t page_first = first / max_chunk_ * max_chunk_;
  size_t page_last = std::min(handles_.size() - 1, (last / max_chunk_ + 1) * max_chunk_ - 1);
  // Out to the pages' edges, over unmapped granules only.
  while (first > page_first && !handles_[first - 1]) --first;
  while (last < page_last && !handles_[last + 1]) ++last;
  *span_offset = first * granularity_;
  *span_bytes = (last - first + 1) * granularity_;
}

bool GranuleMap::mapped(uint64_t offset) const {
  return base_ && offset < size_ && handles_[offset / granularity_] != 0;
}

}  // namespace alloc
}  // namespace gpuslack
