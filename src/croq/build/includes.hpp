// The headers a source depends on, for the build cache key: every `#include "..."` resolved from
// the including file's folder and then the -I folders, and every `#include <...>` found in the -I
// folders, followed recursively. Headers not found there are system headers; the compiler's
// version stands for them in the key. Conditional compilation is ignored (a header named under
// an #if that is off still counts): the key may change more often than needed, never less.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace croq {

struct IncludedFile {
  std::filesystem::path path;  // canonical
  std::string spelled;         // as written in the #include
};

// The local headers `source` includes, directly or not, each once, in discovery order.
std::vector<IncludedFile> resolve_includes(const std::filesystem::path& source,
                                           const std::vector<std::filesystem::path>& include_dirs);

}  // namespace croq
