// The exclusive device lease: one holder at a time, a waiting process learns who holds it, and the
// lease is free again when its holder goes (also when the holder is a dead process).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <thread>
#include <vector>

#include "croq/gpu/lease.hpp"
#include "croq/util/error.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

class Lease : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CROQ_LEASE_DIR", m_dir.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("CROQ_LEASE_DIR"); }
  test::TempDir m_dir;
};

// A process that holds a device's lease and asks for it again waits on itself: the second flock(2)
// is another open file description. The GPU test binary holds the lease for its whole run
// (tests/gpu/gpu_lease_env.cpp), so a GPU test that takes it again hangs until its time limit
// (on the H200, four tests did, 2026-12-02). Only the environment may take it there.
TEST(GpuTestsLease, OnlyTheTestEnvironmentTakesTheLeaseInTheGpuTestBinary) {
  const std::filesystem::path dir = std::filesystem::path(CROQ_SOURCE_DIR) / "tests" / "gpu";
  int scanned = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cpp" || entry.path().filename() == "gpu_lease_env.cpp") continue;
    ++scanned;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      EXPECT_EQ(line.find("DeviceLease::"), std::string::npos)
          << entry.path().filename().string() << ":" << n << " takes the device's lease the process already holds: " << line;
    }
  }
  EXPECT_GE(scanned, 5);
}

TEST_F(Lease, OnlyOneHolderAtATimeAndTheWaiterIsToldWho) {
  auto first = DeviceLease::try_acquire("GPU-1234", "croq measure iter004_x");
  ASSERT_TRUE(first);
  EXPECT_EQ(DeviceLease::lock_path("GPU-1234"), m_dir.path() / "croq-gpu-GPU-1234.lock");
  EXPECT_FALSE(DeviceLease::try_acquire("GPU-1234", "second"));
  EXPECT_TRUE(DeviceLease::try_acquire("GPU-5678", "another device"));
  std::string told;
  try {
    DeviceLease::acquire("GPU-1234", "second", std::chrono::milliseconds(100),
                         [&](const std::string& holder) { told = holder; });
    ADD_FAILURE() << "took a held lease";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::busy);
    EXPECT_NE(std::string(e.what()).find("croq measure iter004_x"), std::string::npos);
  }
  EXPECT_NE(told.find("croq measure iter004_x"), std::string::npos);
  EXPECT_NE(told.find("pid " + std::to_string(::getpid())), std::string::npos);
}

TEST_F(Lease, AWaiterGetsTheLeaseWhenTheHolderReleasesIt) {
  std::optional<DeviceLease> holder = DeviceLease::try_acquire("gpu0", "holder");
  ASSERT_TRUE(holder);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    holder.reset();
  });
  bool waited = false;
  DeviceLease got = DeviceLease::acquire("gpu0", "waiter", std::chrono::seconds(10), [&](const std::string&) { waited = true; });
  release.join();
  EXPECT_TRUE(waited);
  EXPECT_GE(got.waited().count(), 100);
  EXPECT_NE(DeviceLease::holder("gpu0").find("waiter"), std::string::npos);
}

// A waiter blocks in flock until the release (no polling); one that gave up at its timeout must
// not keep the device: its blocked call lets the lock go as soon as it gets it.
TEST_F(Lease, AWaiterThatGaveUpDoesNotKeepTheDevice) {
  std::optional<DeviceLease> holder = DeviceLease::try_acquire("gpu1", "holder");
  ASSERT_TRUE(holder);
  EXPECT_THROW(DeviceLease::acquire("gpu1", "impatient", std::chrono::milliseconds(50)), Error);
  holder.reset();
  std::optional<DeviceLease> next;
  for (int i = 0; i < 400 && !next; ++i) {
    if (auto l = DeviceLease::try_acquire("gpu1", "next")) {
      next.emplace(std::move(*l));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ASSERT_TRUE(next) << "the lease stayed taken after its waiter gave up";
  EXPECT_NE(DeviceLease::holder("gpu1").find("next"), std::string::npos);
  // Several waiters in turn: each gets it when the one before releases.
  std::vector<std::thread> waiters;
  std::atomic<int> served{0};
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      DeviceLease l = DeviceLease::acquire("gpu1", "waiter", std::chrono::seconds(30));
      ++served;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  next.reset();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(served.load(), 4);
}

TEST_F(Lease, ADeadHoldersLeaseIsFree) {
  pid_t child = ::fork();
  if (child == 0) {
    auto l = DeviceLease::try_acquire("GPU-dead", "child");
    ::_exit(l ? 0 : 1);  // exits while holding it
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(DeviceLease::try_acquire("GPU-dead", "after"));
}

TEST_F(Lease, TheHistoryRecordsEveryHoldingInOrder) {
  {
    auto a = DeviceLease::acquire("GPU-h", "croq profile t iter001_x", std::chrono::seconds(1));
  }
  std::optional<DeviceLease> b = DeviceLease::try_acquire("GPU-h", "croq measure t iter002_y");
  ASSERT_TRUE(b);
  b.reset();
  auto h = DeviceLease::history("GPU-h");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0]["event"], "acquire");
  EXPECT_EQ(h[0]["purpose"], "croq profile t iter001_x");
  EXPECT_EQ(h[1]["event"], "release");
  EXPECT_GE(h[1]["held_ms"].get<double>(), 0.0);
  EXPECT_EQ(h[2]["purpose"], "croq measure t iter002_y");
  EXPECT_EQ(h[3]["event"], "release");
  for (size_t i = 1; i < h.size(); ++i) EXPECT_LE(h[i - 1]["t_ms"].get<double>(), h[i]["t_ms"].get<double>());
  EXPECT_EQ(h[0]["pid"], ::getpid());
}

TEST_F(Lease, TheStateIsReadWithoutTakingOrWriting) {
  EXPECT_FALSE(DeviceLease::state("GPU-s").held);
  auto held = DeviceLease::try_acquire("GPU-s", "croq measure x");
  ASSERT_TRUE(held);
  const auto before = DeviceLease::history("GPU-s").size();
  LeaseState st = DeviceLease::state("GPU-s");
  EXPECT_TRUE(st.held);
  EXPECT_NE(st.holder.find("croq measure x"), std::string::npos);
  EXPECT_EQ(st.path, DeviceLease::lock_path("GPU-s"));
  EXPECT_EQ(DeviceLease::history("GPU-s").size(), before);
  EXPECT_NE(DeviceLease::holder("GPU-s").find("croq measure x"), std::string::npos);
}

TEST_F(Lease, ALinkPlantedUnderTheLeasesNameIsNotFollowed) {
  const auto victim = m_dir.path() / "victim.txt";
  {
    std::ofstream(victim) << "precious";
  }
  std::filesystem::create_symlink(victim, DeviceLease::lock_path("GPU-link"));
  EXPECT_THROW(DeviceLease::try_acquire("GPU-link", "x"), Error);
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
}

TEST_F(Lease, WithoutNvidiaSmiTheIdIsTheUuidGivenOrTheIndex) {
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", m_dir.path().c_str(), 1);  // no nvidia-smi
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(resolve_gpu_lease_id(""), "gpu0");
  EXPECT_EQ(resolve_gpu_lease_id("3"), "gpu3");
  EXPECT_EQ(resolve_gpu_lease_id("GPU-abc"), "GPU-abc");
  ::setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
  EXPECT_EQ(resolve_gpu_lease_id(""), "gpu2");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::setenv("PATH", path.c_str(), 1);
}

}  // namespace
}  // namespace croq
