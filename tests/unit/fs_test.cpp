// The crash-safe file primitives: whole-line appends with torn-tail repair, atomic replacement,
// locks, and the temporary files a dead writer leaves.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

void raw_write(const fs::path& p, const std::string& content) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(content.data(), 1, content.size(), f);
  std::fclose(f);
}

TEST(AppendLine, AddsTheNewlineAndReportsTheOffset) {
  TempDir dir;
  fs::path p = dir / "sub" / "log.jsonl";
  AppendOutcome a = append_line(p, "one");
  AppendOutcome b = append_line(p, "two\n");
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 4u);
  EXPECT_FALSE(a.repaired_torn_tail);
  EXPECT_EQ(*read_file(p), "one\ntwo\n");
}

TEST(AppendLine, CutsATornTail) {
  TempDir dir;
  fs::path p = dir / "log";
  raw_write(p, "one\ntwo\nthr");
  AppendOutcome o = append_line(p, "four");
  EXPECT_TRUE(o.repaired_torn_tail);
  EXPECT_EQ(o.torn_bytes, 3u);
  EXPECT_EQ(o.offset, 8u);
  EXPECT_EQ(*read_file(p), "one\ntwo\nfour\n");
  // A file that is all tail.
  raw_write(p, "partial");
  EXPECT_TRUE(append_line(p, "x").repaired_torn_tail);
  EXPECT_EQ(*read_file(p), "x\n");
}

TEST(AppendLine, KeepsAWholeUnterminatedRecordWhenThePolicySaysSo) {
  TempDir dir;
  fs::path p = dir / "log";
  raw_write(p, "{\"a\":1}\n{\"b\":2}");
  TailPolicy json_lines{[](std::string_view t) { return t.front() == '{' && t.back() == '}'; }, 1024};
  AppendOutcome o = append_line(p, "{\"c\":3}", true, json_lines);
  EXPECT_FALSE(o.repaired_torn_tail);
  EXPECT_TRUE(o.terminated_tail);
  EXPECT_EQ(o.offset, 16u);
  EXPECT_EQ(*read_file(p), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
}

TEST(AppendLine, RefusesALongTailAsDamageAndChangesNothing) {
  TempDir dir;
  fs::path p = dir / "log";
  const std::string junk = "ok\n" + std::string(10000, '\x07');
  raw_write(p, junk);
  TailPolicy small{{}, 4096};
  try {
    append_line(p, "x", true, small);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::corrupt);
    EXPECT_NE(e.hint().find("session clean"), std::string::npos);
  }
  EXPECT_EQ(*read_file(p), junk);
}

TEST(AtomicWrite, ReplacesWholeAndLeavesNoTemporaryFile) {
  TempDir dir;
  fs::path p = dir / "a" / "doc.json";
  atomic_write(p, "first");
  atomic_write(p, "second");
  EXPECT_EQ(*read_file(p), "second");
  int files = 0;
  for (const auto& e : fs::directory_iterator(p.parent_path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(AtomicWrite, AReaderSeesTheOldOrTheNewContentNeverAMix) {
  TempDir dir;
  fs::path p = dir / "doc";
  const std::string a(200000, 'a'), b(300000, 'b');
  atomic_write(p, a);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0; i < 200; ++i) atomic_write(p, i % 2 ? a : b, false);
    ::_exit(0);
  }
  int mixed = 0;
  for (int i = 0; i < 2000; ++i) {
    auto c = read_file(p);
    if (!c || (*c != a && *c != b)) ++mixed;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(mixed, 0);
}

TEST(ReadFile, MissingIsNulloptAFolderIsAnError) {
  TempDir dir;
  EXPECT_FALSE(read_file(dir / "none").has_value());
  EXPECT_THROW(read_file(dir.path()), Error);
  try {
    read_file_or_throw(dir / "none");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

TEST(StaleTempFiles, OnlyThoseOfDeadProcesses) {
  TempDir dir;
  raw_write(dir / "results.tsv.tmp.999999999.ab12", "x");
  raw_write(dir / fmt::format("results.tsv.tmp.{}.cd34", ::getpid()), "x");  // a live writer
  raw_write(dir / "notes.tmp.txt", "x");
  raw_write(dir / ".tmp.1.x", "x");
  auto stale = stale_temp_files(dir.path());
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].filename(), "results.tsv.tmp.999999999.ab12");
  EXPECT_TRUE(stale_temp_files(dir / "missing").empty());
}

TEST(FileLock, IsReleasedWhenTheHolderDies) {
  TempDir dir;
  fs::path lock = dir / ".lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    FileLock held(lock, std::chrono::milliseconds(1000), "child");
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  EXPECT_FALSE(FileLock::try_acquire(lock, std::chrono::milliseconds(0)).has_value());
  EXPECT_NE(FileLock::describe_holder(lock).find("child"), std::string::npos);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(FileLock::try_acquire(lock, std::chrono::milliseconds(1000)).has_value());
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace croq
