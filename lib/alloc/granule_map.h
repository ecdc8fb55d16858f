// GranuleMap: one device's reserved virtual address range, and the physical
// granules mapped under it.
//
// The VMM allocator hands out addresses inside one large reservation
// (cuMemAddressReserve) and backs them with physical memory only where
// blocks are in use or cached, in granules (the driver's allocation
// granularity: 2 MiB on current GPUs). A run of unmapped granules that one
// map() needs is backed by one physical handle (a chunk) of up to
// `max_chunk_bytes`: cuMemCreate (POSIX-fd exportable, GPUDirect-RDMA
// capable where the device supports it, so IPC and RDMA can follow),
// cuMemMap, cuMemSetAccess (read-write for the owning device and granted
// peers). Fewer, larger handles cost fewer driver calls (bench/README.md,
// "Physical chunks"); the price is that a chunk is released only whole,
// once every granule of it is free. With chunks of one granule, freed
// granules are released one by one. Either way physical memory never
// fragments: any free chunk's memory serves any block once released.
//
// Note [What the driver refuses at creation]: the chunks are asked for with
// the POSIX-fd handle type and, where the device says it supports them, the
// fabric handle type (See Note [Fabric handles where the driver offers
// them] in block_ipc.cc; tried without first) and the GPUDirect RDMA flag. A driver may refuse either even so (some
// containers, vGPU: cuMemCreate's documented CUDA_ERROR_NOT_SUPPORTED /
// CUDA_ERROR_NOT_PERMITTED), and then every miss would fail and fall into
// the out-of-memory path. So the first cuMemCreate that fails with anything
// but CUDA_ERROR_OUT_OF_MEMORY is retried, once per device and process,
// without the RDMA flag, then without the handle type, then without both;
// the first that succeeds is what every later chunk of the device is created
// with (remembered process-wide: the refusal is the driver's), with one log
// line, and refused() tells the summary. If none succeeds, nothing is
// dropped and the original error stands (not probed again).
//
// Note [Calls that may synchronize]: cuMemUnmap and cuMemSetAccess are
// documented as synchronous for most uses (cuda.h's \note_sync: "this
// function exhibits synchronous behavior for most use cases"), so each may
// wait for the device. They are counted (unmap_calls(), set_access_calls())
// and shown in the summary's allocator section.
//
// Note [Pages mapped whole]: the range is cut into pages of
// `max_chunk_bytes` (aligned to the page size from the range's start), and
// a chunk never crosses a page's edge (but see Note [One handle for a long
// run]). The allocator maps a miss's block over page_span(): the unmapped
// granules of every page the block touches,
// so a page is one handle (two driver calls) however many blocks later
// fill it, as PyTorch's expandable segments map 20 MiB pages in their
// large pool (2 MiB in the small one). What a page holds beyond the block
// is cached free memory, released like any (Note [Releasing memory] in
// device_allocator.h); a page whose granules were partly mapped before
// gets chunks for the rest only. A handle is released only whole, so the
// allocator maps in pages only for large blocks and only while the device
// is less than a quarter full (MappingPolicy::kPagesUpTo); otherwise
// map(..., in_pages = false) makes each granule its own handle.
//
// Note [Moving a page instead of making one]: when the allocator releases
// cached pages only to map as many elsewhere (Note [Releasing memory] in
// device_allocator.h), unmap(..., keep) unmaps them but keeps their
// handles, and the map() that follows maps kept handles where it would
// have created one: cuMemUnmap + cuMemMap instead of cuMemUnmap +
// cuMemRelease + cuMemCreate + cuMemMap, and no zeroing of new memory. A
// run of unmapped granules takes the largest kept handle that fits in it,
// then the next, so that kept handles smaller than the run (a page's last
// granules, mapped alone before) fill it instead of being released while
// one handle is created for the run. The caller releases what no map took
// (release_kept()) before it returns, so a kept handle never outlives one
// allocation; a run that no kept handle fits releases them all before
// creating, so they never make it fail. A handle ever exported for IPC (chunks()) is never
// kept: an importer may still map it after the exporter's free, as CUDA
// documents, and must not see another block's bytes.
//
// Note [One handle for a long run]: a run of unmapped granules that one
// map() backs, of at least kLongRunPages pages (40 MiB with 20 MiB pages;
// See Note [Two pages make a long run]; never where a page is one granule,
// map_chunk_mb:0 or 2, whose promise is one handle per granule), is one
// handle over the whole run
// instead of a handle per page, when the caller allows a handle that large
// (map()'s `long_run_bytes`: the allocator allows
// 1/MappingPolicy::kLongRunShare of the most it ever had allocated): two
// driver calls instead of two per page. The price is the page's, larger:
// the handle is released only whole, so once a smaller block reuses part
// of the run's space the rest stays mapped as cache. The share bounds
// that: a share of 1/4 grew minimalloc's peak reserved by up to 17%, and a
// training step's large blocks, mapped once and reused at the same sizes,
// cost a tenth of the calls (bench/README.md, "One handle for a long
// run"). Only runs of whole pages (in_pages), so never a small block's
// granules nor a nearly full device's.
//
// Note [Two pages make a long run]: kLongRunPages was 8 when a run that
// no kept handle fitted released them all and became one handle (a later
// smaller block then pinned it); since kept handles fill a run first (Note
// [Moving a page instead of making one]) and a miss releases only what it
// needs (Reservation's Note [Releasing what a miss needs]), the calls are
// in the moves, and a move costs one cuMemMap per handle moved: a run of N
// pages as one handle costs 2 calls to make instead of 2N, and one
// cuMemMap to move instead of N, wherever a run of its size takes it. So
// any run of two pages or more is one handle, within the same share. On
// the 19 replayed traces (bench/README.md, "Two pages make a long run")
// driver calls fell from 6,313 to 5,018 against expandable segments'
// 5,347, cnn-train-bf16, opt-finetune and minimalloc A, B and D now at or
// under theirs, minimalloc's peak reserved summed 0.791x theirs (0.744x
// before; no trace's peak over theirs that was not before). A larger
// share costs more memory than the goal's 0.8x allows (runs of 2 pages
// with a share of 1/4: 0.817x; of 3 pages with 1/4: 0.801x), and runs of
// 3 pages with 1/6 more calls (5,447, 9 traces met). Only while the
// mapped total, with the miss, stays within 1/MappingPolicy::kLongRunsUpTo
// (an eighth) of the device's memory: with runs of two pages up to a
// quarter (where pages stop), the smallest device on which
// gpt-train-overlap-bf16 runs grew from 1.78 to 1.82 GiB, past expandable
// segments' 1.78 (handles made early pinned cached pages later); with the
// eighth every trace's smallest device is as before (bench/README.md,
// "Two pages make a long run"), and on a device as large as the replays'
// (80 GB) nothing changes.
//
// Note [One unmap per run]: unmap() makes one cuMemUnmap over each run of
// adjacent chunks it unmaps, not one per chunk: the driver unmaps a range
// made of one or more whole mappings (NVIDIA's vectorAddMMAP sample,
// simpleFreeMultiDeviceMmap, maps one chunk per device and unmaps them all
// with one cuMemUnmap), so a release or a move of N adjacent pages costs
// one unmap, not N. The handles are released (or kept) one by one after it.
// unmap_calls() counts the calls, chunks_unmapped_total() the chunks.
//
// Note [Access once per mapped range]: map() creates and maps each chunk
// of a run, then makes one cuMemSetAccess over the whole span from its
// first new chunk to the end of its last (granules between them mapped
// before stay as they were: access is per mapped granule, and granting the
// same devices again changes nothing), as PyTorch's expandable segments
// set access once per mapped range: a miss that maps N chunks costs 2N + 1
// calls, not 3N. A failed cuMemSetAccess undoes every chunk of the call.
//
// Failure is never partial: when a step fails, the steps before it are
// undone, nothing new stays mapped and nothing leaks; the caller gets the
// driver's error and decides (trim and retry, or fall back).
//
// Not thread-safe: the allocator serializes calls per device. Driver calls
// go through cuda::DriverApi (lib/cuda), never straight to the driver.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "alloc/device_stats.h"
#include "cuda/driver_api.h"

