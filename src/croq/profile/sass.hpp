// SASS (the GPU's machine code) of a candidate and of the library baseline: parsing, instruction
// mix, and a comparison that ranks how the two differ (the seeds' sass_compare).
//
// Inputs understood:
//  - `cuobjdump -sass FILE` text: "Function : <name>" headers, instruction lines
//    "/*0040*/   @!P0 LDG.E.128 R4, desc[UR6][R2.64] ;   /* 0x... */" (the encoding lines that
//    follow are skipped);
//  - `nvdisasm` text: ".text.<name>:" section labels and the same "/*addr*/ INSTR ;" lines;
//  - `ncu --import R --page source --print-source sass --csv`: a CSV with a "Source" column holding
//    one instruction per row (the kernel's name comes from the caller, or "Kernel Name" if present);
//  - `cuobjdump -res-usage FILE` text ("Function <name>:" then "REG:168 STACK:0 SHARED:0 LOCAL:0")
//    for register counts; without it registers are estimated from the highest Rn referenced.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::profile {

struct SassInstruction {
  std::string opcode;     // with modifiers: "HGMMA.64x128x16.F32.BF16"
  std::string base;       // "HGMMA"
  std::string text;       // the whole instruction as printed (predicate and operands)
  long long address = -1;  // its "/*0x..*/" offset (cuobjdump, nvdisasm); -1 when not printed
  long long target = -1;   // a branch's absolute target ("BRA 0x19e0"); -1 otherwise
};

struct SassFunction {
  std::string name;
  std::vector<SassInstruction> instructions;
  std::optional<int> registers;      // from -res-usage
  std::optional<int> local_bytes;    // LOCAL: from -res-usage (per-thread local memory)
  int max_register_index = -1;       // highest Rn in the code
};

// Parses any of the text forms above. Throws croq::Error(usage) when no instruction is found.
std::vector<SassFunction> parse_sass(std::string_view text, const std::string& origin = "the SASS");
// Fills registers/local_bytes of the functions named in `res_usage` text.
void apply_resource_usage(std::vector<SassFunction>& functions, std::string_view res_usage);

// Picks one function: the one whose name matches `pattern` (regex search), else the largest.
// Throws Error(not_found) if a pattern matches nothing.
const SassFunction& select_function(const std::vector<SassFunction>& functions, const std::string& pattern);

struct InstructionMix {
  int total = 0;
  std::map<std::string, int> by_class;     // tensor, fp32, fp16, int, global_load, global_store, shared, tma,
                                           // barrier, local, control, convert, other
  std::map<std::string, int> tensor_ops;   // "HGMMA.64x128x16.F32" -> count (full opcode)
  std::map<std::string, int> opcodes;      // base opcode -> count
  std::map<int, int> global_load_widths;   // bits -> count (LDG)
  std::map<int, int> global_store_widths;  // bits -> count (STG)
  std::map<int, int> shared_load_widths;   // LDS
  std::map<int, int> shared_store_widths;  // STS
  int ldsm = 0, stsm = 0, ldgsts = 0;      // ldmatrix, stmatrix, cp.async
  int tma = 0;                              // UTMALDG/UTMASTG/UTMAPF/UBLKCP/...
  int barriers = 0;                         // BAR, SYNCS, MEMBAR, DEPBAR, WARPGROUP, ...
  int local_loads = 0, local_stores = 0;   // LDL, STL
  // Loops are the address ranges [target, branch] of backward branches; a tensor loop holds a
  // tensor-core instruction and no other such loop (the main loop of a GEMM, not the persistent
  // tile loop around it). Local memory there is paid every k step, elsewhere once per tile. Unknown (nullopt) when the SASS has no addresses (ncu's source page).
  int tensor_loops = 0;
  std::optional<int> local_in_tensor_loops;
  std::optional<int> registers;
  std::string registers_source;            // "cuobjdump -res-usage" or "estimated: ..."

  std::string tensor_family() const;       // "HGMMA", "HMMA", ... (most frequent), "" if none
  int max_global_load_width() const;       // 0 if no LDG
};

InstructionMix instruction_mix(const SassFunction& f);
json mix_json(const InstructionMix& mix);

struct Divergence {
  std::string severity;   // high | medium | low
  std::string category;   // tensor_core, local_memory, tma, global_width, shared_matrix_loads,
                          // registers, barriers, instruction_count
  std::string reason;     // one line
  double weight = 0;      // ranking within a severity
  json candidate;         // the figures compared
  json baseline;
};

// Ranked: high before medium before low, then by weight. Empty when nothing notable differs.
std::vector<Divergence> compare_mix(const InstructionMix& candidate, const InstructionMix& baseline);
json divergences_json(const std::vector<Divergence>& d);

}  // namespace croq::profile
