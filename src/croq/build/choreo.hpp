// Reading what the CroqTile (Choreo) compiler writes. `choreo -gs -t cute -arch=<arch> k.co -o
// k.cute.result` produces a bash script that
//   - embeds the runtime headers and the generated kernel as quoted heredocs:
//       cat <<'EOF' > /tmp/<unique>/choreo.h
//       ...
//       EOF
//     (choreo.h, choreo_types.h, choreo_types_cute.h, choreo_cute.h, optionally
//     choreo_device_api.h, then __choreo_cute_<name>.cu);
//   - names the architecture (`nv_arch=sm_90a`) and the nvcc flags, which vary per kernel
//     (`export CFLAGS="-gencode arch=compute_90a,code=sm_90a -std=c++17 ... -I${CUTE_HOME}/include
//      ... -L${CUDA_HOME}/lib64 -lcuda"`);
//   - then branches for --execute, --compile-link, --compile-module and --lib.
// croq takes the kernel and headers out of the script and builds the .cu itself (phase 2), so an
// agent can fine-tune the .cu between the two phases.
//
// A .co whose kernel function is a plain matmul or 2:4 sparse GEMM (find_matmul_signature) can
// also be bound to croq's kernel ABI by a generated wrapper (abi_wrapper_source), so the
// measurement runner verifies and times it like any other candidate.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace croq {

struct Heredoc {
  std::string path;       // where the script writes it ("/tmp/choreo_x/choreo.h")
  std::string delimiter;  // "EOF"
  std::string content;    // the bytes written (each line with its newline)
  int first_line = 0;     // 1-based line of the `cat` command in the script
};

struct ChoreoScript {
  std::vector<Heredoc> files;
  std::string cflags;      // the raw value of `export CFLAGS="..."` (variables not expanded)
  std::string nv_arch;     // from `nv_arch=...`
  // The generated kernel source (__choreo_cute_<name>.cu); nullptr when absent.
  const Heredoc* kernel() const;
  // The embedded headers (every heredoc whose name ends in .h / .hpp / .cuh).
  std::vector<const Heredoc*> headers() const;
};

// Parses a .cute.result script. Never throws; a script without a kernel heredoc gives
// kernel() == nullptr (the caller reports it).
ChoreoScript parse_cute_result(std::string_view script);

// Expands ${VAR} and $VAR in `text` from `vars`; unknown variables become empty and are listed in
// `unknown` when given.
std::string expand_shell_vars(const std::string& text, const std::map<std::string, std::string>& vars,
                              std::vector<std::string>* unknown = nullptr);

// The signature of a .co GEMM kernel croq can bind to its kernel ABI, when the .co has one:
// a single __co__ function taking either
//   global T [M, K] a, global T [N, K] or [K, N] b, global U [M, N] c               (dense matmul)
//   global T [M, PK] a_packed, global u8 [M, MK] a_meta, global T [N, K] or [K, N] b,
//   global U [M, N] c                                                                 (2:4 sparse)
// optionally followed by `stream s` (then croq passes its stream and the kernel can be launched
// without a device synchronisation: `parallel.async<s>`). The sparse form takes A compressed as
// the WGMMA sparse instructions read it: a_packed the two kept values of every group of four
// ([M, K/2]), a_meta one nibble idx0 | idx1 << 2 per group, the low nibble first ([M, K/8]).
struct ChoreoMatmulSignature {
  std::string function;  // "matmul"
  std::string a_type;    // choreo type names: "f16", "bf16", "f32", "f8_e4m3"
  std::string c_type;
  bool b_col_major = true;    // B declared [N, K] (row.col form); false for [K, N]
  bool sparse24 = false;      // the 2:4 sparse form (bound to ABI version 2's croq_gemm)
  bool takes_stream = false;  // a trailing `stream` parameter
  bool shape_check = false;   // the .co defines `croq_shape_ok(m, n, k)`: the shapes it computes
};
// nullopt with `why` when the .co has no single GEMM-shaped __co__ function.
std::optional<ChoreoMatmulSignature> find_matmul_signature(std::string_view co_source, std::string* why = nullptr);

// C++ source of a shared object binding the kernel to croq's kernel ABI (include/croq/kernel_abi.h):
// it includes the generated .cu (by absolute path) and calls the kernel's host function with
// spanned views over croq's buffers.
//   dense:  exports croq_matmul (version 1);
//   sparse: exports croq_gemm for CROQ_OP_MATMUL_SPARSE24 (version 2) with the prepare pair, which
//           compresses croq's dense pruned A and its metadata into the kernel's a_packed and
//           a_meta once per input set, off the clock.
// Problems the kernel was not written for (other dtypes, the other B layout, padded leading
// dimensions, shapes croq_shape_ok refuses) get CROQ_UNSUPPORTED.
std::string abi_wrapper_source(const ChoreoMatmulSignature& sig, const std::string& cu_path);

// The -D macros among choreo's flags ("-DNAME=VALUE", "-DNAME"), for nvcc: choreo applies them
// to the tileflow (__co__) code only, and the host code of the generated .cu (croq_shape_ok, a
// main) must see the same values.
std::vector<std::string> choreo_macro_flags(const std::vector<std::string>& choreo_flags);

}  // namespace croq