namespace gpuslack {
namespace alloc {

class GranuleMap {
 public:
  // Reserves `bytes` (rounded up to the granularity) on `device`; backs
  // runs of granules with chunks of at most `max_chunk_bytes` (rounded down
  // to granules; at least one). ok() is false if reserving fails; why()
  // says why.
  GranuleMap(const cuda::DriverApi* api, int device, uint64_t bytes, uint64_t max_chunk_bytes = 0);
  ~GranuleMap();  // unmaps and releases everything, frees the reservation
  GranuleMap(const GranuleMap&) = delete;
  GranuleMap& operator=(const GranuleMap&) = delete;

  bool ok() const { return base_ != 0; }
  const std::string& why() const { return why_; }
  CUdeviceptr base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t granularity() const { return granularity_; }
  // A page's bytes (Note [Pages mapped whole]): `max_chunk_bytes` rounded
  // down to granules, at least one.
  uint64_t page_bytes() const { return max_chunk_ * granularity_; }
  // The fewest pages a run spans to be one handle (See Note [One handle
  // for a long run], Note [Two pages make a long run]).
  static constexpr size_t kLongRunPages = 2;

  // Maps every granule that overlaps [offset, offset + bytes) and is not
  // mapped yet, each run of them in chunks. CUDA_SUCCESS, or the error of
  // the call that failed (then the chunks this call mapped are unmapped
  // again). A chunk the device cannot create whole is retried granule by
  // granule.
  // With `in_pages` false, every chunk is one granule (Note [Pages mapped
  // whole]: what a nearly full device maps). With `in_pages`, a run of
  // unmapped granules of at least kLongRunPages pages and at most
  // `long_run_bytes` is one handle (Note [One handle for a long run]; 0:
  // never).
  CUresult map(uint64_t offset, uint64_t bytes, bool in_pages = true, uint64_t long_run_bytes = 0);
  // See Note [Pages mapped whole]: [offset, offset + bytes) grown, over
  // granules not mapped, out to the edges of the pages it touches: what to
  // map() for a block there so that its pages are mapped whole. The range
  // itself when chunks are one granule.
  void page_span(uint64_t offset, uint64_t bytes, uint64_t* span_offset, uint64_t* span_bytes) const;
  // Unmaps and releases every chunk lying wholly inside [offset, offset +
  // bytes). Returns how many granules were released. With `keep`, the
  // chunks' handles are kept for the next map() instead of released
  // (Note [Moving a page instead of making one]). One cuMemUnmap per run of
  // adjacent chunks (Note [One unmap per run]). Chunks are taken from the
  // range's start until they hold at least `most` bytes.
  size_t unmap(uint64_t offset, uint64_t bytes, bool keep = false, uint64_t most = ~0ull);
  // Releases the handles unmap() kept that no map() took.
  void release_kept();
  // The bytes unmap(offset, bytes) would release: those of the chunks lying
  // wholly inside. Counting stops once it reaches `enough`.
  uint64_t whole_chunk_bytes(uint64_t offset, uint64_t bytes, uint64_t enough = ~0ull) const;

