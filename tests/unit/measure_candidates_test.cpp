// Which file `croq measure` measures for each dsl, and where its results go.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "croq/measure/candidates.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;

class Candidates : public ::testing::Test {
 protected:
  TaskRef task(const std::string& dsl) {
    return make_task("sm90_NVIDIA_H200", dsl, "matmul_f16fp32_512x512x512", "opus-4");
  }
  fs::path touch(const fs::path& p, bool exec = false) {
    atomic_write(p, "x", false);
    if (exec) ::chmod(p.c_str(), 0755);
    return p;
  }
  test::TempDir m_dir;
  Workspace m_ws{m_dir.path()};
};

TEST_F(Candidates, CudaAndCppMeasureTheBuiltSharedObject) {
  TaskRef t = task("cuda");
  fs::path bin = m_ws.kind_dir(t, ArtifactKind::bin);
  touch(bin / "iter004_tiles.so");
  CandidateRef c = resolve_candidate(m_ws, t, "iter004_tiles", "", false);
  EXPECT_EQ(c.kind, CandidateKind::shared_object);
  EXPECT_EQ(c.path, bin / "iter004_tiles.so");
  EXPECT_EQ(c.kernel, "iter004_tiles");
  EXPECT_EQ(*c.iter_number, 4);
  // Without the tag: the one iter004_<tag> there.
  EXPECT_EQ(resolve_candidate(m_ws, t, "iter004", "", false).kernel, "iter004_tiles");
  touch(bin / "iter004_other.so");
  EXPECT_THROW(resolve_candidate(m_ws, t, "iter004", "", false), Error);
  EXPECT_EQ(measurement_path(m_ws, t, c.kernel), m_ws.kind_dir(t, ArtifactKind::perf) / "measure_iter004_tiles.json");
  EXPECT_EQ(timing_text_path(m_ws, t, c), m_ws.kind_dir(t, ArtifactKind::perf) / "timing_iter004.txt");
}

TEST_F(Candidates, AMissingCandidateSaysWhereItLookedAndHowToBuildIt) {
  try {
    resolve_candidate(m_ws, task("cuda"), "iter009_late", "", false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
    EXPECT_NE(std::string(e.what()).find("iter009_late.so"), std::string::npos);
    EXPECT_NE(e.hint().find("croq build"), std::string::npos);
  }
}

TEST_F(Candidates, CroqtileFallsBackToTheGeneratedProgramAndLegacyNeedsAnExecutable) {
  TaskRef t = task("croqtile");
  fs::path bin = m_ws.kind_dir(t, ArtifactKind::bin);
  touch(bin / "iter002_warp", true);
  CandidateRef c = resolve_candidate(m_ws, t, "iter002_warp", "", false);
  EXPECT_EQ(c.kind, CandidateKind::legacy_program);
  touch(bin / "iter002_warp.so");
  EXPECT_EQ(resolve_candidate(m_ws, t, "iter002_warp", "", false).kind, CandidateKind::shared_object);
  EXPECT_EQ(resolve_candidate(m_ws, t, "iter002_warp", "", true).kind, CandidateKind::legacy_program);
}

TEST_F(Candidates, TritonMeasuresTheScriptThroughThePythonRunner) {
  TaskRef t = task("triton");
  touch(m_ws.kind_dir(t, ArtifactKind::srcs) / "iter003_blocks.py");
  CandidateRef c = resolve_candidate(m_ws, t, "iter003", "", false);
  EXPECT_EQ(c.kind, CandidateKind::python);
  EXPECT_EQ(c.kernel, "iter003_blocks");
}

TEST_F(Candidates, AnExplicitFileIsTakenByItsKind) {
  fs::path so = touch(m_dir / "mine.so");
  EXPECT_EQ(resolve_candidate(m_ws, task("cuda"), "", so.string(), false).kind, CandidateKind::shared_object);
  fs::path exe = touch(m_dir / "prog", true);
  EXPECT_EQ(resolve_candidate(m_ws, task("cuda"), "", exe.string(), true).kind, CandidateKind::legacy_program);
  fs::path text = touch(m_dir / "notes.txt");
  EXPECT_THROW(resolve_candidate(m_ws, task("cuda"), "", text.string(), false), Error);
}

TEST_F(Candidates, TheTimingFileCarriesTheSeedsLines) {
  Measurement m;
  m.verdict = Verdict::PASS;
  m.reason = "ok";
  m.verification.passed = true;
  m.tflops = 512.3;
  Timing t;
  t.median_ms = 0.2683;
  m.timing = t;
  std::string text = timing_text(m, "iter004_tiles", "perf/x.json");
  EXPECT_NE(text.find("TFLOPS: 512.30   time_ms: 0.2683"), std::string::npos) << text;
  EXPECT_NE(text.find("VERIFY: PASS"), std::string::npos);
  EXPECT_EQ(text.find("robust_cv="), std::string::npos) << "a record from before the robust spread has none";
  t.cv = 0.1645;
  t.robust_cv = 0.0054;
  m.timing = t;
  text = timing_text(m, "iter004_tiles", "perf/x.json");
  EXPECT_NE(text.find("cv=0.1645 robust_cv=0.0054 reps="), std::string::npos) << text;
}

}  // namespace
}  // namespace croq
