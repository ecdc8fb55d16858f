// "An application linked against libcudart": the LD_PRELOAD target.
#include "cuda_roundtrip.h"

int main() { return cuda_roundtrip(); }
