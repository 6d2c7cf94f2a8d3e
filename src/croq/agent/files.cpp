// Lookup in the embedded file table (files.hpp).
#include "croq/agent/files.hpp"

namespace croq::agent {

std::optional<std::string_view> embedded_file(std::string_view path) {
  for (const auto& f : embedded_files()) {
    if (path == f.path) return f.data;
  }
  return std::nullopt;
}

}  // namespace croq::agent
