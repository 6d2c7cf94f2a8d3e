// What croq_store_loop stores for round <seq>: shared by the helper and the test that checks the
// survivors of its crashes.
#pragma once
#include <string>

namespace croq::test {

inline constexpr const char* k_loop_gpu = "sm90_NVIDIA_H200";
inline constexpr const char* k_loop_shape = "matmul_f16fp32_2048x1024x512";
inline constexpr const char* k_loop_model = "crash-test";

// Idea text with every character class that broke the seeds' records, and a length that varies
// with seq so that records straddle page boundaries at many offsets.
inline std::string expected_idea(long seq) {
  std::string idea = "round " + std::to_string(seq) +
                     ": it's \"quoted\"\ttabbed\nmulti-line \\ back\\slash, Zürich ≈ 日本 🚀 $HOME `x`; ";
  idea += std::string(static_cast<size_t>((seq * 37) % 1500), static_cast<char>('a' + seq % 26));
  return idea;
}
// The concurrency test's task and what its worker W stores as round I.
inline constexpr const char* k_race_shape = "matmul_f16fp32_4096x4096x4096";
inline constexpr const char* k_race_model = "race";
inline std::string worker_idea(long worker, long i) {
  return "worker " + std::to_string(worker) + " round " + std::to_string(i) + " \"q\" 'a'\tt";
}

inline std::string loop_tag(long seq) { return "s" + std::to_string(seq); }
// Every fifth round fails: it is stored under an attempt id and frees its iteration number.
inline std::string loop_decision(long seq) {
  if (seq % 5 == 3) return "COMPILE_FAIL";
  return seq % 2 ? "DISCARD" : "KEEP";
}

}  // namespace croq::test
