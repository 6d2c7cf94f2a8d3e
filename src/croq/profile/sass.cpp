// SASS parsing, instruction mix and comparison (sass.hpp). The severity rules are documented in
// docs/classifier.md ("SASS comparison").
#include "croq/profile/sass.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"
#include "croq/util/text.hpp"

namespace croq::profile {

namespace {

void add_instruction(SassFunction& f, const std::string& raw, long long address = -1) {
  std::string text = trim(raw);
  if (!text.empty() && text.back() == ';') text = trim(text.substr(0, text.size() - 1));
  if (text.empty()) return;
  std::string rest = text;
  if (rest[0] == '@') {  // predicate: "@P0", "@!PT"
    size_t sp = rest.find_first_of(" \t");
    if (sp == std::string::npos) return;
    rest = trim(rest.substr(sp));
  }
  size_t sp = rest.find_first_of(" \t");
  SassInstruction ins;
  ins.opcode = sp == std::string::npos ? rest : rest.substr(0, sp);
  ins.base = ins.opcode.substr(0, ins.opcode.find('.'));
  ins.text = text;
  if (ins.base.empty() || !std::isupper(static_cast<unsigned char>(ins.base[0]))) return;
  ins.address = address;
  if (ins.base == "BRA" || ins.base == "BRX" || ins.base == "JMP") {
    static const std::regex hex_target(R"(\b0x([0-9a-fA-F]+)\b)");
    std::smatch t;
    const std::string operands = sp == std::string::npos ? std::string() : rest.substr(sp);
    if (std::regex_search(operands, t, hex_target)) ins.target = std::stoll(t[1].str(), nullptr, 16);
  }
  // Highest general register referenced (R0..R255; RZ and uniform URn excluded).
  const std::string& s = text;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] != 'R' || !std::isdigit(static_cast<unsigned char>(s[i + 1]))) continue;
    if (i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_')) continue;
    size_t j = i + 1;
    int v = 0;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) v = v * 10 + (s[j++] - '0');
    if (v < 256) f.max_register_index = std::max(f.max_register_index, v);
  }
  f.instructions.push_back(std::move(ins));
}

bool parse_ncu_source_csv(std::string_view text, std::vector<SassFunction>& out) {
  // Only when one of the first CSV rows (after ncu's "==" log lines) is a header with a "Source"
  // cell: ncu's source page. ncu 2025 prints a `"Kernel Name","<name>",` row before each header.
  bool is_source_page = false;
  size_t pos = 0;
  for (int seen = 0; seen < 6 && pos < text.size();) {
    size_t e = text.find('\n', pos);
    std::string_view line = text.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos);
    pos = e == std::string_view::npos ? text.size() : e + 1;
    if (starts_with(line, "==")) continue;  // ncu log lines before the table
    ++seen;
    if (line.find("\"Source\"") != std::string_view::npos || starts_with(line, "Source,") ||
        line.find(",Source,") != std::string_view::npos) {
      is_source_page = true;
      break;
    }
  }
  if (!is_source_page) return false;
  auto rows = split_csv(text);
  int src = -1, kname = -1;
  std::string pending_name;
  SassFunction* cur = nullptr;
  for (const auto& row : rows) {
    if (row.size() >= 2 && row[0] == "Kernel Name") {  // the name of the kernel whose table follows
      pending_name = row[1];
      continue;
    }
    auto it = std::find(row.begin(), row.end(), "Source");
    if (it != row.end()) {  // a header row (one per kernel when several are printed)
      src = static_cast<int>(it - row.begin());
      auto kn = std::find(row.begin(), row.end(), "Kernel Name");
      kname = kn == row.end() ? -1 : static_cast<int>(kn - row.begin());
      out.push_back(SassFunction{});
      out.back().name = pending_name.empty() ? "(ncu source page)" : pending_name;
      pending_name.clear();
      cur = &out.back();
      continue;
    }
    if (!cur || src < 0 || static_cast<size_t>(src) >= row.size()) continue;
    if (kname >= 0 && static_cast<size_t>(kname) < row.size() && cur->instructions.empty()) cur->name = row[static_cast<size_t>(kname)];
    add_instruction(*cur, row[static_cast<size_t>(src)]);
  }
  return true;
}

}  // namespace

