// Round records and their encodings: idea-log.jsonl (croq-round-v1, the truth) and results.tsv
// (the view), including the seeds' hand-written variants and torn or malformed lines.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "croq/ledger/records.hpp"

namespace croq {
namespace {

const std::string k_hard_idea =
    "swap \"double\" and 'single' quotes;\ttab, back\\slash \\n (literal), newline\nsecond line\r\n"
    "non-ASCII: Zürich ≈ 日本語 🚀, shell $HOME `cmd` $(rm -rf /) ; | & > <";

RoundRecord sample(int round, const std::string& idea = "increase stages to 4") {
  RoundRecord r;
  r.round = round;
  r.iter = fmt::format("iter{:03}", round + 1);
  r.kernel = r.iter + "_stages4";
  r.tflops = 512.25;
  r.decision = Decision::KEEP;
  r.bottleneck = "latency_bound";
  r.idea = idea;
  r.category = "pipeline";
  r.expected_gain = "+5%";
  r.timestamp = "2026-11-29T07:12:50.123Z";
  r.extra["schema"] = k_round_schema;
  r.extra["source"] = "measured";
  return r;
}

TEST(Decision, NamesAndClasses) {
  for (Decision d : {Decision::BASELINE, Decision::KEEP, Decision::DISCARD, Decision::COMPILE_FAIL, Decision::VERIFY_FAIL,
                     Decision::RUNTIME_FAIL, Decision::SEGFAULT, Decision::HANG}) {
    EXPECT_EQ(parse_decision(decision_name(d)), d);
  }
  EXPECT_EQ(parse_decision("keep"), Decision::KEEP);
  EXPECT_EQ(parse_decision("Compile_Fail"), Decision::COMPILE_FAIL);
  EXPECT_FALSE(parse_decision("KEPT").has_value());
  EXPECT_FALSE(parse_decision("").has_value());
  EXPECT_TRUE(is_failure(Decision::HANG));
  EXPECT_TRUE(is_failure(Decision::SEGFAULT));
  EXPECT_FALSE(is_failure(Decision::DISCARD));
  EXPECT_TRUE(is_measured(Decision::BASELINE));
  EXPECT_FALSE(is_measured(Decision::VERIFY_FAIL));
}

TEST(Bottleneck, UnknownIsNeverValid) {
  for (const char* b : {"memory_bound", "compute_bound", "latency_bound", "launch_bound", "mixed"}) {
    EXPECT_TRUE(is_valid_bottleneck(b)) << b;
  }
  EXPECT_FALSE(is_valid_bottleneck("unknown"));
  EXPECT_FALSE(is_valid_bottleneck("Memory_Bound"));
  EXPECT_FALSE(is_valid_bottleneck(""));
}

TEST(RoundRecord, JsonRoundTripKeepsIdeaTextExactly) {
  RoundRecord r = sample(3, k_hard_idea);
  std::string line = dump_compact(r.to_json());
  EXPECT_EQ(line.find('\n'), std::string::npos) << "a record is one line";
  JsonlParse p = parse_idea_log(line + "\n");
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_TRUE(p.warnings.empty());
  const RoundRecord& back = p.records[0];
  EXPECT_EQ(back.idea, k_hard_idea);
  EXPECT_EQ(back.round, 3);
  EXPECT_EQ(back.iter, "iter004");
  EXPECT_EQ(back.kernel, "iter004_stages4");
  EXPECT_EQ(back.tflops, 512.25);
  EXPECT_EQ(back.decision, Decision::KEEP);
  EXPECT_EQ(back.expected_gain, "+5%");
  EXPECT_EQ(back.source(), "measured");
  EXPECT_EQ(dump_compact(back.to_json()), line) << "re-encoding is byte-identical";
}

TEST(RoundRecord, SeedFieldsComeFirstAndCroqFieldsArePreserved) {
  RoundRecord r = sample(1);
  r.extra["measurement"] = {{"file", "perf/x.json"}, {"median_ms", 1.25}};
  json j = r.to_json();
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> seed = {"round", "iter", "kernel", "tflops", "decision", "bottleneck",
                                         "idea", "category", "expected_gain", "timestamp"};
  ASSERT_GE(keys.size(), seed.size());
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + 10), seed);
  auto back = RoundRecord::from_json(j);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->extra["measurement"]["median_ms"], 1.25);
}

