// The shapes of a sweep (docs/sweep.md): a manifest lists shapes x dtypes of one operator, in the
// order they are tuned. Three sources:
//   - built in: `typical`, the croq-tune-from-scratch skill's 14 typical shapes (two per scenario,
//     at about 1/4 and 3/4 of its range, all far from the reference 4096x8192x8192), for each
//     dtype asked for;
//   - a croq manifest (JSON, or TOML where croq was built with toml++):
//       {"schema": "croq-sweep-manifest-v1", "operator": "matmul", "dtypes": ["f16fp32"],
//        "shapes": [[768, 768, 768], "512x8192x8192", {"m": 64, "n": 64, "k": 64, "region": "near"}],
//        "keys": ["matmul_f32_64x64x64"]}
//   - the from-scratch skill's kernels/manifest.json, read as is: its `typical_shapes_for_scratch`
//     (dtype -> shapes) of 2:4 sparse GEMM; every other field is ignored.
// A shape is written M x N x K, in this order, never permuted.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::sweep {

// from_scratch: the operator's simplest kernel (croq's search: the family's default; the skill's
// `_fs` keys); from_current_best: the best kernel of the nearest tuned shape of the same operator
// and dtype (the skill's ai-tune-from-current-best).
enum class Mode { from_scratch, from_current_best };
const char* mode_name(Mode m);  // "from_scratch" | "from_current_best" (state.json's spelling)
std::optional<Mode> parse_mode(const std::string& text);  // also "scratch", "best", "from-scratch"

struct ShapeSpec {
  std::string op;     // canonical: matmul | gemm_sp
  std::string dtype;  // as written in the key: f16, e4m3, f16fp32, f32 ...
  int64_t m = 0, n = 0, k = 0;
  std::string region = "far";   // the skill's region: far | near
  std::string scenario;         // "square", "sweep_m", ... (built-ins)
  std::string key;              // set when the manifest names the key itself ("keys")

  std::string dims() const;     // "768x768x768"
};

struct Manifest {
  std::string source;  // "built-in typical", or the file
  std::vector<ShapeSpec> shapes;
};

// The task's shape key for a shape in a mode. from_scratch: gemm_sp -> the skill's
// `<dtype>_<M>x<N>x<K>_fs`, other operators `<op>_<dtype>_<M>x<N>x<K>_fs`; from_current_best:
// `<op>_<dtype>_<M>x<N>x<K>`. A shape that names its key keeps it.
std::string shape_key_for(const ShapeSpec& s, Mode mode);

// The names of the built-in manifests ("typical").
std::vector<std::string> builtin_manifest_names();
// A built-in manifest for an operator and its dtypes (empty: the operator's default dtypes:
// gemm_sp f16 and e4m3, matmul f16fp32). Throws Error(usage) for an unknown name or operator.
Manifest builtin_manifest(const std::string& name, const std::string& op, const std::vector<std::string>& dtypes);

// Reads a manifest file (either JSON format, or TOML). `op` and `dtypes` filter or fill in what the
// file leaves open (the skill's manifest is gemm_sp; `dtypes` picks among its dtypes). Throws
// Error(usage) naming the file, the field and the accepted forms; every shape is checked
// (operator, dtype, M x N x K) before anything runs.
Manifest load_manifest(const std::filesystem::path& file, const std::string& op, const std::vector<std::string>& dtypes);
// The same from a parsed document (tests; `source` names it in errors).
Manifest manifest_from_json(const json& doc, const std::string& source, const std::string& op,
                            const std::vector<std::string>& dtypes);

// Whether TOML manifests can be read (croq built with toml++).
bool toml_supported();

}  // namespace croq::sweep