  // Grants `device` read-write access to every granule mapped now and to
  // every one mapped later (peer access: cudaDeviceEnablePeerAccess from
  // `device`). CUDA_SUCCESS, or the error of the cuMemSetAccess that failed
  // (granules granted before it keep the access; later maps grant it).
  CUresult grant(int device);
  // Caps the physical memory mapped at `bytes` (0: no cap): a map() beyond
  // it fails with CUDA_ERROR_OUT_OF_MEMORY, as the device would when full.
  void set_limit(uint64_t bytes) { limit_ = bytes; }

  bool mapped(uint64_t offset) const;
  // Whether every granule overlapping [offset, offset + bytes) is mapped.
  bool mapped_range(uint64_t offset, uint64_t bytes) const;
  // The bytes of the granules overlapping [offset, offset + bytes) that are
  // not mapped: what map() would have to back. Counting stops once it
  // reaches `enough` (the result is then at least `enough`). A range this
  // map cannot back at all costs ~0 (never the cheapest).
  uint64_t unmapped_bytes(uint64_t offset, uint64_t bytes, uint64_t enough = ~0ull) const;
  // A physical handle backing part of the range, for IPC (alloc/block_ipc.h).
  struct Chunk {
    CUmemGenericAllocationHandle handle;
    uint64_t offset;  // of its first granule, from base()
    uint64_t bytes;
  };
  // The chunks backing the granules that overlap [offset, offset + bytes),
  // in address order, each whole; false (and `out` unchanged) when one of
  // those granules is not mapped.
  bool chunks(uint64_t offset, uint64_t bytes, std::vector<Chunk>* out) const;
  uint64_t handles_moved_total() const { return moved_; }  // maps of a kept handle
  size_t mapped_granules() const { return mapped_; }
  uint64_t mapped_bytes() const { return mapped_ * granularity_; }
  uint64_t granules_mapped_total() const { return map_count_; }     // over the map's life
  uint64_t granules_unmapped_total() const { return unmap_count_; }
  uint64_t chunks_mapped_total() const { return chunk_maps_; }      // physical handles made
  uint64_t chunks_unmapped_total() const { return chunk_unmaps_; }
  // The calls made so far (see Note [Calls that may synchronize]).
  uint64_t unmap_calls() const { return unmap_calls_; }
  uint64_t set_access_calls() const { return set_access_calls_; }
  // What this device's chunks are created without (kRefused* bits; 0:
  // nothing refused). See Note [What the driver refuses at creation].
  static constexpr unsigned kRefusedPosixFd = kCreatedWithoutPosixFd, kRefusedRdma = kCreatedWithoutRdma;
  unsigned refused() const;

