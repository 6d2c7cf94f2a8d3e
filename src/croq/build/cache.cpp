// Content-addressed build cache (cache.hpp).
#include "croq/build/cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

std::string random_suffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return fmt::format("{}-{}-{:08x}", ::getpid(), counter++, rd());
}

}  // namespace

std::string build_cache_key(const CacheKeyInputs& in) {
  Sha256 h;
  h.field(k_build_cache_schema);
  h.field(read_file_or_throw(in.source));
  h.field(std::to_string(in.headers.size()));
  for (const auto& header : in.headers) {
    h.field(header.string());
    auto bytes = read_file(header);
    h.field(bytes ? *bytes : std::string("<missing>"));
  }
  h.field(std::to_string(in.args.size()));
  for (const auto& a : in.args) h.field(a);
  h.field(in.compiler_path);
  h.field(in.compiler_version);
  h.field(in.extra);
  return h.hex();
}

BuildCache::BuildCache(fs::path dir) : m_dir(std::move(dir)) {}

std::optional<CacheEntry> BuildCache::lookup(const std::string& key) const {
  fs::path dir = m_dir / key;
  auto meta_text = read_file(dir / "meta.json");
  if (!meta_text) return std::nullopt;
  auto meta = try_parse_json(*meta_text);
  if (!meta || !meta->is_object() || meta->value("schema", "") != k_build_cache_schema) return std::nullopt;
  CacheEntry e;
  e.key = key;
  e.dir = dir;
  e.meta = *meta;
  e.log = read_file(dir / "log.txt").value_or("");
  std::error_code ec;
  // Every output is there with the hash recorded when it was stored: a file replaced in the cache
  // (or an entry from before the hashes were kept) is rebuilt, never handed out as the build.
  const json hashes = meta->value("sha256", json::object());
  if (meta->contains("files") && (*meta)["files"].is_array()) {
    for (const auto& f : (*meta)["files"]) {
      if (!f.is_string()) return std::nullopt;
      std::string name = f.get<std::string>();
      if (!fs::is_regular_file(dir / name, ec)) return std::nullopt;  // damaged entry: rebuild
      const std::string want = hashes.is_object() ? hashes.value(name, "") : "";
      if (want.empty() || sha256_file(dir / name) != want) return std::nullopt;
      e.files.push_back(name);
      e.sha256[name] = want;
    }
  }
  return e;
}

fs::path BuildCache::make_temp_dir() const {
  fs::path tmp = m_dir / ".tmp" / random_suffix();
  ensure_dir(tmp);
  return tmp;
}

bool BuildCache::store(const std::string& key, const std::map<std::string, fs::path>& outputs, json meta,
                       const std::string& log) const {
  std::error_code ec;
  fs::path final_dir = m_dir / key;
  if (fs::exists(final_dir / "meta.json", ec) && lookup(key)) return false;  // a damaged entry is replaced
  fs::path tmp = make_temp_dir();
  json files = json::array();
  json hashes = json::object();
  for (const auto& [name, path] : outputs) {
    fs::copy_file(path, tmp / name, fs::copy_options::overwrite_existing);
    files.push_back(name);
    hashes[name] = sha256_file(tmp / name);
  }
  meta["schema"] = k_build_cache_schema;
  meta["key"] = key;
  meta["files"] = files;
  meta["sha256"] = hashes;
  if (!meta.contains("created_at")) meta["created_at"] = now_iso8601();
  atomic_write(tmp / "log.txt", log, /*durable=*/false);
  atomic_write(tmp / "meta.json", dump_pretty(meta), /*durable=*/false);
  if (fs::exists(final_dir, ec)) fs::remove_all(final_dir, ec);  // a damaged entry without meta.json
  if (::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    fs::remove_all(tmp, ec);
    return false;  // another build stored the same key first
  }
  return true;
}

void BuildCache::restore(const CacheEntry& entry, const std::string& file, const fs::path& dest) const {
  copy_file_atomic(entry.dir / file, dest);
  auto want = entry.sha256.find(file);
  if (want != entry.sha256.end() && sha256_file(dest) != want->second) {
    std::error_code ec;
    fs::remove(dest, ec);
    throw Error(ExitCode::failure,
                fmt::format("the cached {} changed while it was restored (its hash is not the one stored)", file),
                "build again: the entry is rebuilt");
  }
}

void copy_file_atomic(const fs::path& from, const fs::path& to) {
  ensure_dir(to.parent_path());
  fs::path tmp = to.parent_path() / (".croq-tmp-" + to.filename().string() + "-" + random_suffix());
  std::error_code ec;
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error(ExitCode::failure, fmt::format("cannot copy {} to {}: {}", from.string(), tmp.string(), ec.message()));
  fs::rename(tmp, to, ec);
  if (ec) {
    std::string why = ec.message();
    fs::remove(tmp, ec);
    throw Error(ExitCode::failure, fmt::format("cannot move {} into place: {}", to.string(), why));
  }
}

}  // namespace croq