TEST(RoundRecord, ReadsHandWrittenVariants) {
  // Numbers as strings, no "iter" (derived from the kernel), idea_summary instead of idea.
  auto j = json::parse(R"({"round":"4","kernel":"iter005_bk64","tflops":"301.5","decision":"discard",
                           "bottleneck":"memory_bound","idea_summary":"BK 64"})");
  auto r = RoundRecord::from_json(j);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->round, 4);
  EXPECT_EQ(r->iter, "iter005");
  EXPECT_EQ(r->tflops, 301.5);
  EXPECT_EQ(r->decision, Decision::DISCARD);
  EXPECT_EQ(r->idea, "BK 64");
  EXPECT_EQ(r->source(), "reported");

  auto a = RoundRecord::from_json(json::parse(R"({"kernel":"attemptAABA_x2","decision":"COMPILE_FAIL"})"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->iter, "attemptAABA");
  EXPECT_EQ(a->attempt_index(), 26);
  EXPECT_FALSE(a->iter_number().has_value());
}

TEST(RoundRecord, RefusesWhatIsNotARoundRecord) {
  std::string why;
  EXPECT_FALSE(RoundRecord::from_json(json::array(), &why));
  EXPECT_EQ(why, "not a JSON object");
  EXPECT_FALSE(RoundRecord::from_json(json::parse(R"({"decision":"KEEP"})"), &why));
  EXPECT_NE(why.find("iter"), std::string::npos);
  EXPECT_FALSE(RoundRecord::from_json(json::parse(R"({"iter":"iter001"})"), &why));
  EXPECT_NE(why.find("decision"), std::string::npos);
  EXPECT_FALSE(RoundRecord::from_json(json::parse(R"({"iter":"iter001","decision":"MAYBE"})"), &why));
  EXPECT_NE(why.find("MAYBE"), std::string::npos);
}

TEST(Tsv, EscapingRoundTripsAnyText) {
  for (const std::string& text : {k_hard_idea, std::string("\\"), std::string("\\t is not a tab"), std::string("a\\\\nb"),
                                  std::string("\t\t"), std::string("trailing backslash\\"), std::string("")}) {
    std::string e = tsv_escape(text);
    EXPECT_EQ(e.find('\t'), std::string::npos);
    EXPECT_EQ(e.find('\n'), std::string::npos);
    EXPECT_EQ(e.find('\r'), std::string::npos);
    EXPECT_EQ(tsv_unescape(e), text);
  }
  EXPECT_EQ(tsv_escape("a\tb\nc\\d"), "a\\tb\\nc\\\\d");
}

TEST(Tsv, RowMatchesTheSeedColumns) {
  RoundRecord r = sample(2, "two\tcolumns\nand lines");
  EXPECT_EQ(tsv_row(r), "iter003\titer003_stages4\t512.25\tKEEP\tlatency_bound\ttwo\\tcolumns\\nand lines");
  r.tflops.reset();
  r.decision = Decision::COMPILE_FAIL;
  EXPECT_NE(tsv_row(r).find("\t0.00\tCOMPILE_FAIL\t"), std::string::npos);
  EXPECT_EQ(std::string(k_tsv_header), "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary");
}

TEST(Tsv, CroqFormRoundTripsThroughTheReader) {
  std::string content = std::string(k_tsv_header) + "\n";
  content += tsv_row(sample(1, k_hard_idea)) + "\n";
  content += tsv_row(sample(2)) + "\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(content, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].iter, "iter002");
  EXPECT_EQ(rows[0].kernel, "iter002_stages4");
  EXPECT_EQ(rows[0].idea, k_hard_idea.substr(0, k_hard_idea.size()));
  EXPECT_EQ(rows[1].decision, Decision::KEEP);
  EXPECT_EQ(rows[1].tflops, 512.25);
}

TEST(Tsv, LegacyVariantWithARoundColumn) {
  const std::string with_header =
      "round\titer\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n"
      "0\titer000\titer000_cublas\t610.2\tBASELINE\tn/a\tcuBLAS\n"
      "3\titer004\titer004_bk64\t301.50\tDISCARD\tmemory_bound\tBK 64\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(with_header, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].round, 3);
  EXPECT_EQ(rows[1].iter, "iter004");
  EXPECT_EQ(rows[1].kernel, "iter004_bk64");
  EXPECT_EQ(rows[1].idea, "BK 64");

  const std::string no_header =
      "0\titer000\titer000_cublas\t610.2\tBASELINE\tn/a\tcuBLAS\n"
      "7\titer008\titer008_bk64\t301.50\tKEEP\tmemory_bound\tBK 64\n";
  rows = parse_results_tsv(no_header, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].round, 7);
  EXPECT_EQ(rows[1].kernel, "iter008_bk64");
  EXPECT_EQ(rows[1].decision, Decision::KEEP);
}

