// Test candidates for the cpp dsl (kernel ABI on host pointers), one per CROQ_TEST_MODE:
//   naive   correct f32 (and f16 -> f32) matmul, both B layouts
//   wrong   adds 5 to every element                 -> VERIFY_FAIL
//   segv    dereferences NULL                        -> SEGFAULT
//   loop    never returns                            -> HANG
//   cublas  calls cublasGemmEx (left undefined)      -> LIBRARY_CALL_FORBIDDEN, before it runs
//   spawn   naive, and its constructor calls fork()  -> LIBRARY_CALL_FORBIDDEN, before it runs
//   rawclone  naive, and its constructor starts a process by the raw clone system call, whose
//           child writes the file $CROQ_TEST_MARKER: the runner forbids it (seccomp), so PASS and
//           no file
//   selfpath  naive, and croq_kernel_info names the file the runner loaded it from (dladdr)
// The CLI tests compile this file with the system C++ compiler.
#include <croq/kernel_abi.h>
#include <croq/host_scalar.h>

#include <cstdint>
#include <cstring>

#define MODE_naive 1
#define MODE_wrong 2
#define MODE_segv 3
#define MODE_loop 4
#define MODE_cublas 5
#define MODE_spawn 6
#define MODE_rawclone 7
#define MODE_selfpath 8
#define CAT(a, b) a##b
#define MODE_OF(m) CAT(MODE_, m)

#if MODE_OF(CROQ_TEST_MODE) == MODE_cublas
extern "C" int cublasGemmEx(void*);
#elif MODE_OF(CROQ_TEST_MODE) == MODE_spawn
#include <unistd.h>
__attribute__((constructor)) static void start_a_process() {
  if (fork() == 0) _exit(0);
}
#elif MODE_OF(CROQ_TEST_MODE) == MODE_rawclone
#include "start_process.h"
#endif

CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c, void*, size_t,
                                    void* stream) {
  if (stream != nullptr || p->c_type != CROQ_F32) return CROQ_UNSUPPORTED;
  if (p->a_type != CROQ_F32 && p->a_type != CROQ_F16) return CROQ_UNSUPPORTED;
#if MODE_OF(CROQ_TEST_MODE) == MODE_segv
  volatile int* null_pointer = nullptr;
  *null_pointer = 1;
#elif MODE_OF(CROQ_TEST_MODE) == MODE_loop
  for (volatile int spin = 0;; spin = spin + 1) {
  }
#elif MODE_OF(CROQ_TEST_MODE) == MODE_cublas
  return cublasGemmEx(c) == 0 ? CROQ_OK : CROQ_INTERNAL;
#endif
  auto ld = [&](const void* base, int64_t i) { return croq_host::load(base, p->a_type, i); };
  float* out = static_cast<float*>(c);
  for (int64_t i = 0; i < p->m; ++i) {
    for (int64_t j = 0; j < p->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < p->k; ++q) {
        const float bv = p->b_layout == CROQ_COL_MAJOR ? ld(b, j * p->k + q) : ld(b, q * p->n + j);
        acc += ld(a, i * p->k + q) * bv;
      }
#if MODE_OF(CROQ_TEST_MODE) == MODE_wrong
      acc += 5.0f;
#endif
      out[i * p->n + j] = acc;
    }
  }
  return CROQ_OK;
}

#if MODE_OF(CROQ_TEST_MODE) == MODE_selfpath
#include <dlfcn.h>

#include <string>
CROQ_EXPORT const char* croq_kernel_info(void) {
  static std::string info;
  Dl_info where{};
  dladdr(reinterpret_cast<void*>(&croq_kernel_info), &where);
  info = std::string("{\"name\": \"cpu test candidate\", \"loaded_from\": \"") +
         (where.dli_fname ? where.dli_fname : "") + "\"}";
  return info.c_str();
}
#else
CROQ_EXPORT const char* croq_kernel_info(void) { return "{\"name\": \"cpu test candidate\"}"; }
#endif
