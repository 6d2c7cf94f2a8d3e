// What a person at a terminal sees instead of the JSON document (cli.hpp, Context::emit): the
// verb's result in a few lines, figures in a unit that fits. A pipe, `--json` or CROQ_JSON=1 gives
// the JSON document as before.
#include <fmt/format.h>

#include "cli/cli.hpp"
#include "croq/util/units.hpp"

namespace croq::cli {

namespace {

std::string str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return {};
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return {};
  return v.dump();
}

std::optional<double> num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// A configuration's parameters on one line: `NAME=value NAME=value`.
std::string key_values(const json& params) {
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it) {
    out += (out.empty() ? "" : " ") + it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  return out;
}

std::string rate_of(const json& j, const char* key = "tflops") {
  auto v = num(j, key);
  return v ? format_rate(*v) : "-";
}

std::string clip(std::string text) { return text.size() > 160 ? text.substr(0, 157) + "..." : text; }

// A generic view: scalar fields as `key: value` (rates and times scaled); an object or array that
// fits on a line as itself, a larger object by its keys, an array of objects an item a row (at most
// 10). Before, anything nested read "[1 items]" or "{2 fields}".
std::string generic(const json& doc) {
  if (!doc.is_object()) return doc.dump(2) + "\n";
  std::vector<std::vector<std::string>> rows;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    std::string text;
    if (v.is_number() && k.find("tflops") != std::string::npos) text = format_rate(v.get<double>());
    else if (v.is_number() && k.size() > 3 && k.compare(k.size() - 3, 3, "_ms") == 0) text = format_ms(v.get<double>());
    else if (v.is_string()) text = v.get<std::string>();
    else if (v.is_array() && !v.empty() && v.front().is_object() && v.dump().size() > 160) {
      size_t i = 0;
      for (const auto& item : v) {
        if (i == 10) {
          rows.push_back({"", fmt::format("... and {} more", v.size() - i)});
          break;
        }
        rows.push_back({i == 0 ? k + ":" : "", clip(item.dump())});
        ++i;
      }
      continue;
    } else if (v.is_object() && v.dump().size() > 160) {
      std::string keys;
      for (auto f = v.begin(); f != v.end(); ++f) keys += (keys.empty() ? "" : ", ") + f.key();
      text = fmt::format("{{{}}}", keys);
    } else {
      text = v.dump();
    }
    rows.push_back({k + ":", clip(text)});
  }
  return format_table(rows);
}

}  // namespace

std::string sweep_table(const json& shapes) {
  std::vector<std::vector<std::string>> rows = {{"shape", "status", "rounds", "baseline", "best", "best/baseline"}};
  for (const auto& r : shapes) {
    if (!r.is_object()) continue;
    auto best = num(r, "best_tflops"), base = num(r, "baseline_tflops");
    std::string rounds = std::to_string(r.value("current_iter", 0));
    if (auto target = num(r, "target_rounds")) rounds += fmt::format("/{}", static_cast<long long>(*target));
    std::string status = str(r, "status");
    if (!str(r, "outcome").empty() && str(r, "outcome") != status) status += " (" + str(r, "outcome") + ")";
    rows.push_back({str(r, "key"), status, rounds, base ? format_rate(*base) : "-", best ? format_rate(*best) : "-",
                    best && base && *base > 0 ? fmt::format("{:.2f}x", *best / *base) : "-"});
  }
  return format_table(rows);
}