std::vector<SassFunction> parse_sass(std::string_view text, const std::string& origin) {
  std::vector<SassFunction> out;
  if (!parse_ncu_source_csv(text, out)) {
    static const std::regex function_header(R"(^\s*Function\s*:\s*(\S+))");
    static const std::regex section_header(R"(^\s*\.text\.([^:\s]+):)");
    static const std::regex instruction(R"(/\*([0-9a-fA-F]{4,})\*/\s+([^;]+;))");
    SassFunction* cur = nullptr;
    for (const std::string& line : split_lines(text)) {
      std::smatch m;
      if (std::regex_search(line, m, function_header) || std::regex_search(line, m, section_header)) {
        out.push_back(SassFunction{});
        out.back().name = m[1].str();
        cur = &out.back();
        continue;
      }
      if (std::regex_search(line, m, instruction)) {
        if (!cur) {
          out.push_back(SassFunction{});
          out.back().name = "(unnamed)";
          cur = &out.back();
        }
        add_instruction(*cur, m[2].str(), std::stoll(m[1].str(), nullptr, 16));
      }
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const SassFunction& f) { return f.instructions.empty(); }), out.end());
  if (out.empty()) {
    throw Error(ExitCode::usage, fmt::format("{} holds no SASS instructions", origin),
                "give the output of `cuobjdump -sass`, `nvdisasm`, or `ncu --import R --page source --print-source sass --csv`");
  }
  return out;
}

void apply_resource_usage(std::vector<SassFunction>& functions, std::string_view res) {
  static const std::regex fn(R"(^\s*Function\s+([^\s:]+)\s*:)");
  static const std::regex reg(R"(REG:(\d+))");
  static const std::regex local(R"(LOCAL:(\d+))");
  std::string current;
  for (const std::string& line : split_lines(res)) {
    std::smatch m;
    if (std::regex_search(line, m, fn)) {
      current = m[1].str();
      continue;
    }
    if (current.empty()) continue;
    std::smatch r, l;
    bool has_reg = std::regex_search(line, r, reg);
    bool has_local = std::regex_search(line, l, local);
    if (!has_reg && !has_local) continue;
    for (auto& f : functions) {
      if (f.name != current) continue;
      if (has_reg) f.registers = std::stoi(r[1].str());
      if (has_local) f.local_bytes = std::stoi(l[1].str());
    }
    current.clear();
  }
}

const SassFunction& select_function(const std::vector<SassFunction>& functions, const std::string& pattern) {
  if (!pattern.empty()) {
    std::regex re;
    try {
      re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error(ExitCode::usage, fmt::format("\"{}\" is not a valid regular expression: {}", pattern, e.what()));
    }
    const SassFunction* best = nullptr;
    for (const auto& f : functions) {
      if (std::regex_search(f.name, re) && (!best || f.instructions.size() > best->instructions.size())) best = &f;
    }
    if (!best) {
      std::string names;
      for (const auto& f : functions) names += (names.empty() ? "" : ", ") + preview(f.name, 60);
      throw Error(ExitCode::not_found, fmt::format("no SASS function matches \"{}\" (functions: {})", pattern, names));
    }
    return *best;
  }
  return *std::max_element(functions.begin(), functions.end(), [](const SassFunction& a, const SassFunction& b) {
    return a.instructions.size() < b.instructions.size();
  });
}

