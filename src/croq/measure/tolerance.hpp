// The verification rule: which tolerance applies to a problem, and the host comparison of an
// output against the f32-accumulated reference (used by the CPU runner, and by the GPU runner to
// list the worst elements once its device check has found a failure).
//
// Tolerance table (the seeds' values; an element fails if !(|got - want| <= base + rel * |want|),
// see portable.hpp), plus a limit on the normwise relative error ||got - want||_F / ||want||_F:
//
//   inputs       output     base_tol  rel_tol  normwise   rule
//   f16 / bf16   f32        1.0       0.01     1e-3       f16/bf16 in, f32 accumulate
//   f16 / bf16   f16/bf16   1.0       0.01     2e-3/1e-2  f16/bf16 in, f32 accumulate, 16-bit out
//   e4m3         f16/bf16   0.5       0.01     5e-3/1e-2  fp8 e4m3 in, f32 accumulate
//     (dense matmul: with per-tensor scales, the same limits as unscaled inputs; the reference
//      applies the scales in f32)
//   e4m3 block-scaled, bf16 out: the row above plus mag_tol = 2^-10 times the element's magnitude
//     sum_k |a_ik sa| |b_kj sb| (the reference computes it beside the product). FP8 tensor cores
//     accumulate each 128-deep block in about 13 mantissa bits before the promotion to f32
//     (measured on the H200, with block scales that then spanned 10^4 per tensor: cuBLASLt's and
//     croq's kernels alike erred by up to 2.6e-4 of the magnitude on elements that cancel to near
//     zero, 0.1-0.9 % of them), which outgrows the fixed term where K is large. 2^-10 allows four
//     such roundings per block; a kernel that drops, misplaces or caches a scale, or skips a
//     block (each keeps at least 1/256 of the largest block's scales, portable.hpp), errs by a
//     sizeable fraction of the magnitude and still fails, and the normwise limit is unchanged.
//   f32          f32        1.0       0.01     1e-4       f32 in, f32 accumulate
//   f32 (tf32)   f32        1.0       0.01     5e-3       tf32 multiply, f32 accumulate
//   (f16 accumulation, 16.0 / 0.05, is the seeds' row for kernels that accumulate in f16; the ABI
//    fixes f32 accumulation, so no problem selects it today.)
//
// The normwise limits sit an order of magnitude above what a correct kernel reaches (f32
// accumulation in any order: ~1e-6; rounding to f16: ~3e-4, to bf16: ~2e-3) and below what a
// silent precision drop or a partly wrong output produces.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "croq/measure/measurement.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

ToleranceSpec tolerance_for(const DtypePair& dtype);
// The operator's row: `op` a canonical operator (the rule names the scales of matmul e4m3 and of
// the block-scaled operator).
ToleranceSpec tolerance_for(const DtypePair& dtype, const std::string& op);
// The seeds' f16-accumulation row (documented, not selected by any ABI v1 problem).
ToleranceSpec f16_accumulate_tolerance();

// Compares `got` (m x n row-major, element type `c_type`) with `want` (f32, same layout).
// Fills elements, mismatches, nan_count, max_abs_err, max_rel_err, normwise_rel_err, the
// `max_worst` elements with the largest error relative to their tolerance, and passed.
// max_rel_err is taken over elements with |want| >= base_tol (where the relative term matters).
// `magnitude` (same layout, or null) is sum_k |a_ik b_kj| with the scales applied, for a rule with
// mag_tol > 0; null counts as 0.
void compare_host(const void* got, ScalarType c_type, const float* want, int64_t m, int64_t n,
                  const ToleranceSpec& tol, Verification& out, size_t max_worst = 8,
                  const float* magnitude = nullptr);
// The element limit's magnitude factor of the block-scaled operator (2^-10).
inline constexpr double k_blockscaled_mag_tol = 1.0 / 1024;

// Sets `passed` from the figures: no mismatch, no NaN, no guard byte changed, normwise within
// the limit.
void decide_passed(Verification& v);

}  // namespace croq
