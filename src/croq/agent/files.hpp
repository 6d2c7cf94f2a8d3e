// The files `croq init` installs, embedded in the binary at build time by src/cmake/embed_files.cmake from
// src/croq/agent/files/ (skills for coding agents under skills/<name>/, the seeds' tool shims
// under compat/). Paths are relative to that folder, with '/' separators.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace croq::agent {

struct EmbeddedFile {
  const char* path;
  std::string_view data;
};

// Generated (files_data.cpp in the build folder), sorted by path.
const std::vector<EmbeddedFile>& embedded_files();

// The content of one embedded file; nullopt if there is none by that path.
std::optional<std::string_view> embedded_file(std::string_view path);

}  // namespace croq::agent
