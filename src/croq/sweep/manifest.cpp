// Manifests of a sweep (manifest.hpp).
#include "croq/sweep/manifest.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/number.hpp"
#include "croq/workspace/dtype.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/operators.hpp"

#if CROQ_WITH_TOML
#include <toml++/toml.h>
#endif

namespace croq::sweep {

const char* mode_name(Mode m) { return m == Mode::from_scratch ? "from_scratch" : "from_current_best"; }

std::optional<Mode> parse_mode(const std::string& text) {
  std::string t = text;
  std::replace(t.begin(), t.end(), '-', '_');
  if (t == "from_scratch" || t == "scratch" || t == "fs") return Mode::from_scratch;
  if (t == "from_current_best" || t == "from_best" || t == "best" || t == "current_best") return Mode::from_current_best;
  return std::nullopt;
}

std::string ShapeSpec::dims() const { return fmt::format("{}x{}x{}", m, n, k); }

std::string shape_key_for(const ShapeSpec& s, Mode mode) {
  if (!s.key.empty()) return s.key;
  if (mode == Mode::from_scratch) {
    if (s.op == k_op_gemm_sp) return fmt::format("{}_{}_fs", s.dtype, s.dims());
    return fmt::format("{}_{}_{}_fs", s.op, s.dtype, s.dims());
  }
  return fmt::format("{}_{}_{}", s.op, s.dtype, s.dims());
}

namespace {

struct Typical {
  int64_t m, n, k;
  const char* scenario;
};

// The croq-tune-from-scratch skill's table, in its order.
constexpr Typical k_typical[] = {
    {768, 768, 768, "square"},         {12288, 12288, 12288, "square"},   {512, 8192, 8192, "sweep_m"},
    {16384, 8192, 8192, "sweep_m"},    {4096, 1024, 8192, "sweep_n"},     {4096, 32768, 8192, "sweep_n"},
    {4096, 8192, 512, "sweep_k"},      {4096, 8192, 32768, "sweep_k"},    {1024, 1024, 4096, "sweep_mn"},
    {12288, 12288, 4096, "sweep_mn"},  {1024, 8192, 1024, "sweep_mk"},    {12288, 8192, 12288, "sweep_mk"},
    {4096, 1024, 1024, "sweep_nk"},    {12288, 4096, 4096, "sweep_nk"},
};

std::string canonical_op(const std::string& op) {
  if (op.empty()) return op;
  std::string probe = op + "_f32_8x8x8";
  if (auto k = try_parse_shape_key(probe)) {
    if (auto c = try_shape_operator(*k)) return *c;
  }
  throw_usage(fmt::format("unknown operator '{}'", op), "the sweep tunes matmul or gemm_sp (2:4 sparse GEMM)");
}

std::vector<std::string> default_dtypes(const std::string& op) {
  if (op == k_op_gemm_sp) return {"f16", "e4m3"};
  return {"f16fp32"};
}

std::vector<std::string> expand_dtypes(const std::vector<std::string>& dtypes, const std::string& op) {
  std::vector<std::string> out;
  for (const auto& d : dtypes) {
    if (d == "all") {
      for (auto& x : default_dtypes(op)) out.push_back(x);
      continue;
    }
    if (!parse_dtype_pair(d)) {
      throw_usage(fmt::format("unknown dtype '{}'", d), "accepted spellings: " + known_dtype_spellings() + ", or all");
    }
    out.push_back(d);
  }
  return out;
}

// Checks that the key is one croq can measure (operator, dtype, the operator's constraints).
void check_shape(const ShapeSpec& s, const std::string& source) {
  std::string key = shape_key_for(s, Mode::from_current_best);
  try {
    check_measurable_shape(parse_shape_key(key));
    if (!s.key.empty()) check_measurable_shape(parse_shape_key(s.key));
  } catch (const Error& e) {
    throw Error(ExitCode::usage, fmt::format("{}: shape {} of {} {}: {}", source, s.dims(), s.op, s.dtype, e.what()),
                e.hint());
  }
}

std::optional<int64_t> dim_of(const json& j) {
  if (j.is_number_integer() && j.get<int64_t>() > 0) return j.get<int64_t>();
  if (j.is_string()) {
    if (auto v = parse_decimal_integer(j.get<std::string>()); v && *v > 0) return *v;
  }
  return std::nullopt;
}

const json* field_ci(const json& obj, const char* name) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string k = it.key();
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (k == name) return &it.value();
  }
  return nullptr;
}