namespace {

const std::set<std::string>& tensor_ops() {
  static const std::set<std::string> s = {"HGMMA", "QGMMA", "IGMMA", "BGMMA", "HMMA",  "IMMA",
                                          "DMMA",  "BMMA",  "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCMMA", "OMMA"};
  return s;
}

std::string op_class(const std::string& b) {
  static const std::map<std::string, std::string> table = [] {
    std::map<std::string, std::string> t;
    for (const char* o : {"FFMA", "FMUL", "FADD", "FMNMX", "FSETP", "FSEL", "MUFU", "FCHK", "FSET", "FFMA2", "FADD2", "FMUL2"}) t[o] = "fp32";
    for (const char* o : {"HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2", "HSET2"}) t[o] = "fp16";
    for (const char* o : {"IMAD", "IADD3", "IADD", "LOP3", "SHF", "LEA", "ISETP", "IMNMX", "POPC", "FLO", "BREV", "PRMT",
                          "SEL", "IABS", "VIADD", "IMUL", "LOP", "SHL", "SHR", "VIMNMX", "UIADD3", "UIMAD", "ULOP3",
                          "USHF", "ULEA", "UISETP", "USEL", "UPRMT"})
      t[o] = "int";
    for (const char* o : {"LDG", "LD"}) t[o] = "global_load";
    for (const char* o : {"STG", "ST", "ATOMG", "RED", "ATOM", "REDG"}) t[o] = "global_store";
    for (const char* o : {"LDS", "STS", "LDSM", "STSM", "ATOMS", "LDGSTS"}) t[o] = "shared";
    for (const char* o : {"UTMALDG", "UTMASTG", "UTMAPF", "UTMAREDG", "UTMACCTL", "UBLKCP", "UBLKRED", "UBLKPF"}) t[o] = "tma";
    for (const char* o : {"BAR", "SYNCS", "MEMBAR", "DEPBAR", "WARPGROUP", "WARPSYNC", "ERRBAR", "FENCE", "LDGDEPBAR",
                          "ARRIVES", "CCTL"})
      t[o] = "barrier";
    for (const char* o : {"LDL", "STL"}) t[o] = "local";
    for (const char* o : {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "NOP", "YIELD", "BPT",
                          "BREAK", "KILL", "ELECT", "VOTE", "VOTEU", "WARPGROUP_ARRIVE"})
      t[o] = "control";
    for (const char* o : {"F2F", "F2FP", "I2F", "F2I", "I2I", "FRND", "I2FP", "F2IP"}) t[o] = "convert";
    return t;
  }();
  if (tensor_ops().count(b)) return "tensor";
  auto it = table.find(b);
  return it == table.end() ? "other" : it->second;
}

int access_width(const std::string& opcode) {
  int width = 32;
  size_t p = opcode.find('.');
  while (p != std::string::npos) {
    size_t q = opcode.find('.', p + 1);
    std::string mod = opcode.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
    if (mod == "U8" || mod == "S8") width = 8;
    else if (mod == "U16" || mod == "S16") width = 16;
    else if (mod == "64") width = 64;
    else if (mod == "128") width = 128;
    else if (mod == "256") width = 256;
    p = q;
  }
  return width;
}

}  // namespace

std::string InstructionMix::tensor_family() const {
  std::map<std::string, int> fam;
  for (const auto& [op, n] : tensor_ops) fam[op.substr(0, op.find('.'))] += n;
  std::string best;
  int most = 0;
  for (const auto& [f, n] : fam) {
    if (n > most) {
      most = n;
      best = f;
    }
  }
  return best;
}

int InstructionMix::max_global_load_width() const {
  return global_load_widths.empty() ? 0 : global_load_widths.rbegin()->first;
}

