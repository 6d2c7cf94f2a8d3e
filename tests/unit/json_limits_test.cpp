// Every JSON text croq reads is bounded in depth and size (a 100 000-deep line overflowed the
// stack of every verb and of the monitor), through the one parser of util/json.hpp.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "croq/ledger/records.hpp"
#include "croq/util/json.hpp"

using namespace croq;

namespace {

std::string nested_arrays(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

std::string nested_objects(size_t levels) {
  std::string s;
  for (size_t i = 0; i < levels; ++i) s += "{\"k\":";
  return s + "0" + std::string(levels, '}');
}

}  // namespace

TEST(JsonLimits, DepthIsBoundedWithAClearError) {
  JsonLimits limits;
  EXPECT_TRUE(try_parse_json(nested_arrays(limits.max_depth)));
  EXPECT_TRUE(try_parse_json(nested_objects(limits.max_depth)));
  std::string error;
  EXPECT_FALSE(try_parse_json(nested_arrays(limits.max_depth + 1), &error));
  EXPECT_EQ(error, "JSON nested deeper than 128 levels (at byte 128)");
  for (const std::string& deep : {nested_arrays(100000), nested_objects(100000), std::string(1 << 20, '[')}) {
    error.clear();
    EXPECT_FALSE(try_parse_json(deep, &error));
    EXPECT_NE(error.find("nested deeper than 128 levels"), std::string::npos) << error;
  }
  // Brackets inside strings (escaped quotes included) are text, not nesting.
  std::string text = "{\"s\":\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  auto j = try_parse_json(text);
  ASSERT_TRUE(j);
  EXPECT_EQ((*j)["s"].get<std::string>().size(), 2001u);
  // A caller may ask for less.
  EXPECT_FALSE(try_parse_json("[[[1]]]", nullptr, JsonLimits{2, 1000}));
  EXPECT_TRUE(try_parse_json("[[1]]", nullptr, JsonLimits{2, 1000}));
}

TEST(JsonLimits, SizeIsBounded) {
  std::string error;
  EXPECT_FALSE(try_parse_json("\"" + std::string(2000, 'x') + "\"", &error, JsonLimits{128, 1000}));
  EXPECT_EQ(error, "JSON text of 2002 bytes; at most 1000 are read");
  EXPECT_EQ(JsonLimits{}.max_bytes, 64u << 20);
}

TEST(JsonLimits, ParseErrorsSayWhatIsWrongWithoutTheLibrarysTag) {
  std::string error;
  EXPECT_FALSE(try_parse_json("{\"a\": oops}", &error));
  EXPECT_EQ(error.find("[json.exception"), std::string::npos) << error;
  EXPECT_NE(error.find("parse error"), std::string::npos) << error;
}

TEST(JsonLimits, ADeepLineInTheIdeaLogIsSkippedWithItsReason) {
  std::string log = "{\"round\":1,\"iter\":\"iter001\",\"kernel\":\"iter001_a\",\"tflops\":1,\"decision\":\"KEEP\"}\n" +
                    nested_arrays(100000) + "\n";
  JsonlParse p = parse_idea_log(log);
  EXPECT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.invalid_lines, 1);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("line 2"), std::string::npos);
  EXPECT_NE(p.warnings[0].find("nested deeper than 128 levels"), std::string::npos) << p.warnings[0];
}

// No reader goes around the bounds: the library's parsers are called in util/json.cpp only.
TEST(JsonLimits, OnlyTheBoundedParserIsUsed) {
  const std::regex direct(R"((json|nlohmann::ordered_json|ordered_json)\s*::\s*(parse|accept|sax_parse|from_cbor|from_msgpack|from_bson|from_ubjson|from_bjdata)\s*\()");
  std::vector<std::string> offenders;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(CROQ_SOURCE_DIR) + "/src")) {
    const std::string ext = e.path().extension().string();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh") continue;
    if (e.path().filename() == "json.cpp" && e.path().parent_path().filename() == "util") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    if (std::regex_search(ss.str(), direct)) offenders.push_back(e.path().string());
  }
  EXPECT_TRUE(offenders.empty()) << "use croq::try_parse_json: " << ::testing::PrintToString(offenders);
}

// Found by the fuzzer (tests/fuzz, target checkpoint): "round": 2e56 was cast to long long
// (undefined); an unsigned number past long long's range came back negative.
TEST(JsonLimits, IntegersOutsideLongLongAreRefusedNotWrapped) {
  auto field = [](const std::string& value) { return get_integer(*try_parse_json("{\"n\":" + value + "}"), "n"); };
  EXPECT_EQ(field("2e56"), std::nullopt);
  EXPECT_EQ(field("-1e300"), std::nullopt);
  EXPECT_EQ(field("18446744073709551615"), std::nullopt);
  EXPECT_EQ(field("9223372036854775808"), std::nullopt);
  EXPECT_EQ(field("9223372036854775807"), 9223372036854775807LL);
  EXPECT_EQ(field("-9223372036854775808"), std::numeric_limits<long long>::min());
  EXPECT_EQ(field("3.0"), 3);
  EXPECT_EQ(field("3.5"), std::nullopt);
  EXPECT_EQ(field("\"12\""), 12);
}
