// croq's exit codes are a contract with its drivers (the croq-tune skill reads 3 as drift, a sweep
// retries 6 and never 2): their numbers never change, and each has a name of its own.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "croq/util/error.hpp"

namespace croq {
namespace {

TEST(ExitCodes, TheirNumbersAreTheContractAndEachHasItsOwnName) {
  const std::vector<std::pair<ExitCode, int>> contract = {
      {ExitCode::ok, 0},        {ExitCode::failure, 1},   {ExitCode::usage, 2},
      {ExitCode::drift, 3},     {ExitCode::not_found, 4}, {ExitCode::refused, 5},
      {ExitCode::busy, 6},      {ExitCode::no_device, 7}, {ExitCode::candidate_failed, 8},
      {ExitCode::conflict, 9},  {ExitCode::corrupt, 10},  {ExitCode::internal, 70}};
  std::set<std::string> names;
  for (const auto& [code, number] : contract) {
    EXPECT_EQ(static_cast<int>(code), number) << exit_code_name(code);
    EXPECT_STRNE(exit_code_name(code), "unknown") << number;
    names.insert(exit_code_name(code));
  }
  EXPECT_EQ(names.size(), contract.size());
  EXPECT_STREQ(exit_code_name(static_cast<ExitCode>(42)), "unknown");
}

}  // namespace
}  // namespace croq
