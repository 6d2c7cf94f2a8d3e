// The exclusive device lease: one holder at a time, a waiting process learns who holds it, and the
// lease is free again when its holder goes (also when the holder is a dead process).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

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

}  // namespace
}  // namespace croq
