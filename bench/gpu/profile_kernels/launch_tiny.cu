// Launch-bound fixture: a tiny grid (2 CTAs of 64 threads) doing a few hundred operations: the
// kernel lasts a few microseconds and leaves almost every SM without work.
#include "common.cuh"

__global__ void tiny_grid_axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = y[i];
    for (int k = 0; k < 64; ++k) v = a * x[i] + v;
    y[i] = v;
  }
}

int main() {
  const int n = 128;
  float *x, *y;
  CK(cudaMalloc(&x, n * sizeof(float)));
  CK(cudaMalloc(&y, n * sizeof(float)));
  CK(cudaMemset(x, 0, n * sizeof(float)));
  CK(cudaMemset(y, 0, n * sizeof(float)));
  profile_protocol("tiny_grid_axpy", 3, [&] { tiny_grid_axpy<<<2, 64>>>(y, x, 1.0001f, n); });
  return 0;
}
