// croq gpu key / check / contention against a fake nvidia-smi on PATH (a shell script replaying
// recorded output), so the verbs are tested on a machine without a GPU. `contention --kill` is
// tested on a real orphaned "runner" process (a copy of sleep named croq-gpu-runner).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_gpu_line =
    "0, NVIDIA H200, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11, 9.0, 580.159.04, 00000000:18:00.0, 143771, 14, 0, 31, "
    "345, 1980";

class GpuCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(m_dir / "bin");
    fs::create_directories(m_dir / "leases");
    write_fake("");
  }
  // The fake prints the GPU line, and the compute apps listed in the file apps.csv.
  void write_fake(const std::string& apps) {
    atomic_write(m_dir / "apps.csv", apps, false);
    fs::path fake = m_dir / "bin" / "nvidia-smi";
    atomic_write(fake,
                 "#!/bin/sh\n"
                 "case \"$*\" in\n"
                 "  *--query-gpu=*) echo '" + std::string(k_gpu_line) + "' ;;\n"
                 "  *--query-compute-apps=*) cat '" + (m_dir / "apps.csv").string() + "' ;;\n"
                 "  *) exit 9 ;;\n"
                 "esac\n",
                 false);
    fs::permissions(fake, fs::perms::owner_all);
  }
  std::map<std::string, std::string> env(bool with_fake = true) {
    std::string path = with_fake ? (m_dir / "bin").string() + ":/usr/bin:/bin" : (m_dir / "leases").string();
    return {{"PATH", path}, {"CROQ_LEASE_DIR", (m_dir / "leases").string()}, {"CUDA_VISIBLE_DEVICES", ""}};
  }
  test::TempDir m_dir;
};

TEST_F(GpuCli, KeyNamesTheDeviceAsTheSeedsDid) {
  auto r = run_croq({}, {"gpu", "key"}, env());
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.doc["key"], "sm90_NVIDIA_H200");
  EXPECT_EQ(r.doc["uuid"], "GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11");
  EXPECT_EQ(r.doc["driver"], "580.159.04");
  EXPECT_NE(r.err.find("sm90_NVIDIA_H200"), std::string::npos);
}

TEST_F(GpuCli, KeyWithoutAGpuIsTheNoDeviceExit) {
  auto r = run_croq({}, {"gpu", "key"}, env(false));
  EXPECT_EQ(r.rc, 7) << r.out;
  EXPECT_EQ(r.doc["error"]["code"], "no_device");
  auto missing = run_croq({}, {"gpu", "key", "--device", "5"}, env());
  EXPECT_EQ(missing.rc, 7);
}

TEST_F(GpuCli, CheckSaysIdleOrBusyAndWaitsWithATimeout) {
  auto idle = run_croq({}, {"gpu", "check"}, env());
  ASSERT_EQ(idle.rc, 0) << idle.err;
  EXPECT_TRUE(idle.doc["idle"].get<bool>());
  EXPECT_FALSE(idle.doc["lease"]["held"].get<bool>());
  write_fake("4242, /usr/bin/python3, 20480, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n");
  auto busy = run_croq({}, {"gpu", "check"}, env());
  EXPECT_EQ(busy.rc, 1);
  EXPECT_FALSE(busy.doc["idle"].get<bool>());
  EXPECT_NE(busy.doc["reasons"][0].get<std::string>().find("pid 4242"), std::string::npos);
  auto waited = run_croq({}, {"gpu", "check", "--wait", "--timeout", "0.3", "--interval", "0.1"}, env());
  EXPECT_EQ(waited.rc, 6);
  EXPECT_NE(waited.err.find("waiting"), std::string::npos);
  EXPECT_EQ(run_croq({}, {"gpu", "check", "--reset"}, env()).rc, 2);
}

TEST_F(GpuCli, ContentionTellsOursFromForeignAndKillsOnlyStaleRunners) {
  // A stale "runner": croq-gpu-runner with no croq process above it.
  fs::copy_file("/bin/sleep", m_dir / "bin" / "croq-gpu-runner");
  const std::string runner = (m_dir / "bin" / "croq-gpu-runner").string();
  pid_t stale = ::fork();
  if (stale == 0) {
    ::execl(runner.c_str(), "croq-gpu-runner", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(stale, 0);
  write_fake(std::to_string(stale) + ", croq-gpu-runner, 512, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n" +
             "999999, vllm, 40960, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n");
  auto look = run_croq({}, {"gpu", "contention", "--json"}, env());
  ASSERT_EQ(look.rc, 0) << look.err;
  EXPECT_EQ(look.doc["ours"], 1);
  EXPECT_EQ(look.doc["foreign"], 1);
  EXPECT_EQ(look.doc["stale"], 1);
  EXPECT_TRUE(look.doc["killed"].empty());
  EXPECT_EQ(::kill(stale, 0), 0);  // looking kills nothing

  auto kill = run_croq({}, {"gpu", "contention", "--kill"}, env());
  ASSERT_EQ(kill.rc, 0) << kill.err;
  ASSERT_EQ(kill.doc["killed"].size(), 1u);
  EXPECT_EQ(kill.doc["killed"][0], stale);
  int status = 0;
  ASSERT_EQ(::waitpid(stale, &status, 0), stale);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(run_croq({}, {"gpu", "contention", "--kill-ours"}, env()).rc, 2);
}

}  // namespace
}  // namespace croq
