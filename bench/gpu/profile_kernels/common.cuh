// Shared by the profile fixture programs: error checking and the capture protocol of
// croq-gpu-runner --mode profile (warm-up launches, then the launch(es) to profile inside the NVTX
// range "croq_candidate", then a device synchronisation), so that
// `ncu --nvtx --nvtx-include croq_candidate/` captures exactly the intended launches.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

// Runs `launch` `warmup` times, then once inside the NVTX range, and reports the event time of
// that last launch on stdout ("<name> ms=<t>").
template <class F>
void profile_protocol(const char* name, int warmup, F launch) {
  for (int i = 0; i < warmup; ++i) launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  nvtxRangePushA("croq_candidate");
  CK(cudaEventRecord(a));
  launch();
  CK(cudaEventRecord(b));
  nvtxRangePop();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  std::printf("%s ms=%.4f\n", name, ms);
}

inline int arg_int(int argc, char** argv, int i, int fallback) {
  return argc > i ? std::atoi(argv[i]) : fallback;
}