 private:
  // Maps granules [first, first + count) on `handle` (a kept one), or on
  // one created (0).
  CUresult map_chunk(size_t first, size_t count, CUmemGenericAllocationHandle handle);
  // The largest kept handle of at most `most` granules (its count in
  // *count), taken from kept_; 0 when none fits.
  CUmemGenericAllocationHandle take_kept(size_t most, size_t* count);
  // cuMemCreate with prop_, less what the driver refused.
  // See Note [What the driver refuses at creation].
  CUresult create(CUmemGenericAllocationHandle* handle, uint64_t bytes);
  CUresult unmap_call(CUdeviceptr at, uint64_t bytes);
  CUresult set_access_call(CUdeviceptr at, uint64_t bytes, const CUmemAccessDesc* desc, size_t count);
  void unmap_chunk(size_t first, bool keep = false);
  // Unmaps every chunk wholly inside granules [first, stop), one call per
  // run of adjacent ones, until `most` granules are taken; returns the
  // granules unmapped.
  size_t unmap_whole_chunks(size_t first, size_t stop, bool keep, size_t most = ~size_t{0});
  // A chunk's handle released (or kept) and its granules marked unmapped,
  // after the cuMemUnmap that covered it; returns its granule count.
  size_t forget_chunk(size_t first, bool keep);
  // Handles unmapped but kept (Note [Moving a page instead of making one]),
  // with their granule counts; and those ever exported, never kept.
  std::vector<std::pair<CUmemGenericAllocationHandle, size_t>> kept_;
  size_t kept_granules_ = 0;
  mutable std::unordered_set<CUmemGenericAllocationHandle> exported_;
  uint64_t moved_ = 0;

  const cuda::DriverApi* api_;
  int device_;
  std::string why_;
  CUmemAllocationProp prop_{};
  std::vector<CUmemAccessDesc> access_;  // the owner first, then granted peers
  uint64_t limit_ = 0;
  uint64_t granularity_ = 0;
  CUdeviceptr base_ = 0;
  uint64_t size_ = 0;
  size_t max_chunk_ = 1;  // granules
  // Per granule: its chunk's handle (0: not mapped) and the chunk's first
  // granule; at a chunk's first granule, its length in granules.
  std::vector<CUmemGenericAllocationHandle> handles_;
  std::vector<uint32_t> chunk_first_;
  std::vector<uint32_t> chunk_len_;
  size_t mapped_ = 0;
  uint64_t map_count_ = 0;
  uint64_t unmap_count_ = 0;
  uint64_t chunk_maps_ = 0;
  uint64_t chunk_unmaps_ = 0;
  uint64_t unmap_calls_ = 0;
  uint64_t set_access_calls_ = 0;
};

}  // namespace alloc
}  // namespace gpuslack
