// Reading Nsight Compute CSVs: both forms of the real H200 fixture, ncu's number format, and every
// malformed input refused with a clear error (never a crash, never a silent guess).
#include <gtest/gtest.h>

#include <string>

#include "croq/profile/kernel_select.hpp"
#include "croq/profile/ncu_csv.hpp"
#include "croq/util/error.hpp"
#include "croq/util/fs.hpp"

using namespace croq::profile;

namespace {

const std::string k_raw = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/cublas_nvjet_f16_4096_full_raw.csv";
const std::string k_sol = std::string(CROQ_TEST_DATA_DIR) + "/ncu/h200/cublas_nvjet_sol_section.csv";

std::string raw_text() { return croq::read_file_or_throw(k_raw); }

template <class F>
croq::ExitCode error_code(F f, std::string* message = nullptr) {
  try {
    f();
  } catch (const croq::Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no croq::Error thrown";
  return croq::ExitCode::ok;
}

std::string quote_row(const std::vector<std::string>& row) {
  std::string s;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) s += ",";
    std::string c = row[i];
    std::string q;
    for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    s += "\"" + q + "\"";
  }
  return s + "\n";
}

}  // namespace

TEST(NcuCsv, RawPageFixtureHasOneKernelWithUnitsAndGroupedNumbers) {
  NcuCsv csv = parse_ncu_csv(raw_text(), "fixture");
  EXPECT_EQ(csv.form, CsvForm::raw_page);
  EXPECT_EQ(csv.columns, 2238u);
  ASSERT_EQ(csv.kernels.size(), 1u);
  const KernelProfile& k = csv.kernels[0];
  EXPECT_EQ(k.name, "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(k.grid_size, "(2, 66, 1)");
  EXPECT_EQ(k.cc, "9.0");
  EXPECT_DOUBLE_EQ(*k.number("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 86.920222);
  EXPECT_DOUBLE_EQ(*k.number("GPC_B.TriageCompute.gpc__cgas_active_realtime.avg"), 2297056.0);  // "2,297,056"
  EXPECT_EQ(k.find("gpu__time_duration.sum")->unit, "us");
  EXPECT_FALSE(k.number("sass__inst_executed_register_spilling_mem_local").has_value());  // "no data"
}

TEST(NcuCsv, SectionFormGroupsMetricsBySectionAndKeepsRuleMessages) {
  NcuCsv csv = parse_ncu_csv(croq::read_file_or_throw(k_sol), "sol");
  EXPECT_EQ(csv.form, CsvForm::long_form);
  ASSERT_EQ(csv.kernels.size(), 1u);
  const KernelProfile& k = csv.kernels[0];
  EXPECT_EQ(k.name, "nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT");
  const MetricValue* d = k.find("GPU Speed Of Light Throughput/Duration");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->unit, "ns");
  EXPECT_DOUBLE_EQ(*d->number, 189600.0);
  EXPECT_DOUBLE_EQ(*k.number("GPU Speed Of Light Throughput/Compute (SM) Throughput"), 86.84);
  ASSERT_EQ(k.rule_messages.size(), 1u);
  EXPECT_NE(k.rule_messages[0].find("greater than 80.0%"), std::string::npos);
}

TEST(NcuCsv, NumbersInNcuFormat) {
  EXPECT_DOUBLE_EQ(*parse_ncu_number("1,234.5"), 1234.5);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("2,297,056"), 2297056.0);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("-3"), -3.0);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("1.5e+06"), 1.5e6);
  EXPECT_DOUBLE_EQ(*parse_ncu_number("0"), 0.0);
  EXPECT_FALSE(parse_ncu_number("(384, 1, 1)"));
  EXPECT_FALSE(parse_ncu_number("22,46"));
  EXPECT_FALSE(parse_ncu_number("12,34,567"));
  EXPECT_FALSE(parse_ncu_number("no data"));
  EXPECT_FALSE(parse_ncu_number(""));
}

