// The build cache key (source, included headers, flags, compiler) and the atomic store.
#include <gtest/gtest.h>

#include "croq/build/cache.hpp"
#include "croq/build/includes.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

struct Tree {
  TempDir dir;
  fs::path src, local_h, nested_h, inc_dir, abi_h;
  Tree() {
    src = dir / "k.cu";
    local_h = dir / "local.h";
    nested_h = dir / "sub" / "nested.h";
    inc_dir = dir / "include";
    abi_h = inc_dir / "croq" / "kernel_abi.h";
    ensure_dir(dir / "sub");
    ensure_dir(inc_dir / "croq");
    atomic_write(src, "#include \"local.h\"\n#include <croq/kernel_abi.h>\n#include <cuda_fp16.h>\nint main(){}\n", false);
    atomic_write(local_h, "#pragma once\n  #  include \"sub/nested.h\"\n", false);
    atomic_write(nested_h, "#include \"../local.h\"\nint nested;\n", false);
    atomic_write(abi_h, "#define CROQ_ABI_VERSION 1\n", false);
  }
  CacheKeyInputs key_inputs() const {
    CacheKeyInputs in;
    in.source = src;
    for (const auto& i : resolve_includes(src, {inc_dir})) in.headers.push_back(i.path);
    in.args = {"-O3", "--shared"};
    in.compiler_path = "/usr/local/cuda/bin/nvcc";
    in.compiler_version = "release 13.0, V13.0.88";
    return in;
  }
};

TEST(BuildIncludes, QuotedAndAngleIncludesAreFollowedRecursivelyOnce) {
  Tree t;
  auto incs = resolve_includes(t.src, {t.inc_dir});
  ASSERT_EQ(incs.size(), 3u);  // local.h, kernel_abi.h, sub/nested.h; cuda_fp16.h is a system header
  std::vector<std::string> names;
  for (const auto& i : incs) names.push_back(i.path.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"local.h", "kernel_abi.h", "nested.h"}));
}

TEST(BuildIncludes, AngleIncludesAreNotSearchedBesideTheSource) {
  Tree t;
  atomic_write(t.dir / "cuda_fp16.h", "// a stray copy\n", false);
  auto incs = resolve_includes(t.src, {});
  for (const auto& i : incs) EXPECT_NE(i.path.filename(), "cuda_fp16.h");
}

TEST(BuildCache, KeyChangesWithSourceHeaderFlagsAndCompilerOnly) {
  Tree t;
  std::string base = build_cache_key(t.key_inputs());
  EXPECT_EQ(build_cache_key(t.key_inputs()), base);

  atomic_write(t.nested_h, "#include \"../local.h\"\nint nested2;\n", false);  // a header two levels down
  std::string after_header = build_cache_key(t.key_inputs());
  EXPECT_NE(after_header, base);

  atomic_write(t.abi_h, "#define CROQ_ABI_VERSION 2\n", false);  // a header found through -I
  std::string after_abi = build_cache_key(t.key_inputs());
  EXPECT_NE(after_abi, after_header);

  auto in = t.key_inputs();
  in.args.push_back("-DX=1");
  EXPECT_NE(build_cache_key(in), after_abi);
  in = t.key_inputs();
  in.compiler_version = "release 13.1";
  EXPECT_NE(build_cache_key(in), after_abi);
  in = t.key_inputs();
  in.args = {"-O3 --shared"};  // fields are length-prefixed: joining words differently is another key
  EXPECT_NE(build_cache_key(in), after_abi);

  atomic_write(t.src, read_file_or_throw(t.src) + "// edit\n", false);
  EXPECT_NE(build_cache_key(t.key_inputs()), after_abi);
}

TEST(BuildCache, StoreThenLookupRestoresTheOutput) {
  TempDir d;
  BuildCache cache(d / "cache");
  atomic_write(d / "out.so", "ELF bytes", false);
  EXPECT_FALSE(cache.lookup("k1").has_value());
  ASSERT_TRUE(cache.store("k1", {{"iter001_x.so", d / "out.so"}}, json{{"compile_ms", 1234.0}}, "ptxas info\n"));
  auto e = cache.lookup("k1");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->files, std::vector<std::string>{"iter001_x.so"});
  EXPECT_EQ(e->log, "ptxas info\n");
  EXPECT_EQ(e->meta.value("compile_ms", 0.0), 1234.0);
  cache.restore(*e, "iter001_x.so", d / "bin" / "iter001_x.so");
  EXPECT_EQ(read_file_or_throw(d / "bin" / "iter001_x.so"), "ELF bytes");
  // No temporary folders are left behind.
  std::error_code ec;
  size_t tmp_entries = 0;
  for (auto it = fs::directory_iterator(d / "cache" / ".tmp", ec); !ec && it != fs::directory_iterator(); ++it) ++tmp_entries;
  EXPECT_EQ(tmp_entries, 0u);
}

TEST(BuildCache, SecondStoreOfTheSameKeyKeepsTheFirst) {
  TempDir d;
  BuildCache cache(d / "cache");
  atomic_write(d / "a", "first", false);
  atomic_write(d / "b", "second", false);
  EXPECT_TRUE(cache.store("k", {{"out", d / "a"}}, json::object(), ""));
  EXPECT_FALSE(cache.store("k", {{"out", d / "b"}}, json::object(), ""));
  auto e = cache.lookup("k");
  ASSERT_TRUE(e);
  cache.restore(*e, "out", d / "got");
  EXPECT_EQ(read_file_or_throw(d / "got"), "first");
}

TEST(BuildCache, AnEntryMissingAFileIsAMiss) {
  TempDir d;
  BuildCache cache(d / "cache");
  atomic_write(d / "a", "x", false);
  ASSERT_TRUE(cache.store("k", {{"out", d / "a"}}, json::object(), ""));
  fs::remove(d / "cache" / "k" / "out");
  EXPECT_FALSE(cache.lookup("k").has_value());
}

// An output replaced in the cache (another binary copied over it) is not a hit: the build runs
// again and its store replaces the entry (before, the replaced binary was restored as the build of
// an unchanged source).
TEST(BuildCache, AnOutputReplacedInTheCacheIsAMissAndTheNextStoreReplacesIt) {
  TempDir d;
  BuildCache cache(d / "cache");
  atomic_write(d / "a", "the build", false);
  ASSERT_TRUE(cache.store("k", {{"out", d / "a"}}, json::object(), ""));
  ASSERT_TRUE(cache.lookup("k").has_value());
  atomic_write(d / "cache" / "k" / "out", "another binary", false);
  EXPECT_FALSE(cache.lookup("k").has_value());
  EXPECT_TRUE(cache.store("k", {{"out", d / "a"}}, json::object(), ""));
  auto e = cache.lookup("k");
  ASSERT_TRUE(e.has_value());
  cache.restore(*e, "out", d / "got");
  EXPECT_EQ(read_file_or_throw(d / "got"), "the build");
  // An entry without the hashes (written before they were kept) is a miss too.
  json meta = *try_parse_json(read_file_or_throw(d / "cache" / "k" / "meta.json"));
  meta.erase("sha256");
  atomic_write(d / "cache" / "k" / "meta.json", meta.dump(), false);
  EXPECT_FALSE(cache.lookup("k").has_value());
}

}  // namespace
}  // namespace croq
