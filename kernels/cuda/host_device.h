#pragma once
// HIPSTUDIO_HOST_DEVICE: a small function that both the CUDA kernels and plain C++ (the CPU tests
// that check it) compile.
#ifdef __CUDACC__
#define HIPSTUDIO_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HIPSTUDIO_HOST_DEVICE inline
#endif