// One shape of a list: [M, N, K], "MxNxK", {"m":..,"n":..,"k":..} or {"shape": [..]} (+ region,
// scenario, key).
ShapeSpec parse_shape(const json& j, const std::string& where) {
  ShapeSpec s;
  const json* dims = &j;
  if (j.is_object()) {
    if (const json* sh = field_ci(j, "shape")) dims = sh;
  }
  bool ok = false;
  if (dims->is_array() && dims->size() == 3) {
    auto m = dim_of((*dims)[0]), n = dim_of((*dims)[1]), k = dim_of((*dims)[2]);
    if (m && n && k) {
      s.m = *m, s.n = *n, s.k = *k;
      ok = true;
    }
  } else if (dims->is_string()) {
    long long m = 0, n = 0, k = 0;
    char tail = 0;
    const std::string t = dims->get<std::string>();
    if (std::sscanf(t.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) == 3 && m > 0 && n > 0 && k > 0) {
      s.m = m, s.n = n, s.k = k;
      ok = true;
    }
  } else if (dims->is_object()) {
    const json* m = field_ci(*dims, "m");
    const json* n = field_ci(*dims, "n");
    const json* k = field_ci(*dims, "k");
    if (m && n && k && dim_of(*m) && dim_of(*n) && dim_of(*k)) {
      s.m = *dim_of(*m), s.n = *dim_of(*n), s.k = *dim_of(*k);
      ok = true;
    }
  }
  if (!ok) {
    throw_usage(fmt::format("{}: {} is not a shape", where, dump_compact(j)),
                "write a shape as [M, N, K], \"MxNxK\" or {\"m\": M, \"n\": N, \"k\": K} (positive whole numbers)");
  }
  if (j.is_object()) {
    if (auto r = get_string(j, "region")) {
      if (*r != "far" && *r != "near") throw_usage(fmt::format("{}: region '{}' is neither far nor near", where, *r));
      s.region = *r;
    }
    if (auto sc = get_string(j, "scenario")) s.scenario = *sc;
  }
  return s;
}

