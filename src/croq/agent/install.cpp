// croq init: plans the files for each agent (and the compat shims), then creates, updates or
// keeps each one against the manifest of what croq wrote before (install.hpp).
#include "croq/agent/install.hpp"

#include <sys/stat.h>

#include <map>
#include <set>

#include <fmt/format.h>

#include "croq/agent/files.hpp"
#include "croq/util/build_info.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/time.hpp"

namespace croq::agent {

const std::vector<AgentLayout>& agent_layouts() {
  static const std::vector<AgentLayout> list = {
      {"claude", ".claude/skills"},
      {"cursor", ".cursor/skills"},
      {"opencode", ".opencode/skills"},
      {"codex", ".agents/skills"},
  };
  return list;
}

const AgentLayout& agent_layout(const std::string& name) {
  for (const auto& a : agent_layouts()) {
    if (a.name == name) return a;
  }
  throw_usage(fmt::format("unknown agent '{}'", name), "agents: claude, cursor, opencode, codex");
}

std::vector<std::string> skill_names() {
  std::set<std::string> names;
  for (const auto& f : embedded_files()) {
    std::string_view p = f.path;
    if (p.rfind("skills/", 0) != 0) continue;
    p.remove_prefix(7);
    names.insert(std::string(p.substr(0, p.find('/'))));
  }
  return {names.begin(), names.end()};
}

fs::path init_manifest_path(const fs::path& root) { return root / ".croq" / "init-manifest.json"; }

std::string render(std::string_view text, const std::string& skills_dir, const std::string& agent,
                   const std::string& croq_exe) {
  std::string s(text);
  const std::pair<const char*, const std::string*> vars[] = {
      {"{{skills_dir}}", &skills_dir}, {"{{agent}}", &agent}, {"{{croq}}", &croq_exe}};
  for (const auto& [key, value] : vars) {
    const std::string k = key;
    for (size_t p = s.find(k); p != std::string::npos; p = s.find(k, p + value->size())) s.replace(p, k.size(), *value);
  }
  return s;
}

json InitResult::to_json(const fs::path& root) const {
  json files = json::array();
  std::map<std::string, int> counts;
  json kept = json::array();
  for (const auto& a : actions) {
    files.push_back({{"path", a.path}, {"action", a.action}, {"group", a.group}, {"source", a.source}});
    counts[a.action]++;
    if (a.action == "kept_modified" || a.action == "kept_obsolete") kept.push_back(a.path);
  }
  json c = json::object();
  for (const char* k : {"created", "updated", "unchanged", "kept_modified", "removed", "kept_obsolete"}) c[k] = counts[k];
  return {{"root", root.string()}, {"manifest", init_manifest_path(root).string()}, {"counts", c},
          {"kept_user_files", kept}, {"files", files}, {"notes", notes}};
}

namespace {

struct Planned {
  std::string rel;
  std::string content;
  std::string group;
  std::string source;
  bool executable = false;
};

bool is_script(std::string_view path) {
  auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.substr(path.size() - s.size()) == s; };
  return ends(".sh") || ends(".py");
}

std::vector<Planned> plan(const InitOptions& o) {
  std::vector<Planned> out;
  std::vector<std::string> agents = o.agents.empty() ? std::vector<std::string>{"claude"} : o.agents;
  for (const auto& name : agents) {
    const AgentLayout& a = agent_layout(name);
    for (const auto& f : embedded_files()) {
      std::string_view p = f.path;
      if (p.rfind("skills/", 0) != 0) continue;
      p.remove_prefix(7);
      out.push_back({a.skills_dir + "/" + std::string(p), render(f.data, a.skills_dir, a.name, o.croq_exe), a.name,
                     f.path, is_script(p)});
    }
  }
  if (o.compat) {
    // The seeds' paths are Claude Code's, whatever agent runs them.
    for (const auto& f : embedded_files()) {
      std::string_view p = f.path;
      if (p.rfind("compat/", 0) != 0) continue;
      p.remove_prefix(7);
      out.push_back({".claude/skills/" + std::string(p), render(f.data, ".claude/skills", "claude", o.croq_exe), "compat",
                     f.path, is_script(p)});
    }
  }
  return out;
}

json read_manifest(const fs::path& root, std::vector<std::string>& notes) {
  auto text = read_file(init_manifest_path(root));
  if (!text) return json::object();
  auto j = try_parse_json(*text);
  if (!j || !j->is_object() || j->value("schema", "") != k_init_manifest_schema || !(*j)["files"].is_object()) {
    notes.push_back("the init manifest could not be read; every existing file is treated as the user's");
    return json::object();
  }
  return (*j)["files"];
}

void write_file(const fs::path& path, const std::string& content, bool executable) {
  ensure_dir(path.parent_path());
  atomic_write(path, content);
  ::chmod(path.c_str(), executable ? 0755 : 0644);
}

}  // namespace

InitResult install(const fs::path& root, const InitOptions& o) {
  InitResult result;
  json manifest = read_manifest(root, result.notes);
  json next = manifest;
  std::vector<Planned> planned = plan(o);
  std::set<std::string> groups, planned_paths;
  for (const auto& p : planned) {
    groups.insert(p.group);
    planned_paths.insert(p.rel);
  }

  for (const auto& p : planned) {
    fs::path path = root / p.rel;
    const std::string want = sha256_hex(p.content);
    const json* entry = manifest.contains(p.rel) ? &manifest[p.rel] : nullptr;
    std::string action;
    auto disk = read_file(path);
    if (!disk) {
      action = "created";
    } else {
      const std::string have = sha256_hex(*disk);
      const bool ours = entry && entry->value("sha256", "") == have;
      if (have == want) action = "unchanged";
      else if (ours || o.force) action = "updated";
      else action = "kept_modified";
    }
    if (action == "created" || action == "updated") {
      if (!o.dry_run) write_file(path, p.content, p.executable);
    } else if (action == "unchanged" && !o.dry_run && p.executable) {
      ::chmod(path.c_str(), 0755);
    }
    if (action != "kept_modified") next[p.rel] = {{"sha256", want}, {"source", p.source}, {"group", p.group}};
    result.actions.push_back({p.rel, action, p.group, p.source});
  }

  // Files croq wrote before for these groups but ships no longer.
  for (auto it = manifest.begin(); it != manifest.end(); ++it) {
    const std::string rel = it.key();
    if (planned_paths.count(rel) || !groups.count(it.value().value("group", ""))) continue;
    fs::path path = root / rel;
    auto disk = read_file(path);
    std::string action;
    if (!disk) {
      action = "removed";
    } else if (sha256_hex(*disk) == it.value().value("sha256", "") || o.force) {
      action = "removed";
      if (!o.dry_run) fs::remove(path);
    } else {
      action = "kept_obsolete";
    }
    next.erase(rel);
    result.actions.push_back({rel, action, it.value().value("group", ""), it.value().value("source", "")});
  }

  if (!o.dry_run) {
    ensure_dir(root / "tuning");
    json doc = {{"schema", k_init_manifest_schema}, {"croq_version", build_info::k_version}, {"updated_at", now_iso8601()},
                {"files", next}};
    ensure_dir(init_manifest_path(root).parent_path());
    atomic_write(init_manifest_path(root), doc.dump(2) + "\n");
  }
  return result;
}

}  // namespace croq::agent
