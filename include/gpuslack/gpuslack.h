/* gpuslack: the public C API of libgpuslack.so.
 *
 * gpuslack sits under a CUDA process (LD_PRELOAD, or loaded as PyTorch's
 * allocator) and measures the time the process loses to allocation, copies,
 * synchronization and collectives. These functions let a program or a
 * language binding ask it questions; none is needed for it to work.
 *
 * Every function may be called from any thread, before or after the first
 * CUDA call, and never fails the caller: at worst it returns an empty
 * answer. Strings returned as `const char*` are owned by the library and
 * live until the process exits; those returned as `char*` (or through a
 * `char**`) are the caller's, freed with gpuslack_free.
 */
#ifndef GPUSLACK_GPUSLACK_H_
#define GPUSLACK_GPUSLACK_H_

#include <stddef.h>    /* size_t */
#include <sys/types.h> /* ssize_t */

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

/* The knobs a process would run with, given `conf` as GPUSLACK_CONF and
 * `output` as GPUSLACK_OUTPUT (either NULL: unset), `secure` nonzero for a
 * process started with AT_SECURE (setuid, setgid, file capabilities), which
 * reads neither and writes no file. A JSON document:
 *   {"secure": false, "knobs": [{"key", "type", "value", "default",
 *    "source"}, ... one per knob], "errors": ["one line per problem", ...]}
 * where "source" is "GPUSLACK_CONF", "GPUSLACK_OUTPUT", "default",
 * "default (GPUSLACK_CONF's value refused)" or "secure mode". Reads no
 * environment, changes nothing, logs nothing, needs no CUDA call (this is
 * what `python -m gpuslack doctor` asks). Returns a string the caller frees
 * with gpuslack_free, or NULL when memory ran out. Any thread. */
GPUSLACK_API char* gpuslack_knobs_json(const char* conf, const char* output, int secure);

/* The summary as of now: the JSON document described by
 * docs/summary.schema.json (its "reason" is "api"). Returns a string the
 * caller frees with gpuslack_free, or NULL when the process has made no
 * CUDA call yet (or memory ran out). */
GPUSLACK_API char* gpuslack_summary_json(void);

/* Writes the summary files now, as at exit (text and JSON, as configured).
 * Returns 0, or -1 when the process has made no CUDA call yet. */
GPUSLACK_API int gpuslack_write_summary(void);

/* Renders a summary file as text: reads the JSON document at `json_path`
 * (one a process wrote, or gpuslack_summary_json's) and renders it as the
 * text summary, exactly as the process that wrote it printed its own at
 * exit. Needs no CUDA call and no session: any process may call it (this is
 * what `python -m gpuslack report FILE` does).
 *
 * Returns 0 and sets *text_out to the text (lines each starting
 * "gpuslack: " and ending in '\n'). Returns -1 and sets *error_out to one
 * line saying why (no newline): "cannot read <path>: <reason>",
 * "<path> is not a JSON document: ...", "<path> is not a gpuslack
 * summary: ...", "<path> has schema_version N; this gpuslack reads
 * version 1", "<path> is not a valid gpuslack summary: ...", or
 * "out of memory". Either pointer may be NULL (that answer is then not
 * given); the other is set to NULL. With text_out NULL the file is read and
 * checked but not rendered: the check every reader of summary files makes
 * first (the Python package's report, compare and merge), so that all of
 * them refuse what this reader refuses, with its line. The strings are the
 * caller's, freed with gpuslack_free. Any thread. */
GPUSLACK_API int gpuslack_render_summary(const char* json_path, char** text_out, char** error_out);

/* The renderers outside the library (the Python package's compare and job
 * report) call these, so that a name or figure reads the same everywhere
 * (docs/design.md, "Where rendering lives"). Need no session; any thread.
 *
 * gpuslack_format_figure: `value` in `unit` as every gpuslack text writes
 * it: "seconds" ("850 ns", "12.3 us", "4.5 ms", "2.10 s", "0"), "percent"
 * (a share: 0.123 -> "12.3%"), "bytes" ("0 B", "1.5 KiB", ...), "gbps"
 * (GB/s, the number alone: "12.34"), "size_bucket" (a power-of-two size
 * class by its exponent: 26 -> ">=64.0 MiB"), "link_gbps" ("450 GB/s"),
 * "link_gbits" ("400 Gb/s"), "waves" ("0.50"); "-" where the value has none
 * ("unknown" for the links: lib/report/units.h). Writes
 * at most `size` bytes with the NUL into `buf` and returns the text's
 * length, or -1 for an unknown unit, a NULL buf or a size under 32. */
GPUSLACK_API int gpuslack_format_figure(const char* unit, double value, char* buf, size_t size);

/* Every name a reader sees, as one JSON object: the time categories (key,
 * name, and whether they count as lost), the GPU's idle causes and busy
 * kinds (key, name), the units of gpuslack_format_figure and the hooked
 * calls that wait for the whole device ("device_syncs": "explicit" and
 * "frees"). The caller
 * frees it with gpuslack_free; NULL when memory ran out. */
