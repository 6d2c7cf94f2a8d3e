// One call from an Nsight Compute CSV file to the classification document: read and parse the
// file, choose the kernel row, extract the figures, classify, and attach where the evidence lives
// (the CSV, its .ncu-rep report, the row chosen and why). Used by `croq classify` and by
// `croq profile` right after a capture; other components (the protocol, the search) call it too.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "croq/profile/classifier.hpp"
#include "croq/util/json.hpp"

namespace croq::profile {

struct ClassifyRequest {
  std::filesystem::path csv;
  std::string kernel_pattern;                 // --kernel
  std::string iter;                           // --iter (echoed)
  std::optional<std::filesystem::path> ncu_rep;  // default: the CSV's sibling <stem>.ncu-rep if present
  ClassifyOptions options;
};

// FLOPs and canonical dtype of a shape key ("matmul_f16fp32_4096x4096x4096" -> 2*M*N*K, "f16f32");
// nullopt FLOPs for operators croq does not know the work of.
struct ShapeWork {
  std::optional<double> flops;
  std::string dtype;
};
ShapeWork shape_work(const std::string& shape_key);

// Throws croq::Error for unreadable or malformed files (see ncu_csv.hpp) and unclassifiable
// profiles (see classifier.hpp).
json classify_csv(const ClassifyRequest& request);

}  // namespace croq::profile