TEST(NcuCsv, DecimalCommaCellsAreRecognised) {
  EXPECT_TRUE(looks_like_decimal_comma("22,46"));
  EXPECT_TRUE(looks_like_decimal_comma("86,920222"));
  EXPECT_TRUE(looks_like_decimal_comma("1.234,5"));
  EXPECT_TRUE(looks_like_decimal_comma("1.234.567"));
  EXPECT_FALSE(looks_like_decimal_comma("1,234"));       // English thousands: read as 1234
  EXPECT_FALSE(looks_like_decimal_comma("1,234,567"));
  EXPECT_FALSE(looks_like_decimal_comma("86.92"));
  EXPECT_FALSE(looks_like_decimal_comma("(2, 66, 1)"));
  EXPECT_FALSE(looks_like_decimal_comma("PolicySpread"));
}

TEST(NcuCsv, LocalizedFileIsRefusedNotMisread) {
  // The fixture as a decimal-comma locale would print it: "86.920222" -> "86,920222".
  std::string text = raw_text();
  size_t p = text.find("\"86.920222\"");
  ASSERT_NE(p, std::string::npos);
  text.replace(p, 11, "\"86,920222\"");
  std::string msg;
  EXPECT_EQ(error_code([&] { parse_ncu_csv(text, "loc.csv"); }, &msg), croq::ExitCode::usage);
  EXPECT_NE(msg.find("decimal comma"), std::string::npos) << msg;
}

TEST(NcuCsv, TruncatedFileIsCorrupt) {
  std::string text = raw_text();
  std::string msg;
  // Cut inside the kernel row, at a cell boundary: the row is shorter than the header.
  size_t row3 = text.find('\n', text.find('\n') + 1) + 1;
  size_t cut = text.find("\",\"", row3 + (text.size() - row3) / 2) + 1;
  EXPECT_EQ(error_code([&] { parse_ncu_csv(text.substr(0, cut), "cut.csv"); }, &msg), croq::ExitCode::corrupt);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // Cut inside a quoted cell.
  EXPECT_EQ(error_code([&] { parse_ncu_csv(text.substr(0, cut + 3), "cut.csv"); }, &msg), croq::ExitCode::corrupt);
  EXPECT_NE(msg.find("unterminated"), std::string::npos) << msg;
}

// Found by the fuzzer (tests/fuzz, target ncu_csv): a metric row that reaches the Metric Value
// column but not the Section Name column after it was read past its end.
TEST(NcuCsv, ASectionColumnPastAShortRowsEndReadsAsNoSection) {
  std::string text =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Section Name\"\n"
      "\"0\",\"k\",\"Duration\",\"usecond\",\"1.5\",\"GPU Speed Of Light Throughput\"\n"
      "\"0\",\"k\",\"Elapsed Cycles\",\"cycle\",\"2000\"\n";
  NcuCsv csv = parse_ncu_csv(text, "short.csv");
  ASSERT_EQ(csv.kernels.size(), 1u);
  EXPECT_EQ(csv.kernels[0].metrics.count("GPU Speed Of Light Throughput/Duration"), 1u);
  EXPECT_EQ(csv.kernels[0].metrics.count("/Elapsed Cycles"), 1u);
}

