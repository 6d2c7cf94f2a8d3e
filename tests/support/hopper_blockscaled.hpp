// The block-scaled configurations of the hopper_gemm family that the family and template tests single out.
#pragma once

#include <gtest/gtest.h>

#include "croq/search/hopper_gemm_family.hpp"

namespace croq::test {

// The block-scaled 128x128 kernel that overlaps each promotion with the next k block: the default
// where 256x128 tiles in waves are not (the goal shapes' default before 2026-12-06), else the waves
// default's first alternative.
inline FamilyConfig overlapped_blockscaled(const HopperGemmFamily& f, const FamilyProblem& p) {
  const FamilyConfig def = f.default_config(p);
  if (!HopperGemmFamily::blockscaled_waves(def)) return def;
  for (const auto& a : f.alternatives(p))
    if (a.tag == "bs_o128x128") return a.config;
  ADD_FAILURE() << "no bs_o128x128 alternative";
  return def;
}

}  // namespace croq::test
