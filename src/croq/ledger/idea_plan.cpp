// Idea plans and their normalised combination keys (idea_plan.hpp).
#include "croq/ledger/idea_plan.hpp"

#include <algorithm>
#include <cctype>
#include <map>

#include "croq/util/hash.hpp"

namespace croq {

std::string normalise_phrase(const std::string& text) {
  std::string out;
  bool space = false;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c >= 0x80 || c == '_' || c == '.' || c == '=' || c == '+' || c == '-') {
      if (space && !out.empty()) out += ' ';
      space = false;
      out += static_cast<char>(std::tolower(c));
    } else {
      space = true;
    }
  }
  return out;
}

std::string normalise_params(const json& params) {
  if (!params.is_object()) return "";
  std::map<std::string, std::string> sorted;
  for (auto it = params.begin(); it != params.end(); ++it) {
    std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    sorted[normalise_phrase(it.key())] = normalise_phrase(v);
  }
  std::string out;
  for (const auto& [k, v] : sorted) {
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out;
}

bool IdeaPlan::is_structural() const { return !normalise_phrase(structural).empty(); }

std::string IdeaPlan::combination_key() const {
  Sha256 h;
  h.field(base);
  h.field(normalise_params(params));
  h.field(normalise_phrase(structural));
  return h.hex().substr(0, 24);
}

json IdeaPlan::to_json() const {
  json j = {{"base", base}, {"params", params.is_object() ? params : json::object()}, {"structural", structural},
            {"change_kind", is_structural() ? "structural" : "macro"}, {"combination", combination_key()}};
  if (!structure.empty()) j["structure"] = structure;
  if (!family.empty()) j["family"] = family;
  return j;
}

IdeaPlan IdeaPlan::from_json(const json& j) {
  IdeaPlan p;
  if (!j.is_object()) return p;
  p.base = get_string(j, "base").value_or("");
  if (j.contains("params") && j["params"].is_object()) p.params = j["params"];
  p.structural = get_string(j, "structural").value_or("");
  p.structure = get_string(j, "structure").value_or("");
  p.family = get_string(j, "family").value_or("");
  return p;
}

}  // namespace croq
