// The build cache: content-addressed compiler outputs, so that an unchanged candidate "builds" in
// milliseconds. The key is the sha256 of
//   the source bytes, the bytes of every local header it includes (includes.hpp), the exact
//   compiler arguments (output paths excluded), the compiler's path and its `--version` text
//   (which stands for the system headers),
// each hashed as a length-prefixed field. Entries live in <root>/tuning/.cache/build/<key>/:
//   meta.json (croq-build-cache-v1: the build's command, flags, compile_ms, resources, created_at,
//   and each output's sha256: an output that no longer has it is not a hit, the build runs again),
//   log.txt (the compiler's output), and the output files under their own names.
// An entry is built in a temporary folder beside the others and renamed into place, so a reader
// never sees half an entry; two builds of the same key at once both succeed (the second rename
// finds the entry present and drops its copy). Failed builds are not cached.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/util/json.hpp"

namespace croq {

inline constexpr const char* k_build_cache_schema = "croq-build-cache-v1";

struct CacheKeyInputs {
  std::filesystem::path source;
  std::vector<std::filesystem::path> headers;  // resolved local headers
  std::vector<std::string> args;               // compiler arguments without the output paths
  std::string compiler_path;
  std::string compiler_version;
  std::string extra;                           // anything else that changes the output (e.g. phase-1 inputs)
};

// Reads the files and returns the hex key. Throws Error(not_found) when the source is missing.
std::string build_cache_key(const CacheKeyInputs& inputs);

struct CacheEntry {
  std::string key;
  std::filesystem::path dir;
  json meta;
  std::map<std::string, std::string> sha256;  // output file name -> its hash when stored
  std::string log;
  std::vector<std::string> files;  // output file names in the entry
};

class BuildCache {
 public:
  explicit BuildCache(std::filesystem::path dir);  // <root>/tuning/.cache/build
  const std::filesystem::path& dir() const { return m_dir; }

  std::optional<CacheEntry> lookup(const std::string& key) const;
  // Stores the outputs (copied from `outputs`: entry file name -> path) with the meta and log.
  // Returns false (and stores nothing) if the entry appeared meanwhile.
  bool store(const std::string& key, const std::map<std::string, std::filesystem::path>& outputs, json meta,
             const std::string& log) const;
  // Copies an entry's file to `dest` atomically (temp file beside it, then rename).
  void restore(const CacheEntry& entry, const std::string& file, const std::filesystem::path& dest) const;
  // A fresh private folder for a build in progress (under dir()/.tmp).
  std::filesystem::path make_temp_dir() const;

 private:
  std::filesystem::path m_dir;
};

// Copies `from` to `to` atomically (a temp file in to's folder, then rename), keeping the mode.
void copy_file_atomic(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace croq
