// The text `croq export` writes (export.hpp): the dispatcher, the C header, the CMake package
// files, the PyTorch extension and the README. Pure functions of the plan, tested directly.
#pragma once
#include <string>
#include <vector>

#include "croq/export/plan.hpp"

namespace croq {

// The ABI entry points one kernel's object defines, after renaming with its prefix.
struct KernelEntries {
  std::string prefix;  // "croq_k3_": croq_matmul became croq_k3_croq_matmul
  bool matmul = false, matmul_workspace = false, info = false;
  bool gemm = false, gemm_workspace = false, gemm_prepared_bytes = false, gemm_prepare = false;
};

struct ExportText {
  std::string name;                  // the entry prefix, library and header name
  std::vector<ExportKernel> kernels;
  std::vector<KernelEntries> entries;  // one per kernel
  std::string info_json;             // what <name>_kernel_info() returns
  bool any_cuda() const;
  bool any_cpp() const;
  bool any_gemm() const;             // a kernel implements ABI version 2 (croq_gemm)
  bool any_prepare() const;
};

// The dispatch rule, in words (README, docs, --help): one place.
std::string dispatch_rule_text();

std::string dispatcher_source(const ExportText& x);
std::string header_text(const ExportText& x);
std::string cmake_config_text(const ExportText& x, bool shared, bool static_lib);
std::string cmake_version_text(const std::string& version);
std::string torch_extension_source(const ExportText& x);
std::string torch_setup_py(const ExportText& x);
std::string torch_test_py(const ExportText& x);
std::string readme_text(const ExportText& x, bool shared, bool static_lib);
// The dispatcher's entry points (<name>_matmul, ...): what the libraries export.
std::vector<std::string> entry_points(const ExportText& x);
// The linker version script of the shared library: only the entry points are exported (the
// kernels' renamed ABI functions, <name>_k<i>_croq_matmul, stay inside).
std::string version_script_text(const ExportText& x);

}  // namespace croq