TEST(Tsv, LegacyVariantWithoutAKernelColumn) {
  const std::string with_header =
      "iter\ttflops\tdecision\tbottleneck\tidea_summary\n"
      "iter000_cublas\t610.2\tBASELINE\tn/a\tcuBLAS\n"
      "iter001_draft\t120\tKEEP\tmemory_bound\tstarting kernel\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(with_header, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].iter, "iter001");
  EXPECT_EQ(rows[1].kernel, "iter001_draft");
  EXPECT_EQ(rows[1].tflops, 120);
  EXPECT_EQ(rows[1].round, 1);

  const std::string no_header = "\n\niter001_draft\t120\tKEEP\tmemory_bound\tstarting kernel\n";
  rows = parse_results_tsv(no_header, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel, "iter001_draft");
  EXPECT_EQ(rows[0].decision, Decision::KEEP);
  EXPECT_EQ(rows[0].idea, "starting kernel");
}

TEST(Tsv, NoHeaderSixColumnsAndAnUnescapedTabInTheIdea) {
  const std::string content = "iter002\titer002_tma\t400\tKEEP\tmixed\tuse TMA\tand multicast\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(content, &warnings);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].kernel, "iter002_tma");
  EXPECT_EQ(rows[0].idea, "use TMA\tand multicast");
}

TEST(Tsv, UnreadableRowsAreSkippedWithAWarningNamingTheLine) {
  const std::string content = std::string(k_tsv_header) + "\n" +
                              "iter001\titer001_a\t1.0\tKEEP\tmixed\tok\n"
                              "garbage line without tabs\n"
                              "iter002\titer002_b\tfast\tDISCARD\tmixed\tbad number\n"
                              "notanid\tx\t1\tKEEP\tmixed\tno id\n"
                              "\x01\x02\xff\tbinary\n"
                              "iter003\titer003_c\t2.0\tKEEP\tmixed\tok\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(content, &warnings);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].kernel, "iter001_a");
  EXPECT_EQ(rows[1].kernel, "iter002_b");
  EXPECT_FALSE(rows[1].tflops.has_value());
  EXPECT_EQ(rows[2].kernel, "iter003_c");
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_NE(warnings[0].find("line 3"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("line 4"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[2].find("line 5"), std::string::npos) << warnings[2];
  EXPECT_NE(warnings[3].find("line 6"), std::string::npos) << warnings[3];
}

TEST(IdeaLog, TornLastLineIsSkippedWithWarning) {
  std::string good = dump_compact(sample(1).to_json()) + "\n" + dump_compact(sample(2).to_json()) + "\n";
  std::string torn = dump_compact(sample(3).to_json());
  torn.resize(torn.size() / 2);
  JsonlParse p = parse_idea_log(good + torn);
  EXPECT_EQ(p.records.size(), 2u);
  EXPECT_TRUE(p.torn_tail);
  EXPECT_EQ(p.invalid_lines, 1);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("line 3"), std::string::npos);
  EXPECT_NE(p.warnings[0].find("torn"), std::string::npos);
}

TEST(IdeaLog, AnUnterminatedButCompleteLastRecordIsRead) {
  // Hand-written files often lack the final newline.
  std::string content = dump_compact(sample(1).to_json()) + "\n" + dump_compact(sample(2).to_json());
  JsonlParse p = parse_idea_log(content);
  EXPECT_EQ(p.records.size(), 2u);
  EXPECT_FALSE(p.torn_tail);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(IdeaLog, MalformedLinesInTheMiddleAreSkippedAndNamed) {
  std::string content = dump_compact(sample(1).to_json()) + "\n" + "{not json\n" + "\n" + "  \n" + "[1,2]\n" +
                        std::string("\x00\x01\xfe\xff", 4) + "\n" + dump_compact(sample(2).to_json()) + "\n";
  JsonlParse p = parse_idea_log(content);
  EXPECT_EQ(p.records.size(), 2u);
  EXPECT_FALSE(p.torn_tail);
  EXPECT_EQ(p.invalid_lines, 3);
  ASSERT_EQ(p.warnings.size(), 3u);
  EXPECT_NE(p.warnings[0].find("line 2"), std::string::npos) << p.warnings[0];
  EXPECT_NE(p.warnings[1].find("line 5"), std::string::npos) << p.warnings[1];
  EXPECT_NE(p.warnings[2].find("line 6"), std::string::npos) << p.warnings[2];
}

TEST(IdeaLog, CrlfLineEndingsAreAccepted) {
  std::string content = dump_compact(sample(1).to_json()) + "\r\n" + dump_compact(sample(2).to_json()) + "\r\n";
  JsonlParse p = parse_idea_log(content);
  EXPECT_EQ(p.records.size(), 2u);
  EXPECT_TRUE(p.warnings.empty());
}

// Every field of an original row is kept: named columns croq does not know go to the record's own
// fields (and so into idea-log.jsonl when a legacy results.tsv is imported), the seeds' optional
// columns to theirs.
TEST(Tsv, ColumnsCroqDoesNotKnowAreKeptUnderTheirNames) {
  const std::string content =
      "round\titer\tkernel\ttflops\tdecision\tbottleneck_before\tidea_summary\tcategory\ttimestamp\tbase\tnotes\n"
      "4\titer005\titer005_bk64\t301.50\tKEEP\tmemory_bound\tBK 64\ttiling\t2026-01-02T03:04:05Z\titer002_x\tgood\n"
      "5\titer006\titer006_tab\t280\tDISCARD\tmixed\tan idea\twith a tab\tmemory\t2026-01-02T04:00:00Z\titer005_bk64\t\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(content, &warnings);
  EXPECT_TRUE(warnings.empty());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].category, "tiling");
  EXPECT_EQ(rows[0].timestamp, "2026-01-02T03:04:05Z");
  EXPECT_EQ(rows[0].bottleneck, "memory_bound");
  EXPECT_EQ(rows[0].extra["bottleneck_before"], "memory_bound");
  EXPECT_EQ(rows[0].extra["base"], "iter002_x");
  EXPECT_EQ(rows[0].extra["notes"], "good");
  json j = rows[0].to_json();
  EXPECT_EQ(j["notes"], "good");
  EXPECT_EQ(j["base"], "iter002_x");
  // One cell too many: the tab belonged to the idea, the columns after it keep their place.
  EXPECT_EQ(rows[1].idea, "an idea\twith a tab");
  EXPECT_EQ(rows[1].category, "memory");
  EXPECT_EQ(rows[1].extra["base"], "iter005_bk64");
}

