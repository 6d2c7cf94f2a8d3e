// What an idea changes, as the rules of the seeds see it: the base kernel it derives from, the
// parameter set of the candidate, and the structural change (empty for a macro-only change).
// The combination key (base x parameter set x structural change, normalised) identifies an idea
// so that a repeat can be refused. Plans are written into the checkpoint by `checkpoint write`
// and copied into the round record by `store-round`.
#pragma once
#include <string>

#include "croq/util/json.hpp"

namespace croq {

struct IdeaPlan {
  std::string base;        // "iter004_stages4"
  json params = json::object();  // {"BM":"128","STAGES":"4"}; values compared as normalised text
  std::string structural;  // "switch to 1 producer + 2 consumer warpgroups"; empty: macro-only
  std::string structure;   // id of the structure the candidate has (set by the protocol)
  std::string family;      // kernel family, when the candidate comes from one

  bool is_structural() const;
  std::string combination_key() const;  // sha256 of the normalised triple
  json to_json() const;
  static IdeaPlan from_json(const json& j);  // tolerant: missing fields are empty
};

// Lowercase, punctuation dropped, whitespace collapsed.
std::string normalise_phrase(const std::string& text);
std::string normalise_params(const json& params);  // "bm=128,stages=4" with sorted keys

}  // namespace croq
