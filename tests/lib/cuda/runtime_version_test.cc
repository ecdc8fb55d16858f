// lib/cuda on a CUDA 12 runtime (the simulated libcudart.so.12, which this
// binary links instead of .so.13): the runtime's major version, found once,
// and gpuslack's capture query through CUDA 12's entry point, which knows
// the graph (Note [Capture without hooks]).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/runtime_api.h"
#include "cuda/runtime_symbols.h"

namespace gpuslack::cuda {
namespace {

TEST(RuntimeVersion, MajorFromFileName) {
  EXPECT_EQ(12, runtime_major_from_file_name("/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"));
  EXPECT_EQ(13, runtime_major_from_file_name("libcudart.so.13.0.48"));
  EXPECT_EQ(0, runtime_major_from_file_name("/usr/lib/libcudart.so"));
  EXPECT_EQ(0, runtime_major_from_file_name("/x/libcudart-d0da41ae.so.11.0"));
  EXPECT_EQ(0, runtime_major_from_file_name("/x/libcuda.so.1"));
  EXPECT_EQ(0, runtime_major_from_file_name(nullptr));
}

TEST(RuntimeVersion, TheLoadedRuntimeIsCuda12) {
  EXPECT_EQ(12, runtime_major_version());
  EXPECT_EQ(12, runtime_major_version());  // cached
}

TEST(RuntimeVersion, CaptureInfoNamesTheGraphOnCuda12) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  unsigned long long id = 1;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaSuccess, stream_get_capture_info(s, &status, &id, &graph));
  EXPECT_EQ(cudaStreamCaptureStatusNone, status);
  ASSERT_EQ(cudaSuccess, cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(cudaSuccess, stream_get_capture_info(s, &status, &id, &graph));
  EXPECT_EQ(cudaStreamCaptureStatusActive, status);
  EXPECT_NE(0u, id);
  EXPECT_NE(nullptr, graph);
  cudaGraph_t ended = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamEndCapture(s, &ended));
  EXPECT_EQ(graph, ended);
  EXPECT_EQ(cudaSuccess, cudaGraphDestroy(ended));
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(s));
}

}  // namespace
}  // namespace gpuslack::cuda