GPUSLACK_API char* gpuslack_labels_json(void);

/* Renders findings as the text summary does: `findings_json` is an object
 * {"findings": [...]} (the summary's member); lines of at most `width`
 * columns where the words allow, each after `indent` spaces. `parts`: 0
 * all, with the heading "findings, most costly first:"; its bits
 * GPUSLACK_FINDINGS_NO_HEADING, GPUSLACK_FINDINGS_BRIEF (number, title and
 * cost only) and GPUSLACK_FINDINGS_BODY (evidence, where and fix only).
 * Returns 0 with the lines (each ending in '\n', "" for none) in *text_out,
 * or -1 with one line in *error_out; both the caller's, freed with
 * gpuslack_free. */
#define GPUSLACK_FINDINGS_NO_HEADING 1
#define GPUSLACK_FINDINGS_BRIEF 2
#define GPUSLACK_FINDINGS_BODY 4
GPUSLACK_API int gpuslack_render_findings(const char* findings_json, int width, int indent, int parts,
                                          char** text_out, char** error_out);

/* Marks a step boundary now: the end of one training or serving step and
 * the start of the next. With the GPU timeline, the summary then gives busy
 * and idle per step (p50, p99, the worst steps) instead of per summary
 * interval. Call it once per step, from any thread, at the same point of
 * each step (e.g. right after the optimizer step). Costs a clock read and a
 * short lock; a handful of steps per second is the expected rate, and the
 * last 4096 marks not yet read are kept (older ones are dropped, counted).
 *
 * It starts nothing: a mark made before the process's first CUDA call is
 * kept like any other and is harmless (the timeline uses marks inside the
 * time it measured). Python: gpuslack.step(), or gpuslack.torch.mark_steps()
 * for a torch training loop.
 *
 * gpuslack does not read NVTX ranges ("ProfilerStep#N"): that would take
 * NVTX from Nsight Systems (lib/ledger/host_activity.h, Note [Steps without
 * NVTX]). */
GPUSLACK_API void gpuslack_step(void);

/* Kernel launches counted so far through the launch API, every thread of
 * the process (cudaLaunchKernel, cudaLaunchKernelExC,
 * cudaLaunchCooperativeKernel with their per-thread-stream variants,
 * cuLaunchKernel, cuLaunchKernelEx), through LD_PRELOAD. Not nvcc's <<<>>>
 * launches, which go through the runtime's internal __cudaLaunchKernel. 0
 * before the first. */
GPUSLACK_API unsigned long long gpuslack_launch_count(void);

/* The VMM allocator's figures for one device (GPUSLACK_CONF allocator:vmm). */
typedef struct gpuslack_device_stats {
  unsigned long long allocated;       /* bytes in live blocks */
  unsigned long long peak_allocated;
  unsigned long long reserved;        /* bytes of physical memory mapped */
  unsigned long long peak_reserved;
  unsigned long long largest_free;    /* largest free virtual range */
  unsigned long long pending_free;    /* freed blocks (a count) not reusable yet */
  unsigned long long allocations;
  unsigned long long frees;
  unsigned long long granules_mapped;   /* over the process's life */
  unsigned long long granules_unmapped;
  unsigned long long oom_retries;
  double stall_s;                     /* waited for pending frees under pressure */
  unsigned long long failed_allocations; /* out of memory after every retry */
} gpuslack_device_stats;

/* Fills `out` for `device`. Returns 0, or -1 when the VMM allocator is not
 * serving that device (not selected, not used yet, or passing through). */
GPUSLACK_API int gpuslack_device_stats_get(int device, gpuslack_device_stats* out);

/* Restarts the peaks of `device` (-1: every device) from the current
 * figures, as torch.cuda.reset_peak_memory_stats does. */
GPUSLACK_API void gpuslack_reset_peak_stats(int device);

/* Releases the physical memory the VMM allocator keeps cached on `device`
 * (-1: every device). Returns the bytes released. */
GPUSLACK_API unsigned long long gpuslack_trim(int device);

/* The pinned host heap's figures (GPUSLACK_CONF pin, on by default): the
 * heap that serves cudaMallocHost, cudaHostAlloc and cudaFreeHost. */
typedef struct gpuslack_pinned_stats {
  unsigned long long pinned;          /* bytes pinned now: every chunk held */
  unsigned long long peak_pinned;
  unsigned long long live;            /* bytes in live blocks */
  unsigned long long peak_live;
  unsigned long long cap;             /* the most the heap pins (pinned_cap_mb) */
  unsigned long long chunks;          /* chunks held now */
  unsigned long long allocations;     /* served from the heap */
  unsigned long long frees;           /* cudaFreeHost calls served without a device sync */
  unsigned long long pending_free;    /* freed blocks (a count) not reusable yet */
  unsigned long long cap_hits;        /* allocations the cap left to the runtime */
  unsigned long long fallbacks;       /* allocations left to the runtime, cap hits included */
  unsigned long long passthrough;     /* write-combined or unknown flags: the runtime's */
  unsigned long long trimmed;         /* bytes given back by trims */
  double stall_s;                     /* waited for pending frees at the cap */
} gpuslack_pinned_stats;