InstructionMix instruction_mix(const SassFunction& f) {
  InstructionMix mix;
  for (const auto& ins : f.instructions) {
    ++mix.total;
    const std::string cls = op_class(ins.base);
    ++mix.by_class[cls];
    ++mix.opcodes[ins.base];
    if (cls == "tensor") ++mix.tensor_ops[ins.opcode];
    if (ins.base == "LDG") ++mix.global_load_widths[access_width(ins.opcode)];
    if (ins.base == "STG") ++mix.global_store_widths[access_width(ins.opcode)];
    if (ins.base == "LDS") ++mix.shared_load_widths[access_width(ins.opcode)];
    if (ins.base == "STS") ++mix.shared_store_widths[access_width(ins.opcode)];
    if (ins.base == "LDSM") ++mix.ldsm;
    if (ins.base == "STSM") ++mix.stsm;
    if (ins.base == "LDGSTS") ++mix.ldgsts;
    if (cls == "tma") ++mix.tma;
    if (cls == "barrier") ++mix.barriers;
    if (ins.base == "LDL") ++mix.local_loads;
    if (ins.base == "STL") ++mix.local_stores;
  }
  // Loops: backward branches. Local accesses inside a loop that runs tensor-core instructions.
  std::vector<std::pair<long long, long long>> loops;
  bool addressed = !f.instructions.empty();
  for (const auto& ins : f.instructions) {
    addressed = addressed && ins.address >= 0;
    if (ins.target >= 0 && ins.address >= 0 && ins.target <= ins.address) loops.emplace_back(ins.target, ins.address);
  }
  if (addressed) {
    std::vector<std::pair<long long, long long>> tensor_loops;
    for (const auto& [lo, hi] : loops) {
      const bool tensor = std::any_of(f.instructions.begin(), f.instructions.end(), [&](const SassInstruction& i) {
        return i.address >= lo && i.address <= hi && op_class(i.base) == "tensor";
      });
      if (tensor) tensor_loops.emplace_back(lo, hi);
    }
    // Only the smallest loop around each tensor-core instruction: a persistent kernel's tile loop
    // holds its k loop, and what it pays once per tile is in the first, not in the second. (ptxas
    // lays code out of line, so the ranges of backward branches overlap without nesting.)
    std::set<size_t> smallest;
    for (const auto& ins : f.instructions) {
      if (op_class(ins.base) != "tensor") continue;
      std::optional<size_t> pick;
      for (size_t i = 0; i < tensor_loops.size(); ++i) {
        const auto& [lo, hi] = tensor_loops[i];
        if (ins.address < lo || ins.address > hi) continue;
        if (!pick || hi - lo < tensor_loops[*pick].second - tensor_loops[*pick].first) pick = i;
      }
      if (pick) smallest.insert(*pick);
    }
    std::vector<std::pair<long long, long long>> innermost;
    for (size_t i : smallest) innermost.push_back(tensor_loops[i]);
    tensor_loops = std::move(innermost);
    mix.tensor_loops = static_cast<int>(tensor_loops.size());
    int inside = 0;
    for (const auto& ins : f.instructions) {
      if (ins.base != "LDL" && ins.base != "STL") continue;
      inside += std::any_of(tensor_loops.begin(), tensor_loops.end(),
                            [&](const auto& r) { return ins.address >= r.first && ins.address <= r.second; });
    }
    mix.local_in_tensor_loops = inside;
  }
  if (f.registers) {
    mix.registers = f.registers;
    mix.registers_source = "cuobjdump -res-usage";
  } else if (f.max_register_index >= 0) {
    mix.registers = f.max_register_index + 1;
    mix.registers_source = "estimated: highest Rn referenced + 1";
  }
  return mix;
}

namespace {

json width_map(const std::map<int, int>& m) {
  json j = json::object();
  for (const auto& [w, n] : m) j[std::to_string(w)] = n;
  return j;
}

}  // namespace

json mix_json(const InstructionMix& mix) {
  json j;
  j["instructions"] = mix.total;
  j["registers"] = mix.registers ? json(*mix.registers) : json(nullptr);
  j["registers_source"] = mix.registers_source.empty() ? json(nullptr) : json(mix.registers_source);
  j["by_class"] = mix.by_class;
  j["tensor_family"] = mix.tensor_family().empty() ? json(nullptr) : json(mix.tensor_family());
  j["tensor_ops"] = mix.tensor_ops;
  j["global_load_widths_bits"] = width_map(mix.global_load_widths);
  j["global_store_widths_bits"] = width_map(mix.global_store_widths);
  j["shared_load_widths_bits"] = width_map(mix.shared_load_widths);
  j["shared_store_widths_bits"] = width_map(mix.shared_store_widths);
  j["ldsm"] = mix.ldsm;
  j["stsm"] = mix.stsm;
  j["ldgsts"] = mix.ldgsts;
  j["tma"] = mix.tma;
  j["barriers"] = mix.barriers;
  j["local_loads"] = mix.local_loads;
  j["local_stores"] = mix.local_stores;
  j["tensor_loops"] = mix.tensor_loops;
  j["local_in_tensor_loops"] = mix.local_in_tensor_loops ? json(*mix.local_in_tensor_loops) : json(nullptr);
  j["opcodes"] = mix.opcodes;
  return j;
}