std::string render_text(const std::string& verb, const json& doc) {
  std::string s;
  if (verb.rfind("sweep ", 0) == 0 && doc.is_object() && doc.contains("shapes") && doc["shapes"].is_array()) {
    // sweep run / submit / status: a line per shape, figures in a unit that fits, then the counts.
    if (doc["shapes"].empty()) {
      return "no sweep in this workspace (no shapes in tuning/state.json): start one with `croq sweep run "
             "--manifest <file> --dsl <dsl> --rounds <N>`\n";
    }
    s += sweep_table(doc["shapes"]);
    std::vector<std::string> counts;
    for (const char* k : {"done", "failed", "pending"}) {
      if (doc.contains(k) && doc[k].is_number()) counts.push_back(fmt::format("{} {}", doc[k].get<long long>(), k));
    }
    if (doc.contains("counts") && doc["counts"].is_object()) {
      for (auto it = doc["counts"].begin(); it != doc["counts"].end(); ++it) {
        if (it.value().is_number()) counts.push_back(fmt::format("{} {}", it.value().get<long long>(), it.key()));
      }
    }
    std::string line;
    for (const auto& c : counts) line += (line.empty() ? "" : ", ") + c;
    if (doc.value("stopped", false)) line += (line.empty() ? "" : "; ") + std::string("stopped");
    if (auto wall = num(doc, "wall_s")) line += fmt::format("{}{:.1f} s", line.empty() ? "" : "; ", *wall);
    if (!line.empty()) s += line + "\n";
    if (doc.contains("running")) {
      s += doc.value("running", false) ? fmt::format("a sweep runs now (pid {})\n", doc.value("pid", 0))
                                       : std::string("no local sweep runs now\n");
    }
    return s;
  }
  if (verb == "state" && doc.is_object()) {
    s += fmt::format("{}  step {}\n", str(doc, "task"), str(doc, "step"));
    const json& d = doc.value("details", json::object());
    if (d.contains("best") && d["best"].is_object()) {
      s += fmt::format("best      {} {}\n", str(d["best"], "kernel"), rate_of(d["best"]));
    }
    if (d.contains("budget") && d["budget"].is_object()) {
      s += fmt::format("rounds    {} of {} done\n", d["budget"].value("completed", 0), d["budget"].value("target_rounds", 0));
    }
    for (const auto& n : doc.value("notes", json::array())) s += "note      " + n.get<std::string>() + "\n";
    s += "next      " + str(doc, "next_action") + "\n";
    return s;
  }
  if ((verb == "measure" || verb == "baseline") && doc.is_object() && doc.contains("verdict")) {
    const json& t = doc.value("timing", json::object());
    s += fmt::format("{}  {}  {}", str(doc, "verdict"), rate_of(doc), num(t, "median_ms") ? format_ms(*num(t, "median_ms")) : "-");
    if (auto cv = num(t, "cv")) s += fmt::format("  cv {:.2f}%", *cv * 100);
    s += "\n";
    if (!str(doc, "detail").empty()) s += "detail    " + str(doc, "detail") + "\n";
    if (doc.contains("files")) s += "file      " + str(doc["files"], "measurement") + "\n";
    return s;
  }
  if (verb == "decide" && doc.is_object() && doc.contains("decision")) {
    s += fmt::format("{}  {}\n", doc.value("pending", false) ? std::string("PENDING") : str(doc, "decision"), str(doc, "reason"));
    for (const auto& n : doc.value("next", json::array())) s += "next      " + n.get<std::string>() + "\n";
    return s;
  }
  if (verb == "store-round" && doc.is_object() && doc.contains("record")) {
    const json& r = doc["record"];
    s += fmt::format("stored round {}  {}  {}  {}  {}\n", r.value("round", 0), str(r, "kernel"), str(r, "decision"),
                     rate_of(r), str(r, "bottleneck"));
    return s;
  }
  if (verb == "build" && doc.is_object() && doc.contains("verdict")) {
    s += fmt::format("{}  {}  {} ms{}\n", str(doc, "verdict"), str(doc, "kernel"), str(doc, "compile_ms"),
                     doc.value("cached", false) ? " (cached)" : "");
    for (const auto& e : doc.value("errors", json::array())) {
      s += "  " + (e.is_string() ? e.get<std::string>() : e.dump()) + "\n";
    }
    return s;
  }
  if (verb == "round" && doc.is_object()) {
    for (const auto& st : doc.value("steps", json::array())) {
      s += fmt::format("{:<13} exit {}  {}\n", str(st, "step"), st.value("exit_code", 0), str(st, "error"));
    }
    s += doc.value("ok", false) ? fmt::format("round stored: {} {}\n", str(doc, "kernel"), str(doc, "decision"))
                                : fmt::format("stopped at {}\n", str(doc, "stopped_at"));
    if (!str(doc, "next_action").empty()) s += "next      " + str(doc, "next_action") + "\n";
    return s;
  }
  if (verb == "tune" && doc.is_object() && doc.contains("shapes") && doc["shapes"].is_array() && !doc["shapes"].empty() &&
      doc["shapes"][0].is_object() && doc["shapes"][0].contains("configs")) {
    // --list-space: per shape the space's size, the default and the first few configurations; the
    // whole list is the JSON document (--json, or through a pipe).
    for (const auto& d : doc["shapes"]) {
      s += fmt::format("{}  family {} on {}: {} legal configurations of {} (every value of every parameter){}\n",
                       str(d, "shape_key"), str(d, "family"), str(d, "arch"), d.value("legal", 0), str(d, "product"),
                       d.value("truncated", false) ? fmt::format(", the first {} examined", str(d, "examined")) : "");
      if (d.contains("default") && d["default"].is_object()) s += "default   " + key_values(d["default"]) + "\n";
      const json& configs = d.value("configs", json::array());
      for (size_t i = 0; i < configs.size() && i < 3; ++i) s += (i == 0 ? "first     " : "          ") + key_values(configs[i]) + "\n";
      if (configs.size() > 3) s += fmt::format("          ... {} more\n", configs.size() - 3);
    }
    s += "all of them as JSON: --json (or through a pipe)\n";
    return s;
  }
  if (verb == "tune" && doc.is_object() && (doc.contains("best") || doc.contains("shapes"))) {
    // The end of a tune: per task, its best kernel, how it compares with the baseline, its
    // parameters and where its source is.
    auto one = [&](const json& d) {
      s += fmt::format("{}  {} rounds ({} this run){}\n", str(d, "task"), d.value("rounds", 0), d.value("rounds_this_run", 0),
                       d.value("exhausted", false) ? ", search space exhausted" : "");
      const json& best = d.value("best", json());
      const json& base = d.value("baseline", json());
      if (best.is_object()) {
        s += fmt::format("best      {}  {}", str(best, "kernel"), rate_of(best));
        if (auto pct = num(d, "pct_of_baseline")) {
          s += fmt::format("  {:.2f} x the baseline", *pct / 100.0);
          if (base.is_object()) s += fmt::format(" ({} {})", str(base, "kernel"), rate_of(base));
        }
        s += "\n";
      } else {
        s += "best      none kept yet\n";
      }
      if (d.contains("best_params") && d["best_params"].is_object()) {
        s += "params    " + key_values(d["best_params"]) + "\n";
      }
      if (!str(d, "best_source").empty()) s += "source    " + str(d, "best_source") + "\n";
    };
    if (doc.contains("shapes") && doc["shapes"].is_array()) {
      for (const auto& d : doc["shapes"]) {
        if (d.is_object() && d.contains("task")) one(d);
        else if (d.is_object()) s += str(d, "shape_key") + "  " + str(d, "error") + "\n";
      }
    } else {
      one(doc);
    }
    return s;
  }
  return generic(doc);
}

}  // namespace croq::cli
