// Which measurement documents may back a stored figure (protocol/provenance.hpp): only those croq
// wrote for this task and kernel, unchanged, of the binary croq built. Each test is one way of
// passing off a document croq did not write for the round.
#include <gtest/gtest.h>

#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"
#include "croq/protocol/provenance.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"
#include "croq/util/hash.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

using test::TempDir;

class Provenance : public ::testing::Test {
 protected:
  void SetUp() override {
    ws = std::make_unique<Workspace>(dir.path());
    task = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "m1");
    other = make_task("cpu_x86_64", "cpp", "matmul_f32_64x64x64", "m2");
    ensure_dir(ws->kind_dir(task, ArtifactKind::logs));
  }
  void enforce() {
    ProtocolConfig cfg;
    cfg.enforced = true;
    write_protocol(*ws, task, cfg);
  }
  // What `croq build` leaves: evidence of the build with the output's hash.
  void built(const TaskRef& t, const std::string& kernel, const std::string& output_sha) {
    fs::path doc = ws->kind_dir(t, ArtifactKind::perf) / ("build_" + kernel + ".json");
    atomic_write(doc, "{}");
    record_evidence(*ws, t, EvidenceKind::build, kernel, doc, {{"verdict", "OK"}, {"output_sha256", output_sha}});
  }
  // What `croq measure` leaves: the document and its evidence entry.
  fs::path measured(const TaskRef& t, const std::string& kernel, const std::string& candidate_sha, double tflops = 1.5,
                    const std::string& kind = "candidate") {
    fs::path f = ws->kind_dir(t, ArtifactKind::perf) / ("measure_" + kernel + ".json");
    atomic_write(f, dump_pretty(doc(tflops, candidate_sha, kind)) + "\n");
    record_evidence(*ws, t, EvidenceKind::measure, kernel, f, {{"verdict", "PASS"}});
    return f;
  }
  static json doc(double tflops, const std::string& candidate_sha, const std::string& kind = "candidate") {
    return {{"schema", "croq-measurement-v1"},
            {"kind", kind},
            {"verdict", "PASS"},
            {"reason", "ok"},
            {"candidate", {{"path", "x.so"}, {"sha256", candidate_sha}}},
            {"problem", {{"op", "matmul"}, {"m", 64}, {"n", 64}, {"k", 64}, {"dtype", "f32"}}},
            {"tflops", tflops},
            {"timing", {{"median_ms", 0.5}, {"cv", 0.01}, {"reps", 20}}},
            {"source", "measured"}};
  }
  MeasurementProvenance check(const fs::path& file, const std::string& kernel, bool require_build = true) {
    return check_measurement_provenance(*ws, task, read_measurement_file(file), kernel, require_build);
  }
  TempDir dir;
  TempDir elsewhere;
  std::unique_ptr<Workspace> ws;
  TaskRef task, other;
};

TEST_F(Provenance, CroqsOwnMeasurementOfTheBuiltBinaryIsTrusted) {
  built(task, "iter001_naive", "abc123");
  fs::path f = measured(task, "iter001_naive", "abc123");
  auto p = check(f, "iter001_naive");
  EXPECT_TRUE(p.trusted) << p.problem;
  ASSERT_TRUE(p.entry);
  EXPECT_EQ(p.entry->kernel, "iter001_naive");
}

// The reproduction: 5000 TFLOPS for 64^3 in a file written by hand outside the workspace,
// candidate.sha256 "00", no binary behind it.
TEST_F(Provenance, AHandWrittenFileOutsideTheWorkspaceIsRefused) {
  fs::path fake = elsewhere / "fake.json";
  atomic_write(fake, doc(5000, "00").dump());
  auto p = check(fake, "iter001_fake");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("not a measurement croq wrote for task"), std::string::npos) << p.problem;
  // Even when the same hand-written content lies inside the workspace, where croq puts its own.
  fs::path inside = ws->kind_dir(task, ArtifactKind::perf) / "measure_iter001_fake.json";
  atomic_write(inside, doc(5000, "00").dump());
  EXPECT_FALSE(check(inside, "iter001_fake").trusted);
}

TEST_F(Provenance, AnEditedDocumentIsRefused) {
  built(task, "iter002_x", "abc");
  fs::path f = measured(task, "iter002_x", "abc", 1.5);
  atomic_write(f, dump_pretty(doc(9.5, "abc")) + "\n");  // a better figure typed in
  auto p = check(f, "iter002_x");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("was changed after croq wrote it"), std::string::npos) << p.problem;
}

TEST_F(Provenance, ACopiedDocumentIsRefusedAndNamesTheOriginal) {
  built(task, "iter002_x", "abc");
  fs::path f = measured(task, "iter002_x", "abc");
  fs::path copy = ws->kind_dir(task, ArtifactKind::perf) / "mine.json";
  atomic_write(copy, *read_file(f));
  auto p = check(copy, "iter002_x");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("is a copy"), std::string::npos) << p.problem;
  EXPECT_NE(p.hint.find("measure_iter002_x.json"), std::string::npos) << p.hint;
}

TEST_F(Provenance, ADocumentOfAnotherTaskIsRefused) {
  built(other, "iter002_x", "abc");
  fs::path f = measured(other, "iter002_x", "abc");  // croq's, genuine, but for task m2
  built(task, "iter002_x", "abc");
  auto p = check(f, "iter002_x");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("not a measurement croq wrote for task"), std::string::npos) << p.problem;
}

