"""The simulated CUDA device (tests/simcuda) through ctypes, for the Python
tests: streams, synchronization, and the busy kernel (gpusim.h) that owns a
buffer for a while and counts a violation if anyone writes it meanwhile.

Loading order matters: the simulated libcudart.so.13 is loaded first,
RTLD_GLOBAL, so that libgpuslack.so (loaded after it, by the gpuslack
package) finds it as the process's CUDA runtime. The process must have
been started with LD_LIBRARY_PATH holding the simulated libraries (the
runtime brings in libcuda.so.1 by its soname).
"""
import ctypes
import os

CUDA_SUCCESS = 0
CUDA_STREAM_NON_BLOCKING = 1


class CudaError(RuntimeError):
    pass


class Sim:
    def __init__(self, simcuda_dir=None):
        d = simcuda_dir or os.environ["SIMCUDA_DIR"]
        ctypes.CDLL(os.path.join(d, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
        self.gpusim = ctypes.CDLL(os.path.join(d, "libgpusim.so"), mode=ctypes.RTLD_GLOBAL)
        # The runtime's functions from the process's global scope, as a
        # program linked against it calls them: a preloaded libgpuslack.so
        # comes first there. (Through the runtime's own handle, dlsym would
        # skip the preloaded hooks.)
        self.cudart = ctypes.CDLL(None)
        c, g = self.cudart, self.gpusim
        c.cudaStreamCreateWithFlags.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
        c.cudaStreamDestroy.argtypes = [ctypes.c_void_p]
        c.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        c.cudaStreamQuery.argtypes = [ctypes.c_void_p]
        c.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        c.cudaFree.argtypes = [ctypes.c_void_p]
        c.cudaGetErrorName.restype = ctypes.c_char_p
        g.gpusim_busy_kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint,
                                         ctypes.c_uint32, ctypes.POINTER(ctypes.c_int)]
        g.gpusim_busy_kernel_violations.restype = ctypes.c_long
        g.gpusim_device_used.restype = ctypes.c_size_t
        g.gpusim_device_used.argtypes = [ctypes.c_int]
        self._statuses = []  # host words the kernels write when done: kept alive

    def check(self, err, what):
        if err != CUDA_SUCCESS:
            raise CudaError("%s: %s" % (what, self.cudart.cudaGetErrorName(err).decode()))

    def stream(self):
        """A new non-blocking stream (a cudaStream_t as an int)."""
        s = ctypes.c_void_p()
        self.check(self.cudart.cudaStreamCreateWithFlags(ctypes.byref(s), CUDA_STREAM_NON_BLOCKING),
                   "cudaStreamCreateWithFlags")
        return s.value

    def busy(self, stream, ptr, nbytes, ms, pattern):
        """Enqueues the busy kernel on `stream` over [ptr, ptr+nbytes) for
        `ms` milliseconds. Returns its status word: 0 while queued or
        running, 1 when it finished with its buffer intact, -1 if someone
        wrote the buffer under it."""
        status = ctypes.c_int(0)
        self._statuses.append(status)
        self.check(self.gpusim.gpusim_busy_kernel(stream, ptr, nbytes, int(ms * 1000), pattern,
                                                  ctypes.byref(status)), "gpusim_busy_kernel")
        return status

    def sync(self, stream=None):
        if stream is None:
            self.check(self.cudart.cudaDeviceSynchronize(), "cudaDeviceSynchronize")
        else:
            self.check(self.cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")

    def violations(self):
        return self.gpusim.gpusim_busy_kernel_violations()

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.cudart.cudaMalloc(ctypes.byref(p), nbytes), "cudaMalloc")
        return p.value

    def free(self, ptr):
        self.check(self.cudart.cudaFree(ptr), "cudaFree")
