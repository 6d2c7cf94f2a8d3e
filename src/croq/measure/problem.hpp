// One matmul problem in the three forms croq needs: the measurement record's description, the
// dtype pair (storage and accumulation types) and the kernel ABI struct handed to a candidate.
#pragma once
#include <string>

#include <croq/kernel_abi.h>

#include "croq/measure/measurement.hpp"
#include "croq/workspace/dtype.hpp"

namespace croq {

struct ProblemSetup {
  ProblemDesc desc;
  DtypePair dtype;
  croq_matmul_problem abi{};
};

// Throws Error(usage) for an unknown dtype or a layout other than row/col.
ProblemSetup make_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype_token, const std::string& b_layout);
croq_dtype abi_dtype(ScalarType t);
// "row" first, then "col", except for fp8 inputs, whose natural form (and cuBLASLt's) is col.
std::vector<std::string> layout_order(const std::string& requested, const DtypePair& dtype);

}  // namespace croq
