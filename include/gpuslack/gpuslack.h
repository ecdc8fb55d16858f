/* gpuslack: the public C API of libgpuslack.so.
 *
 * gpuslack sits under a CUDA process (LD_PRELOAD, or loaded as PyTorch's
 * allocator) and measures the time the process loses to allocation, copies,
 * synchronization and collectives. These functions let a program or a
 * language binding ask it questions; none is needed for it to work.
 *
 * Every function may be called from any thread, before or after the first
 * CUDA call, and never fails the caller: at worst it returns an empty
 * answer. Strings returned are owned by the library and live until the
 * process exits.
 */
#ifndef GPUSLACK_GPUSLACK_H_
#define GPUSLACK_GPUSLACK_H_

#ifdef __cplusplus
extern "C" {
#endif

#define GPUSLACK_API __attribute__((visibility("default")))

/* The library's version, "MAJOR.MINOR.PATCH". */
GPUSLACK_API const char* gpuslack_version(void);

/* One line naming this build and the versions of the dependencies sealed
 * inside it (abseil, jemalloc, spdlog, fmt, the CUDA headers it was built
 * against). */
GPUSLACK_API const char* gpuslack_build_info(void);

/* The summary as of now: the JSON document described by
 * docs/summary.schema.json (its "reason" is "api"). Returns a string the
 * caller frees with gpuslack_free, or NULL when the process has made no
 * CUDA call yet (or memory ran out). */
GPUSLACK_API char* gpuslack_summary_json(void);

/* Writes the summary files now, as at exit (text and JSON, as configured).
 * Returns 0, or -1 when the process has made no CUDA call yet. */
GPUSLACK_API int gpuslack_write_summary(void);

/* The VMM allocator's figures for one device (GPUSLACK_CONF allocator:vmm). */
typedef struct gpuslack_device_stats {
  unsigned long long allocated;       /* bytes in live blocks */
  unsigned long long peak_allocated;
  unsigned long long reserved;        /* bytes of physical memory mapped */
  unsigned long long peak_reserved;
  unsigned long long largest_free;    /* largest free virtual range */
  unsigned long long pending_free;    /* freed blocks the GPU may still use */
  unsigned long long allocations;
  unsigned long long frees;
  unsigned long long granules_mapped;   /* over the process's life */
  unsigned long long granules_unmapped;
  unsigned long long oom_retries;
  double stall_s;                     /* waited for pending frees under pressure */
} gpuslack_device_stats;

/* Fills `out` for `device`. Returns 0, or -1 when the VMM allocator is not
 * serving that device (not selected, not used yet, or passing through). */
GPUSLACK_API int gpuslack_device_stats_get(int device, gpuslack_device_stats* out);

/* Releases the physical memory the VMM allocator keeps cached on `device`
 * (-1: every device). Returns the bytes released. */
GPUSLACK_API unsigned long long gpuslack_trim(int device);

/* Frees a string returned by this API. NULL is ignored. */
GPUSLACK_API void gpuslack_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* GPUSLACK_GPUSLACK_H_ */