TEST_F(Provenance, AMeasurementOfAnotherKernelIsRefused) {
  built(task, "iter001_start", "aaa");
  built(task, "iter002_x", "bbb");
  fs::path f = measured(task, "iter001_start", "aaa", 20.0);  // the best's figure for a candidate
  auto p = check(f, "iter002_x");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("measurement of iter001_start, not of iter002_x"), std::string::npos) << p.problem;
  // And a baseline's document is not a candidate's (nor the reverse).
  fs::path b = measured(task, "iter000_openblas", "", 30.0, "baseline");
  EXPECT_TRUE(check(b, "iter000_openblas").trusted);
  EXPECT_FALSE(check(b, "iter002_x").trusted);
  fs::path c = measured(task, "iter000_openblas", "", 30.0, "candidate");
  EXPECT_FALSE(check(c, "iter000_openblas").trusted);
}

TEST_F(Provenance, TheMeasuredCandidateMustBeTheBinaryCroqBuilt) {
  built(task, "iter002_x", "real");
  fs::path f = measured(task, "iter002_x", "00");  // another binary than the one built
  auto p = check(f, "iter002_x");
  EXPECT_FALSE(p.trusted);
  EXPECT_NE(p.problem.find("is not the binary `croq build` made"), std::string::npos) << p.problem;
  // No build at all: refused where builds are required (enforced), trusted otherwise.
  fs::path g = measured(task, "iter003_y", "whatever");
  EXPECT_FALSE(check(g, "iter003_y", true).trusted);
  EXPECT_TRUE(check(g, "iter003_y", false).trusted);
  // A build after the measurement does not vouch for it.
  built(task, "iter003_y", "whatever");
  EXPECT_FALSE(check(g, "iter003_y", true).trusted);
}

TEST_F(Provenance, EnforcedTasksRefuseAdvisoryTasksStoreItAsUnverified) {
  fs::path fake = elsewhere / "fake.json";
  atomic_write(fake, doc(5000, "00").dump());
  MeasurementFile mf = read_measurement_file(fake);
  StoreRequest req;
  req.source = "measured";
  req.extra["measurement"] = measurement_provenance(mf, fake.string());
  auto p = vet_measurement(*ws, task, req, mf, "iter001_fake");
  EXPECT_FALSE(p.trusted);
  EXPECT_EQ(req.source, "unverified");
  EXPECT_NE(req.extra["measurement"].value("unverified", "").find("not a measurement croq wrote"), std::string::npos);

  enforce();
  StoreRequest again;
  try {
    vet_measurement(*ws, task, again, mf, "iter001_fake");
    ADD_FAILURE() << "an enforced task accepted a hand-written measurement";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::refused);
    EXPECT_EQ(e.details().value("rule", ""), "measurement_from_croq");
  }
}

TEST_F(Provenance, ATypedBaselineIsRefusedInAnEnforcedTask) {
  enforce();
  RoundRecord r;
  r.round = 0;
  r.iter = "iter000";
  r.kernel = "iter000_openblas";
  r.decision = Decision::BASELINE;
  r.tflops = 5000;
  r.bottleneck = "n/a";
  try {
    guard_store(*ws, task, r, json(nullptr));
    ADD_FAILURE() << "a typed BASELINE was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::refused);
    EXPECT_EQ(e.details().value("rule", ""), "measured_numbers_only");
  }
}

// CroqTile's cu_finetuned is what croq's build found (the .cu against choreo's output for the .co),
// not what a driver says: it is written into the record, and an --extra claim that contradicts it,
// co_bypassed for choreo's own .cu, or a build document edited after the build are refused.
TEST_F(Provenance, CroqtilesBuildFactsAreTheBuildsToSay) {
  const TaskRef co = make_task("sm90_NVIDIA_H200", "croqtile", "matmul_f16f32_256x256x256", "m1");
  auto build_doc = [&](const std::string& kernel, bool finetuned) {
    fs::path doc = ws->kind_dir(co, ArtifactKind::perf) / ("build_" + kernel + ".json");
    atomic_write(doc, json{{"verdict", "OK"}, {"cu_finetuned", finetuned}}.dump());
    record_evidence(*ws, co, EvidenceKind::build, kernel, doc, {{"verdict", "OK"}});
    return doc;
  };
  auto store = [&](const std::string& kernel, json extra) {
    StoreRequest req;
    req.extra = std::move(extra);
    apply_build_facts(*ws, co, req, kernel);
    return req.extra;
  };
  build_doc("iter001_generated", false);
  EXPECT_EQ(store("iter001_generated", json::object())["cu_finetuned"], false);
  EXPECT_EQ(store("iter001_generated", {{"cu_finetuned", false}, {"co_changed", true}})["co_changed"], true);
  EXPECT_THROW(store("iter001_generated", {{"cu_finetuned", true}}), Error);
  EXPECT_THROW(store("iter001_generated", {{"co_bypassed", true}}), Error);

  fs::path tuned = build_doc("iter002_tuned", true);
  EXPECT_EQ(store("iter002_tuned", {{"co_bypassed", true}})["cu_finetuned"], true);
  EXPECT_THROW(store("iter002_tuned", {{"cu_finetuned", false}}), Error);
  atomic_write(tuned, json{{"verdict", "OK"}, {"cu_finetuned", false}}.dump());  // edited by hand
  EXPECT_THROW(store("iter002_tuned", json::object()), Error);

  // A kernel croq did not build here carries no build facts.
  EXPECT_EQ(store("iter003_other", {{"cu_finetuned", true}})["cu_finetuned"], true);
}

}  // namespace
}  // namespace croq
