// The cpp backend's reference kernel for FP8 GEMM with scales (kernel ABI v2): the block-scaled
// operator (CROQ_OP_MATMUL_BLOCKSCALED: A scaled per 1 x scale_block_k, B per scale_block_n x
// scale_block_k, f32 scales) and dense e4m3 matmul with per-tensor scales (CROQ_SCALE_TENSOR).
// For every output element: sum over K of (a_scale A) (b_scale B) in f32, each element multiplied by
// its block's scales (per tensor: the f32 sum times a_scale * b_scale). e4m3 inputs, f16, bf16 or
// f32 output, B "row.col" ([N,K], the form FP8 tensor-core kernels read) or row-major for the
// per-tensor case. Slow and plain on purpose: the model of what the scales mean.
// croq-kernel: {"dtypes": ["e4m3f16", "e4m3bf16"], "rank": 10, "tensor_cores": false, "summary": "FP8 reference: scales per block or per tensor applied in f32"}
#include <croq/kernel_abi.h>

#include <cstdint>
#include <cstring>

namespace {

float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F) return bits_to_f32(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_f32(sign);
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    return bits_to_f32(sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((man & 0x3FFu) << 13));
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

float e4m3_to_f32(uint8_t v) {
  const float sign = (v & 0x80u) ? -1.0f : 1.0f;
  const int exp = (v >> 3) & 0xF, man = v & 0x7;
  if (exp == 0xF && man == 0x7) return bits_to_f32(0x7FC00000u);
  if (exp == 0) return sign * static_cast<float>(man) / 8.0f / 64.0f;
  return sign * (1.0f + static_cast<float>(man) / 8.0f) * bits_to_f32(static_cast<uint32_t>(exp - 7 + 127) << 23);
}

float load(const void* p, croq_dtype t, int64_t i) {
  switch (t) {
    case CROQ_F16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CROQ_BF16: return bits_to_f32(static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16);
    case CROQ_E4M3: return e4m3_to_f32(static_cast<const uint8_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xFFu) - 127 + 15;
  uint32_t man = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFFu) == 0xFFu) return static_cast<uint16_t>(sign | 0x7C00u | (man ? 0x200u : 0u));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    man |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t half = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  const uint32_t rem = man & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(half);
}

void store(void* p, croq_dtype t, int64_t i, float v) {
  switch (t) {
    case CROQ_F16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); break;
    case CROQ_BF16: {
      uint32_t x;
      std::memcpy(&x, &v, 4);
      x += 0x7FFFu + ((x >> 16) & 1u);  // round to nearest even (inputs here are finite)
      static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(x >> 16);
      break;
    }
    default: static_cast<float*>(p)[i] = v; break;
  }
}

}  // namespace

extern "C" {

CROQ_EXPORT croq_status croq_gemm(const croq_gemm_desc* d, const croq_gemm_operands* o, void* /*stream*/) {
  if (d == nullptr || o == nullptr || d->abi_version != CROQ_GEMM_ABI_VERSION) return CROQ_INVALID_ARGUMENT;
  if (d->a_type != CROQ_E4M3 || d->b_type != CROQ_E4M3 || d->compute_type != CROQ_F32) return CROQ_UNSUPPORTED;
  const bool block = d->op == CROQ_OP_MATMUL_BLOCKSCALED && d->scale_mode == CROQ_SCALE_BLOCK;
  const bool tensor = d->op == CROQ_OP_MATMUL && d->scale_mode == CROQ_SCALE_TENSOR;
  if (!block && !tensor) return CROQ_UNSUPPORTED;
  if (o->a_scale == nullptr || o->b_scale == nullptr) return CROQ_INVALID_ARGUMENT;
  const bool b_col = d->b_layout == CROQ_COL_MAJOR;
  if (block && (!b_col || d->scale_block_k <= 0 || d->scale_block_n <= 0 || d->scale_block_m != 1))
    return CROQ_UNSUPPORTED;
  const int64_t bk = block ? d->scale_block_k : 1, bn = block ? d->scale_block_n : 1;
  const int64_t kb = block ? (d->k + bk - 1) / bk : 1;
  for (int64_t i = 0; i < d->m; ++i) {
    for (int64_t j = 0; j < d->n; ++j) {
      float acc = 0.f;
      for (int64_t q = 0; q < d->k; ++q) {
        float av = load(o->a, d->a_type, i * d->lda + q);
        float bv = load(o->b, d->b_type, b_col ? j * d->ldb + q : q * d->ldb + j);
        if (block) {
          av *= o->a_scale[i * kb + q / bk];
          bv *= o->b_scale[(j / bn) * kb + q / bk];
        }
        acc += av * bv;
      }
      if (tensor) acc *= o->a_scale[0] * o->b_scale[0];
      store(o->c, d->c_type, i * d->ldc + j, acc);
    }
  }
  return CROQ_OK;
}

CROQ_EXPORT const char* croq_kernel_info(void) {
  return "{\"name\": \"fp8 scaled reference\", \"dsl\": \"cpp\", \"params\": {}}";
}

}  // extern "C"