namespace {

std::string top_op(const std::map<std::string, int>& ops) {
  std::string best;
  int most = 0;
  for (const auto& [op, n] : ops) {
    if (n > most) {
      most = n;
      best = op;
    }
  }
  return best;
}

int count(const std::map<std::string, int>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

int severity_rank(const std::string& s) { return s == "high" ? 3 : s == "medium" ? 2 : 1; }

}  // namespace

std::vector<Divergence> compare_mix(const InstructionMix& c, const InstructionMix& b) {
  std::vector<Divergence> out;
  auto add = [&](std::string sev, std::string cat, std::string reason, double weight, json cj, json bj) {
    out.push_back(Divergence{std::move(sev), std::move(cat), std::move(reason), weight, std::move(cj), std::move(bj)});
  };
  const std::string cf = c.tensor_family(), bf = b.tensor_family();
  const int ct = count(c.by_class, "tensor"), bt = count(b.by_class, "tensor");
  // 1. Tensor cores.
  if (bt > 0 && ct == 0) {
    add("high", "tensor_core",
        fmt::format("baseline runs its math on the tensor cores ({} x{}); candidate has no tensor-core instruction "
                    "({} FFMA, {} HFMA2: the FP32/FP16 pipes peak far below the tensor cores)",
                    top_op(b.tensor_ops), bt, count(c.opcodes, "FFMA"), count(c.opcodes, "HFMA2")),
        100, json{{"tensor_instructions", 0}, {"ffma", count(c.opcodes, "FFMA")}},
        json{{"tensor_instructions", bt}, {"tensor_ops", b.tensor_ops}});
  } else if (bt > 0 && ct > 0 && cf != bf) {
    std::string why = bf == "HGMMA" || bf == "QGMMA"
                          ? "warpgroup MMA (wgmma) reads operands from shared memory asynchronously and is the only way to "
                            "reach sm_90's tensor peak"
                          : "a different tensor-core path";
    add("high", "tensor_core",
        fmt::format("baseline uses {} ({}), candidate {} ({}): {}", bf, top_op(b.tensor_ops), cf, top_op(c.tensor_ops), why),
        90, json{{"tensor_family", cf}, {"tensor_ops", c.tensor_ops}}, json{{"tensor_family", bf}, {"tensor_ops", b.tensor_ops}});
  } else if (bt > 0 && ct > 0 && top_op(c.tensor_ops) != top_op(b.tensor_ops)) {
    add("medium", "tensor_core",
        fmt::format("same tensor-core family ({}) but another shape or precision: baseline {}, candidate {}", bf,
                    top_op(b.tensor_ops), top_op(c.tensor_ops)),
        60, json{{"tensor_ops", c.tensor_ops}}, json{{"tensor_ops", b.tensor_ops}});
  }
  // 2. Local memory (spills).
  int cl = c.local_loads + c.local_stores, bl = b.local_loads + b.local_stores;
  if (cl > 0 && bl == 0) {
    // Where they are decides what they cost: in the tensor-core loop every k step pays them,
    // outside it (set-up, per-tile bookkeeping, epilogue) once per tile.
    const bool outside = c.local_in_tensor_loops && *c.local_in_tensor_loops == 0 && c.tensor_loops > 0;
    json cj{{"ldl", c.local_loads}, {"stl", c.local_stores}};
    if (c.local_in_tensor_loops) cj["in_tensor_loops"] = *c.local_in_tensor_loops;
    if (outside) {
      add("low", "local_memory",
          fmt::format("candidate uses local memory ({} LDL, {} STL), none of it inside its tensor-core loop: spills paid "
                      "once per tile, not per k step; baseline none",
                      c.local_loads, c.local_stores),
          40, cj, json{{"ldl", 0}, {"stl", 0}});
    } else {
      add("high", "local_memory",
          fmt::format("candidate uses local memory ({} LDL, {} STL: register spills or local arrays{}); baseline none",
                      c.local_loads, c.local_stores,
                      c.local_in_tensor_loops ? fmt::format(", {} of them inside its tensor-core loop", *c.local_in_tensor_loops)
                                              : std::string()),
          95, cj, json{{"ldl", 0}, {"stl", 0}});
    }
  }
  // 3. TMA / bulk copies.
  if (b.tma > 0 && c.tma == 0) {
    add("medium", "tma",
        fmt::format("baseline moves tiles with TMA ({} UTMALDG/UBLKCP-class instructions); candidate copies with {} "
                    "LDG{}", b.tma, count(c.opcodes, "LDG"),
                    c.ldgsts > 0 ? fmt::format(" and {} LDGSTS (cp.async)", c.ldgsts) : std::string(" + STS through registers")),
        70, json{{"tma", 0}, {"ldg", count(c.opcodes, "LDG")}, {"ldgsts", c.ldgsts}}, json{{"tma", b.tma}});
  } else if (b.ldgsts > 0 && c.ldgsts == 0 && c.tma == 0 && count(c.opcodes, "LDG") > 0) {
    add("medium", "async_copy",
        fmt::format("baseline copies global->shared asynchronously ({} LDGSTS); candidate through registers (LDG + STS)",
                    b.ldgsts),
        65, json{{"ldgsts", 0}}, json{{"ldgsts", b.ldgsts}});
  }
  // 4. Global load width.
  int cw = c.max_global_load_width(), bw = b.max_global_load_width();
  if (cw > 0 && cw < 128 && (bw >= 128 || b.tma > 0)) {
    add("medium", "global_width",
        fmt::format("candidate's widest global load is {}-bit; baseline {}", cw,
                    bw >= 128 ? fmt::format("uses {}-bit loads", bw) : std::string("loads through TMA")),
        60, json{{"global_load_widths_bits", width_map(c.global_load_widths)}},
        json{{"global_load_widths_bits", width_map(b.global_load_widths)}, {"tma", b.tma}});
  }
  // 5. Shared-memory operand loads for MMA.
  if (ct > 0 && c.ldsm == 0 && count(c.opcodes, "LDS") > 0 && (b.ldsm > 0 || bf == "HGMMA" || bf == "QGMMA")) {
    add("medium", "shared_matrix_loads",
        fmt::format("candidate feeds its MMAs with plain LDS ({}); baseline uses {}", count(c.opcodes, "LDS"),
                    b.ldsm > 0 ? fmt::format("LDSM (ldmatrix) x{}", b.ldsm) : std::string("shared-memory descriptors (wgmma)")),
        50, json{{"lds", count(c.opcodes, "LDS")}, {"ldsm", 0}}, json{{"ldsm", b.ldsm}});
  }
  // 6. Registers.
  if (c.registers && b.registers) {
    double ratio = static_cast<double>(*c.registers) / std::max(1, *b.registers);
    if (ratio > 1.25 && *c.registers > 128) {
      add("medium", "registers",
          fmt::format("candidate uses {} registers per thread, baseline {}: fewer resident warps", *c.registers, *b.registers),
          55, json{{"registers", *c.registers}}, json{{"registers", *b.registers}});
    } else if (ratio < 0.5 && *b.registers >= 128) {
      add("low", "registers",
          fmt::format("candidate uses {} registers per thread, baseline {}: the baseline keeps a much larger accumulator "
                      "tile in registers (more reuse per load)", *c.registers, *b.registers),
          35, json{{"registers", *c.registers}}, json{{"registers", *b.registers}});
    }
  }
  // 7. Barrier density.
  if (c.total > 0 && b.total > 0) {
    double cd = 100.0 * c.barriers / c.total, bd = 100.0 * b.barriers / b.total;
    if (cd > 2.0 * bd && cd > 1.0) {
      add("low", "barriers",
          fmt::format("candidate has {:.1f} synchronisation instructions per 100, baseline {:.1f}", cd, bd), 30,
          json{{"barriers", c.barriers}, {"per_100", std::round(cd * 10) / 10}},
          json{{"barriers", b.barriers}, {"per_100", std::round(bd * 10) / 10}});
    }
  }
  // 8. Static instruction count.
  if (c.total > 0 && b.total > 0) {
    double ratio = static_cast<double>(c.total) / b.total;
    if (ratio > 1.5) {
      add("low", "instruction_count",
          fmt::format("candidate has {} instructions, {:.1f}x the baseline's {}: redundant or over-unrolled code", c.total,
                      ratio, b.total),
          20, json{{"instructions", c.total}}, json{{"instructions", b.total}});
    } else if (ratio < 1.0 / 3.0) {
      add("low", "instruction_count",
          fmt::format("candidate has {} instructions, the baseline {}: the baseline unrolls and pipelines its main loop "
                      "much further", c.total, b.total),
          15, json{{"instructions", c.total}}, json{{"instructions", b.total}});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Divergence& x, const Divergence& y) {
    if (severity_rank(x.severity) != severity_rank(y.severity)) return severity_rank(x.severity) > severity_rank(y.severity);
    return x.weight > y.weight;
  });
  return out;
}

json divergences_json(const std::vector<Divergence>& d) {
  json a = json::array();
  int rank = 1;
  for (const auto& x : d) {
    a.push_back({{"rank", rank++},
                 {"severity", x.severity},
                 {"category", x.category},
                 {"reason", x.reason},
                 {"candidate", x.candidate},
                 {"baseline", x.baseline}});
  }
  return a;
}

}  // namespace croq::profile