// A column named like a field croq gives a meaning (source, measurement, schema) never says where a
// row's figure came from: the row is marked source tsv and the cell is kept as tsv_<name>.
TEST(Tsv, ColumnsNamedLikeCroqsOwnFieldsCannotClaimAMeasurement) {
  const std::string content =
      "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\tSource\tmeasurement\tschema\n"
      "iter005\titer005_bk64\t9999\tKEEP\tmixed\tBK 64\tmeasured\tperf/m.json\tcroq-round-v1\n";
  std::vector<std::string> warnings;
  auto rows = parse_results_tsv(content, &warnings);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].source(), "tsv");
  EXPECT_FALSE(rows[0].extra.contains("measurement"));
  EXPECT_FALSE(rows[0].extra.contains("schema"));
  EXPECT_EQ(rows[0].extra["tsv_Source"], "measured");
  EXPECT_EQ(rows[0].extra["tsv_measurement"], "perf/m.json");
  EXPECT_EQ(rows[0].extra["tsv_schema"], "croq-round-v1");
  EXPECT_EQ(rows[0].to_json()["source"], "tsv");
}

TEST(RoundRecord, TheFullKernelNameInIterGivesTheIdAndTheName) {
  auto r = RoundRecord::from_json(json::parse(R"({"round":30,"iter":"iter030_bn64","tflops":431,"decision":"KEEP",
                                                  "bottleneck":"mixed","idea":"BN 64","commit":"abc"})"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->iter, "iter030");
  EXPECT_EQ(r->kernel, "iter030_bn64");
  EXPECT_EQ(r->iter_number(), 30);
  EXPECT_EQ(r->extra["commit"], "abc");
  auto both = RoundRecord::from_json(json::parse(R"({"iter":"iter031_x","kernel":"iter031_x","decision":"DISCARD"})"));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->iter, "iter031");
  EXPECT_EQ(both->kernel, "iter031_x");
}

}  // namespace
}  // namespace croq
