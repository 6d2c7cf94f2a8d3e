// The CHECK macro of the host check programs (tests/nvcc/*_check.cu): they include a kernel template
// and play its host-side logic on the CPU. A failed condition is counted in `failures` and the first
// ten are printed with their message; the program prints its verdict and exits 1 when any failed.
#pragma once
#include <cstdio>

static int failures = 0;
#define CHECK(cond, ...)                 \
  do {                                   \
    if (!(cond)) {                       \
      if (failures++ < 10) {             \
        std::printf("FAIL %s: ", #cond); \
        std::printf(__VA_ARGS__);        \
        std::printf("\n");               \
      }                                  \
    }                                    \
  } while (0)