/* Fills `out`. Returns 0, or -1 when the heap has not served anything
 * (pin:false, or no pinned allocation yet). */
GPUSLACK_API int gpuslack_pinned_stats_get(gpuslack_pinned_stats* out);

/* Gives pinned memory back: waits for every freed block's fence (the GPU
 * finishing its work on it), then releases (cudaFreeHost) every chunk of
 * the heap that no live block uses. Returns the bytes released. Separate
 * from gpuslack_trim, which is per device and is what
 * torch.cuda.empty_cache reaches (gpuslack_reset): PyTorch gives pinned
 * memory back on its own call, torch._C._host_emptyCache. */
GPUSLACK_API unsigned long long gpuslack_pinned_trim(void);

/* ------------------------------------------------------------------------
 * Stream-ordered device memory from the VMM allocator, with the signatures
 * PyTorch's CUDAPluggableAllocator loads:
 *
 *   torch.cuda.memory.CUDAPluggableAllocator(
 *       "libgpuslack.so", "gpuslack_device_alloc", "gpuslack_device_free")
 *
 * These serve memory whatever GPUSLACK_CONF's allocator knob says (the knob
 * decides what cudaMalloc does; a program calling these asked for the VMM
 * allocator). `stream` is a cudaStream_t; 0 is the legacy default stream.
 *
 * Stream order: a block freed on stream S may be handed out again at once
 * for an allocation on S (work on S runs in order), and on any other stream
 * only after the work enqueued on S before the free has completed (polled
 * with an event, never waited on). A block used on other streams than its
 * allocation stream must be named with gpuslack_record_stream before its
 * free; the free then also waits for those streams' work.
 * -------------------------------------------------------------------- */
struct CUstream_st;

/* A block of at least `size` bytes on `device` (256-byte aligned), usable
 * on `stream`; NULL when the device is out of memory after trimming and
 * waiting, during a graph capture when no mapped memory holds it, when
 * `size` is negative, or when the VMM allocator cannot serve `device` (no
 * VMM support). Every NULL for a positive size is logged (one line each):
 * PyTorch does not check this function's result. size 0 gives NULL. */
GPUSLACK_API void* gpuslack_device_alloc(ssize_t size, int device, struct CUstream_st* stream);

/* Frees a block from gpuslack_device_alloc, in the order of `stream` (see
 * above). `size` and `device` are what the allocation was asked for; they
 * are checked against the block, and a mismatch or a pointer that is not
 * a live block is logged once and ignored (never a crash). */
GPUSLACK_API void gpuslack_device_free(void* ptr, size_t size, int device, struct CUstream_st* stream);

/* Marks a block as used on `stream` too (torch's Tensor.record_stream): its
 * free waits for the work enqueued on `stream` up to the free as well. */
GPUSLACK_API void gpuslack_record_stream(void* ptr, struct CUstream_st* stream);

/* Hooks for the optional setters of PyTorch's C++ CUDAPluggableAllocator
 * (torch::cuda::CUDAPluggableAllocator):
 *   set_init_fn            -> gpuslack_init(device_count): torch passes
 *                             the number of devices; makes the allocator of
 *                             each of devices 0 .. device_count-1 now (as
 *                             gpuslack_device_init does for one);
 *   (any caller)           -> gpuslack_device_init(device): makes the
 *                             device's allocator now (reserves address
 *                             space) rather than at the first allocation;
 *   set_reset_fn           -> gpuslack_reset(): torch.cuda.empty_cache();
 *                             releases every cached granule on every device
 *                             (gpuslack_trim(-1));
 *   set_memory_fraction_fn -> gpuslack_set_memory_fraction(fraction, device):
 *                             caps the physical memory the allocator maps on
 *                             `device` at `fraction` of the device's memory
 *                             (0 < fraction <= 1; other values are logged
 *                             and ignored); an allocation beyond it fails as
 *                             out of memory;
 *   set_record_stream_fn   -> gpuslack_record_stream (above);
 *   set_base_alloc_fn      -> gpuslack_base_alloc(ptr, size): the start of
 *                             the live block holding `ptr`, its size in
 *                             *size; NULL (and *size 0) if none.
 * Each returns quietly for devices or pointers it does not serve. */
GPUSLACK_API void gpuslack_init(int device_count);
GPUSLACK_API void gpuslack_device_init(int device);
GPUSLACK_API void gpuslack_reset(void);
GPUSLACK_API void gpuslack_set_memory_fraction(double fraction, int device);
GPUSLACK_API void* gpuslack_base_alloc(void* ptr, size_t* size);

/* Frees a string returned by this API. NULL is ignored. */
GPUSLACK_API void gpuslack_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* GPUSLACK_GPUSLACK_H_ */