std::vector<std::string> string_list(const json& doc, const char* name, const std::string& source) {
  std::vector<std::string> out;
  if (!doc.contains(name)) return out;
  const json& v = doc[name];
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) throw_usage(fmt::format("{}: `{}` must be a list of strings", source, name));
  for (const auto& x : v) {
    if (!x.is_string()) throw_usage(fmt::format("{}: `{}` must be a list of strings", source, name));
    out.push_back(x.get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<std::string> builtin_manifest_names() { return {"typical"}; }

Manifest builtin_manifest(const std::string& name, const std::string& op_in, const std::vector<std::string>& dtypes_in) {
  if (name != "typical") {
    throw_usage(fmt::format("no built-in manifest '{}'", name),
                "built in: typical (the 14 typical shapes of the from-scratch sweep); or give a manifest file");
  }
  const std::string op = canonical_op(op_in.empty() ? std::string(k_op_gemm_sp) : op_in);
  auto dtypes = expand_dtypes(dtypes_in.empty() ? default_dtypes(op) : dtypes_in, op);
  Manifest m;
  m.source = "built-in typical";
  for (const auto& d : dtypes) {
    for (const auto& t : k_typical) {
      ShapeSpec s;
      s.op = op;
      s.dtype = d;
      s.m = t.m, s.n = t.n, s.k = t.k;
      s.scenario = t.scenario;
      check_shape(s, m.source);
      m.shapes.push_back(s);
    }
  }
  return m;
}

Manifest manifest_from_json(const json& doc, const std::string& source, const std::string& op_in,
                            const std::vector<std::string>& dtypes_in) {
  if (!doc.is_object()) throw_usage(source + ": a manifest is a JSON object", "see docs/sweep.md for the formats");
  Manifest m;
  m.source = source;
  if (doc.contains("typical_shapes_for_scratch")) {
    // The from-scratch skill's manifest.json: dtype -> shapes, of 2:4 sparse GEMM.
    const json& t = doc["typical_shapes_for_scratch"];
    const std::string op = canonical_op(op_in.empty() ? std::string(k_op_gemm_sp) : op_in);
    std::vector<std::string> want = dtypes_in.empty() ? std::vector<std::string>{} : expand_dtypes(dtypes_in, op);
    auto add = [&](const std::string& dtype, const json& list) {
      if (!want.empty() && std::find(want.begin(), want.end(), dtype) == want.end()) return;
      if (!parse_dtype_pair(dtype)) {
        throw_usage(fmt::format("{}: typical_shapes_for_scratch has an unknown dtype '{}'", source, dtype),
                    "accepted spellings: " + known_dtype_spellings());
      }
      if (!list.is_array()) throw_usage(fmt::format("{}: typical_shapes_for_scratch.{} is not a list", source, dtype));
      for (size_t i = 0; i < list.size(); ++i) {
        ShapeSpec s = parse_shape(list[i], fmt::format("{}: typical_shapes_for_scratch.{}[{}]", source, dtype, i));
        s.op = op;
        s.dtype = dtype;
        check_shape(s, source);
        m.shapes.push_back(s);
      }
    };
    if (t.is_object()) {
      for (auto it = t.begin(); it != t.end(); ++it) add(it.key(), it.value());
    } else if (t.is_array()) {
      // A single list: every dtype asked for (default f16).
      for (const auto& d : want.empty() ? std::vector<std::string>{"f16"} : want) add(d, t);
    } else {
      throw_usage(source + ": typical_shapes_for_scratch must map each dtype to a list of shapes");
    }
    if (m.shapes.empty()) {
      throw_usage(fmt::format("{}: no shape of the dtypes asked for", source),
                  "the manifest lists dtypes " + [&] {
                    std::string names;
                    if (t.is_object())
                      for (auto it = t.begin(); it != t.end(); ++it) names += (names.empty() ? "" : ", ") + it.key();
                    return names.empty() ? std::string("(none)") : names;
                  }());
    }
    return m;
  }
  if (auto schema = get_string(doc, "schema"); schema && *schema != "croq-sweep-manifest-v1") {
    throw_usage(fmt::format("{}: schema '{}' is not croq-sweep-manifest-v1", source, *schema));
  }
  std::string op = get_string(doc, "operator").value_or(get_string(doc, "op").value_or(""));
  if (!op_in.empty()) {
    if (!op.empty() && canonical_op(op) != canonical_op(op_in)) {
      throw_usage(fmt::format("{} is a manifest of {}, not {}", source, op, op_in), "leave --op out, or use another manifest");
    }
    op = op_in;
  }
  std::vector<std::string> dtypes = string_list(doc, "dtypes", source);
  if (auto d = get_string(doc, "dtype")) dtypes.push_back(*d);
  if (!dtypes_in.empty()) dtypes = dtypes_in;
  const bool has_shapes = doc.contains("shapes");
  if (has_shapes) {
    if (op.empty()) throw_usage(source + ": name the operator (\"operator\": \"matmul\" or \"gemm_sp\")");
    op = canonical_op(op);
    if (dtypes.empty()) dtypes = default_dtypes(op);
    dtypes = expand_dtypes(dtypes, op);
    if (!doc["shapes"].is_array()) throw_usage(source + ": `shapes` must be a list");
    for (const auto& d : dtypes) {
      for (size_t i = 0; i < doc["shapes"].size(); ++i) {
        ShapeSpec s = parse_shape(doc["shapes"][i], fmt::format("{}: shapes[{}]", source, i));
        s.op = op;
        s.dtype = d;
        check_shape(s, source);
        m.shapes.push_back(s);
      }
    }
  }
  for (const auto& key : string_list(doc, "keys", source)) {
    std::string why;
    auto k = try_parse_shape_key(key, &why);
    if (!k) throw_usage(fmt::format("{}: key '{}': {}", source, key, why), accepted_shape_key_forms());
    ShapeSpec s;
    try {
      s.op = check_measurable_shape(*k);
    } catch (const Error& e) {
      throw Error(ExitCode::usage, fmt::format("{}: key '{}': {}", source, key, e.what()), e.hint());
    }
    s.dtype = k->dtype_token;
    s.m = k->m(), s.n = k->n(), s.k = k->k();
    s.key = key;
    m.shapes.push_back(s);
  }
  if (m.shapes.empty()) {
    throw_usage(source + ": the manifest lists no shape",
                "give `shapes` (with `operator` and `dtypes`) or `keys`, or the skill's `typical_shapes_for_scratch`");
  }
  return m;
}

bool toml_supported() { return CROQ_WITH_TOML != 0; }

#if CROQ_WITH_TOML
namespace {
json toml_to_json(const toml::node& n) {
  if (auto t = n.as_table()) {
    json o = json::object();
    for (auto&& [k, v] : *t) o[std::string(k.str())] = toml_to_json(v);
    return o;
  }
  if (auto a = n.as_array()) {
    json arr = json::array();
    for (auto&& v : *a) arr.push_back(toml_to_json(v));
    return arr;
  }
  if (auto v = n.as_integer()) return json(v->get());
  if (auto v = n.as_floating_point()) return json(v->get());
  if (auto v = n.as_boolean()) return json(v->get());
  if (auto v = n.as_string()) return json(v->get());
  return json(nullptr);
}
}  // namespace
#endif

Manifest load_manifest(const fs::path& file, const std::string& op, const std::vector<std::string>& dtypes) {
  auto text = read_file(file);
  if (!text) throw Error(ExitCode::not_found, "no manifest " + file.string(), "give an existing file, or --manifest typical");
  const bool is_toml = file.extension() == ".toml";
  if (is_toml) {
#if CROQ_WITH_TOML
    try {
      toml::table t = toml::parse(*text, file.string());
      return manifest_from_json(toml_to_json(t), file.string(), op, dtypes);
    } catch (const toml::parse_error& e) {
      throw_usage(fmt::format("{} is not TOML: {} (line {})", file.string(), std::string(e.description()),
                              e.source().begin.line));
    }
#else
    throw_usage(file.string() + ": this croq was built without TOML support",
                "write the manifest as JSON (docs/sweep.md), or install libtomlplusplus-dev and rebuild croq");
#endif
  }
  std::string err;
  auto doc = try_parse_json(*text, &err);
  if (!doc) {
    throw_usage(fmt::format("{} is not JSON: {}", file.string(), err),
                "a manifest is JSON (or TOML with a .toml name); see docs/sweep.md");
  }
  return manifest_from_json(*doc, file.string(), op, dtypes);
}

}  // namespace croq::sweep
