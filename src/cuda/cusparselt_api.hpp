// The part of cuSPARSELt's C API the GPU runner uses, declared from NVIDIA's documentation
// (docs.nvidia.com/cuda/cusparselt; the ABI of versions 0.7 and 0.8: caller-allocated opaque
// objects of 512 bytes aligned to 16, the enumerators' values below, the signatures of the
// function pointer types). cuSPARSELt's own header is not needed to build croq. The status,
// operation and order types are cuSPARSE's (the CUDA toolkit's cusparse.h), the data types the
// toolkit's library_types.h.
#pragma once
#include <cusparse.h>
#include <driver_types.h>
#include <library_types.h>

#include <cstdint>
#include <string>

namespace croq::gpu_runner {

namespace cslt {

// The opaque objects: 512 bytes in the library's ABI; twice that here (they are only ever passed
// by pointer, so more room than the library uses costs nothing and survives a larger future size).
struct alignas(16) Opaque {
  uint8_t data[1024];
};
using Handle = Opaque;
using MatDescriptor = Opaque;
using MatmulDescriptor = Opaque;
using AlgSelection = Opaque;
using Plan = Opaque;

enum Sparsity : int { SPARSITY_50_PERCENT = 0 };
enum ComputeType : int { COMPUTE_32I = 0, COMPUTE_16F = 1, COMPUTE_32F = 2 };
enum MatmulDescAttribute : int { MATMUL_SPARSE_MAT_POINTER = 9 };
enum MatmulAlg : int { MATMUL_ALG_DEFAULT = 0 };
enum AlgAttribute : int {
  ALG_CONFIG_ID = 0,
  ALG_CONFIG_MAX_ID = 1,
  SEARCH_ITERATIONS = 2,
  SPLIT_K = 3,
  SPLIT_K_MODE = 4,
  SPLIT_K_BUFFERS = 5
};

}  // namespace cslt

struct CusparseLtApi {
  void* lib = nullptr;
  std::string path;
  std::string origin;

  cusparseStatus_t (*init)(cslt::Handle*) = nullptr;
  cusparseStatus_t (*destroy)(const cslt::Handle*) = nullptr;
  cusparseStatus_t (*get_version)(const cslt::Handle*, int*) = nullptr;
  const char* (*error_string)(cusparseStatus_t) = nullptr;  // optional
  cusparseStatus_t (*dense_descriptor_init)(const cslt::Handle*, cslt::MatDescriptor*, int64_t rows, int64_t cols,
                                            int64_t ld, uint32_t alignment, cudaDataType value_type,
                                            cusparseOrder_t order) = nullptr;
  cusparseStatus_t (*structured_descriptor_init)(const cslt::Handle*, cslt::MatDescriptor*, int64_t rows,
                                                 int64_t cols, int64_t ld, uint32_t alignment,
                                                 cudaDataType value_type, cusparseOrder_t order,
                                                 cslt::Sparsity sparsity) = nullptr;
  cusparseStatus_t (*mat_descriptor_destroy)(const cslt::MatDescriptor*) = nullptr;
  cusparseStatus_t (*matmul_descriptor_init)(const cslt::Handle*, cslt::MatmulDescriptor*, cusparseOperation_t op_a,
                                             cusparseOperation_t op_b, const cslt::MatDescriptor* a,
                                             const cslt::MatDescriptor* b, const cslt::MatDescriptor* c,
                                             const cslt::MatDescriptor* d, cslt::ComputeType compute) = nullptr;
  cusparseStatus_t (*matmul_desc_set_attribute)(const cslt::Handle*, cslt::MatmulDescriptor*,
                                                cslt::MatmulDescAttribute, const void* data, size_t size) = nullptr;
  cusparseStatus_t (*alg_selection_init)(const cslt::Handle*, cslt::AlgSelection*, const cslt::MatmulDescriptor*,
                                         cslt::MatmulAlg) = nullptr;
  cusparseStatus_t (*alg_set_attribute)(const cslt::Handle*, cslt::AlgSelection*, cslt::AlgAttribute,
                                        const void* data, size_t size) = nullptr;
  cusparseStatus_t (*alg_get_attribute)(const cslt::Handle*, const cslt::AlgSelection*, cslt::AlgAttribute,
                                        void* data, size_t size) = nullptr;
  cusparseStatus_t (*get_workspace)(const cslt::Handle*, const cslt::Plan*, size_t* bytes) = nullptr;
  cusparseStatus_t (*plan_init)(const cslt::Handle*, cslt::Plan*, const cslt::MatmulDescriptor*,
                                const cslt::AlgSelection*) = nullptr;
  cusparseStatus_t (*plan_destroy)(const cslt::Plan*) = nullptr;
  cusparseStatus_t (*matmul)(const cslt::Handle*, const cslt::Plan*, const void* alpha, const void* d_a,
                             const void* d_b, const void* beta, const void* d_c, void* d_d, void* workspace,
                             cudaStream_t* streams, int32_t num_streams) = nullptr;
  cusparseStatus_t (*matmul_search)(const cslt::Handle*, cslt::Plan*, const void* alpha, const void* d_a,
                                    const void* d_b, const void* beta, const void* d_c, void* d_d, void* workspace,
                                    cudaStream_t* streams, int32_t num_streams) = nullptr;
  cusparseStatus_t (*prune_check2)(const cslt::Handle*, const cslt::MatDescriptor*, int is_sparse_a,
                                   cusparseOperation_t op, const void* d_in, int* d_valid, cudaStream_t) = nullptr;
  cusparseStatus_t (*compressed_size2)(const cslt::Handle*, const cslt::MatDescriptor*, size_t* compressed_bytes,
                                       size_t* buffer_bytes) = nullptr;
  cusparseStatus_t (*compress2)(const cslt::Handle*, const cslt::MatDescriptor*, int is_sparse_a,
                                cusparseOperation_t op, const void* d_dense, void* d_compressed, void* d_buffer,
                                cudaStream_t) = nullptr;

  std::string status_text(cusparseStatus_t s) const;
};

}  // namespace croq::gpu_runner
