// A process that never touches CUDA (a shell, a compiler): under LD_PRELOAD
// gpuslack must print nothing and write nothing for it.
#include <cstdio>

int main() {
  std::printf("no cuda here\n");
  return 0;
}
