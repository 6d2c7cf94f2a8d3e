// `croq init`: installs into a workspace the skills a coding agent loads (at the path each agent
// reads them from) and, with --compat, the seeds' tool shims (.claude/skills/croq-tune/tools/*.sh
// and the fsm-engine scripts), each calling croq.
//
// Re-running init updates croq's files in place and never overwrites a user's edit. What croq
// wrote is remembered in <root>/.croq/init-manifest.json (croq-init-manifest-v1):
//   {"schema":"croq-init-manifest-v1","croq_version":"0.1.0","updated_at":"...",
//    "files":{"<path relative to the root>":{"sha256":"...","source":"skills/croq-tune/SKILL.md",
//                                             "group":"claude"}}}
// A file whose content still has the recorded hash is croq's and is updated; a file that differs
// from it (or that croq never wrote) is the user's and is left alone and reported
// (`kept_modified`) unless --force. A file croq no longer ships is removed when unmodified.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq::agent {

namespace fs = std::filesystem;

// Where an agent loads project skills from (relative to the workspace root).
struct AgentLayout {
  std::string name;        // claude | cursor | opencode | codex
  std::string skills_dir;  // ".claude/skills", ".cursor/skills", ".opencode/skills", ".agents/skills"
};
const std::vector<AgentLayout>& agent_layouts();
// Throws Error(usage) naming the known agents.
const AgentLayout& agent_layout(const std::string& name);

// The skill names croq installs (the folders under files/skills/).
std::vector<std::string> skill_names();

inline constexpr const char* k_init_manifest_schema = "croq-init-manifest-v1";
fs::path init_manifest_path(const fs::path& root);

struct InitOptions {
  std::vector<std::string> agents;  // empty: claude
  bool compat = false;              // also the seeds' tool shims
  bool force = false;               // overwrite user-modified files too
  bool dry_run = false;             // report what would happen, write nothing
  std::string croq_exe;             // baked into the shims as the default croq
};

// One planned file and what init did with it: created | updated | unchanged | kept_modified |
// removed | kept_obsolete (a file croq no longer ships, modified by the user).
struct InitAction {
  std::string path;  // relative to the root
  std::string action;
  std::string group;  // the agent, or "compat"
  std::string source;
};

struct InitResult {
  std::vector<InitAction> actions;
  std::vector<std::string> notes;
  json to_json(const fs::path& root) const;
};

InitResult install(const fs::path& root, const InitOptions& options);

// The rendered content of one embedded file for a group ({{skills_dir}}, {{agent}}, {{croq}}).
std::string render(std::string_view text, const std::string& skills_dir, const std::string& agent,
                   const std::string& croq_exe);

}  // namespace croq::agent