TEST(NcuCsv, EmptyFileAndHeaderOnlyProfileAreRefused) {
  std::string msg;
  EXPECT_EQ(error_code([&] { parse_ncu_csv("", "e.csv"); }, &msg), croq::ExitCode::usage);
  EXPECT_NE(msg.find("empty"), std::string::npos);
  EXPECT_EQ(error_code([&] { parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n", "e.csv"); }, &msg),
            croq::ExitCode::usage);
  std::string text = raw_text();
  size_t units_end = text.find('\n', text.find('\n') + 1) + 1;
  EXPECT_EQ(error_code([&] { parse_ncu_csv(text.substr(0, units_end), "h.csv"); }, &msg), croq::ExitCode::usage);
  EXPECT_NE(msg.find("no kernel rows"), std::string::npos) << msg;
}

TEST(NcuCsv, FileWithoutIdentityColumnsIsNotAnNcuCsv) {
  std::string msg;
  EXPECT_EQ(error_code([&] { parse_ncu_csv("a,b,c\n1,2,3\n", "x.csv"); }, &msg), croq::ExitCode::usage);
  EXPECT_NE(msg.find("Kernel Name"), std::string::npos) << msg;
  EXPECT_EQ(error_code([&] { parse_ncu_csv("\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\"\n\"0\",\"k\",\"S\",\"M\"\n", "x.csv"); }, &msg),
            croq::ExitCode::usage);
  EXPECT_NE(msg.find("Metric Value"), std::string::npos) << msg;
}

TEST(NcuCsv, NcuLogLinesAndProgramOutputBeforeTheTableAreSkipped) {
  std::string text = "==PROF== Connected to process 842 (/tmp/gp)\nresult \"quoted, unbalanced\nTFLOPS=396.9\n" + raw_text() +
                     "==PROF== Disconnected from process 842\n";
  NcuCsv csv = parse_ncu_csv(text, "log.csv");
  ASSERT_EQ(csv.kernels.size(), 1u);
}

TEST(KernelSelect, PicksTheCandidateAmongLibraryAndHarnessRowsAndSaysWhy) {
  auto rows = split_csv(raw_text());
  ASSERT_EQ(rows.size(), 3u);
  int name_col = -1, dur_col = -1;
  for (size_t i = 0; i < rows[0].size(); ++i) {
    if (rows[0][i] == "Kernel Name") name_col = static_cast<int>(i);
    if (rows[0][i] == "gpu__time_duration.sum") dur_col = static_cast<int>(i);
  }
  ASSERT_GE(name_col, 0);
  ASSERT_GE(dur_col, 0);
  auto init = rows[2], cand = rows[2];
  init[0] = "1";
  init[static_cast<size_t>(name_col)] = "void croq_fill_random<__half>(__half*, long, unsigned long)";
  init[static_cast<size_t>(dur_col)] = "900.5";  // the longest row: must still not be chosen
  cand[0] = "2";
  cand[static_cast<size_t>(name_col)] = "naive_matmul(const __half*, const __half*, float*, long, long, long)";
  cand[static_cast<size_t>(dur_col)] = "95.25";
  std::string text = quote_row(rows[0]) + quote_row(rows[1]) + quote_row(rows[2]) + quote_row(init) + quote_row(cand);
  NcuCsv csv = parse_ncu_csv(text, "three.csv");
  ASSERT_EQ(csv.kernels.size(), 3u);
  KernelSelection s = select_kernel(csv, "");
  EXPECT_EQ(csv.kernels[s.index].name.rfind("naive_matmul", 0), 0u);
  EXPECT_NE(s.reason.find("not a library or harness"), std::string::npos) << s.reason;
  EXPECT_EQ(s.rows[0]["origin"], "library");
  EXPECT_EQ(s.rows[1]["origin"], "harness");
  EXPECT_EQ(s.rows[2]["origin"], "candidate");
  // An explicit pattern wins.
  KernelSelection lib = select_kernel(csv, "^nvjet");
  EXPECT_EQ(csv.kernels[lib.index].name.rfind("nvjet", 0), 0u);
  EXPECT_EQ(error_code([&] { select_kernel(csv, "^nothing_like_this$"); }), croq::ExitCode::not_found);
  EXPECT_EQ(error_code([&] { select_kernel(csv, "(unclosed"); }), croq::ExitCode::usage);
}

TEST(KernelSelect, OriginsByName) {
  EXPECT_EQ(kernel_origin("nvjet_sm90_hss_256x128_64x4_1x2_h_bz_coopA_NNT"), KernelOrigin::library);
  EXPECT_EQ(kernel_origin("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"), KernelOrigin::library);
  EXPECT_EQ(kernel_origin("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)"), KernelOrigin::library);
  EXPECT_EQ(kernel_origin("croq_fill_uniform"), KernelOrigin::harness);
  EXPECT_EQ(kernel_origin("init_inputs(float*, int)"), KernelOrigin::harness);
  EXPECT_EQ(kernel_origin("matmul_operand_swizzle_kernel"), KernelOrigin::candidate);  // "operand" is not "rand"
  EXPECT_EQ(kernel_origin("croq_matmul_tiled"), KernelOrigin::candidate);
  EXPECT_EQ(kernel_origin("wgmma_gemm_1p2c"), KernelOrigin::candidate);
}
