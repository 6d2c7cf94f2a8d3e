// Sharing a GPU, through the real croq executable on the real lock files, against a fake
// nvidia-smi on PATH (a shell script reading its answers from files the test rewrites):
//   - one lease per device: a profile holding it blocks a measurement on the same GPU and a
//     measurement holding it blocks a profile (real croq processes on both sides); the lease
//     history shows the two never overlapped;
//   - a foreign compute process before or after a measurement (or a clock limit) makes it
//     contended: shown, refused as a decision's evidence by store-round and decide; croq waits for
//     the GPU to be idle first, up to --idle-timeout.
// The measured program is a legacy self-timed script, so no GPU runner is needed.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "croq/gpu/lease.hpp"
#include "croq/util/fs.hpp"
#include "support/test_support.hpp"

namespace croq {
namespace {

namespace fs = std::filesystem;
using test::run_croq;

const char* k_uuid = "GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11";
const char* k_key = "matmul_f16fp32_64x64x64";

class GpuSharing : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(m_dir / "bin");
    fs::create_directories(m_dir / "leases");
    fs::create_directories(m_dir / "ws" / "tuning");
    set_apps("");
    set_load("0", "0x0000000000000000");
    const fs::path smi = m_dir / "bin" / "nvidia-smi";
    atomic_write(smi,
                 "#!/bin/sh\n"
                 "case \"$*\" in\n"
                 "  *--query-gpu=uuid,utilization.gpu,*) cat '" + (m_dir / "load.csv").string() + "' ;;\n"
                 "  *--query-gpu=*) echo '0, NVIDIA H200, " + std::string(k_uuid) +
                     ", 9.0, 580.159.04, 00000000:18:00.0, 143771, 14, 0, 31, 345, 1980' ;;\n"
                 "  *--query-compute-apps=*) cat '" + (m_dir / "apps.csv").string() + "' ;;\n"
                 "  *) exit 9 ;;\n"
                 "esac\n",
                 false);
    ::chmod(smi.c_str(), 0755);
    // A self-timed program: passes its own check and reports a figure.
    m_program = m_dir / "legacy.sh";
    atomic_write(m_program, "#!/bin/sh\necho 'VERIFY: PASS'\necho 'TFLOPS: 50.0   time_ms: 0.01'\n", false);
    ::chmod(m_program.c_str(), 0755);
    // A stand-in for ncu that takes its time (the profile holds the lease meanwhile).
    m_ncu = m_dir / "slow-ncu";
    atomic_write(m_ncu, "#!/bin/sh\nsleep 3\nexit 1\n", false);
    ::chmod(m_ncu.c_str(), 0755);
    const fs::path bin = m_dir / "ws" / "tuning/sm90_NVIDIA_H200/cuda/bin" / k_key / "m1";
    fs::create_directories(bin);
    atomic_write(bin / "iter001_naive.so", "not loaded: the fake ncu never runs it", false);
  }

  void set_apps(const std::string& csv) { atomic_write(m_dir / "apps.csv", csv, false); }
  void set_load(const std::string& utilization, const std::string& reasons) {
    atomic_write(m_dir / "load.csv", std::string(k_uuid) + ", " + utilization + ", " + reasons + "\n", false);
  }

  std::map<std::string, std::string> env() const {
    return {{"PATH", (m_dir / "bin").string() + ":/usr/bin:/bin"},
            {"CROQ_LEASE_DIR", (m_dir / "leases").string()},
            {"CUDA_VISIBLE_DEVICES", ""}};
  }
  std::vector<std::string> task() const {
    return {"--gpu", "sm90_NVIDIA_H200", "--dsl", "cuda", "--shape-key", k_key, "--model", "m1"};
  }
  test::CroqRun measure(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"measure"};
    auto t = task();
    args.insert(args.end(), t.begin(), t.end());
    args.insert(args.end(), {"--candidate", m_program.string(), "--legacy"});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_croq(m_dir / "ws", args, env());
  }
  test::CroqRun profile(const std::string& lease_timeout_s) {
    std::vector<std::string> args = {"profile"};
    auto t = task();
    args.insert(args.end(), t.begin(), t.end());
    args.insert(args.end(), {"--iter", "iter001_naive", "--round", "1", "--ncu", m_ncu.string(), "--runner", "/bin/true",
                             "--lease-timeout", lease_timeout_s});
    return run_croq(m_dir / "ws", args, env());
  }
  // Waits until someone holds the device's lease (the other croq process got there).
  bool lease_taken() {
    ::setenv("CROQ_LEASE_DIR", (m_dir / "leases").c_str(), 1);
    for (int i = 0; i < 200; ++i) {
      if (DeviceLease::state(k_uuid).held) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }
  void TearDown() override { ::unsetenv("CROQ_LEASE_DIR"); }

  // The lease history's holding intervals [acquire, release] by pid, in time order.
  std::vector<std::pair<double, double>> held_intervals(std::vector<std::string>* purposes = nullptr) {
    ::setenv("CROQ_LEASE_DIR", (m_dir / "leases").c_str(), 1);
    std::map<long long, double> open;
    std::vector<std::pair<double, double>> out;
    for (const json& e : DeviceLease::history(k_uuid)) {
      const long long pid = e.value("pid", 0LL);
      const double t = e.value("t_ms", 0.0);
      if (e.value("event", "") == "acquire") {
        open[pid] = t;
        if (purposes) purposes->push_back(e.value("purpose", ""));
      } else if (open.count(pid)) {
        out.emplace_back(open[pid], t);
        open.erase(pid);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  test::TempDir m_dir;
  fs::path m_program, m_ncu;
};

TEST_F(GpuSharing, AProfileHoldingTheLeaseBlocksAMeasurementOnTheSameGpu) {
  auto prof = std::async(std::launch::async, [&] { return profile("10"); });
  ASSERT_TRUE(lease_taken()) << "the profile never took the lease";
  auto m = measure({"--lease-timeout", "0.5"});
  EXPECT_EQ(m.rc, 6) << m.err << m.out;
  EXPECT_EQ(m.doc["error"]["code"], "busy");
  EXPECT_NE(m.doc["error"]["message"].get<std::string>().find("croq profile"), std::string::npos) << m.out;
  prof.get();
  // Once the profile has let go, the measurement runs; the history shows no overlap.
  auto again = measure();
  EXPECT_EQ(again.rc, 0) << again.err;
  std::vector<std::string> purposes;
  auto held = held_intervals(&purposes);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_LE(held[0].second, held[1].first);
  ASSERT_EQ(purposes.size(), 2u);
  EXPECT_NE(purposes[0].find("croq profile"), std::string::npos);
  EXPECT_NE(purposes[1].find("croq measure"), std::string::npos);
}

TEST_F(GpuSharing, AMeasurementHoldingTheLeaseBlocksAProfileOnTheSameGpu) {
  // The measurement holds the lease while it waits for a foreign process to leave the GPU.
  set_apps(std::string("4242, python3, 20480, ") + k_uuid + "\n");
  auto meas = std::async(std::launch::async, [&] { return measure({"--idle-timeout", "3"}); });
  ASSERT_TRUE(lease_taken()) << "the measurement never took the lease";
  auto p = profile("0.5");
  EXPECT_EQ(p.rc, 6) << p.err << p.out;
  EXPECT_NE(p.doc["error"]["message"].get<std::string>().find("croq measure"), std::string::npos) << p.out;
  auto m = meas.get();
  EXPECT_EQ(m.rc, 6) << m.err;  // still shared when the wait ran out: contended
  // The dashboard and `croq gpu check` read that one file too.
  auto check = run_croq({}, {"gpu", "check"}, env());
  EXPECT_EQ(check.doc["lease"]["device_id"], k_uuid);
  EXPECT_EQ(check.doc["lease"]["file"], (m_dir / "leases" / (std::string("croq-gpu-") + k_uuid + ".lock")).string());
}

TEST_F(GpuSharing, AForeignProcessBeforeMakesTheMeasurementContendedAndItIsNotEvidence) {
  set_apps(std::string("4242, python3, 20480, ") + k_uuid + "\n");
  auto m = measure({"--idle-timeout", "0.2"});
  EXPECT_EQ(m.rc, 6) << m.err;
  EXPECT_EQ(m.doc["verdict"], "PASS");  // shown with its figure ...
  EXPECT_TRUE(m.doc["contended"].get<bool>());
  EXPECT_NE(std::find(m.doc["flags"].begin(), m.doc["flags"].end(), "contended"), m.doc["flags"].end());
  const std::string reason = m.doc["contention"]["reasons"][0].get<std::string>();
  EXPECT_NE(reason.find("before: compute process pid 4242 python3"), std::string::npos) << reason;
  EXPECT_EQ(m.doc["contention"]["before"]["processes"][0]["pid"], 4242);
  EXPECT_NE(m.err.find("CONTENDED"), std::string::npos);
  // ... but never stored as a decision's evidence, nor decided on.
  const std::string file = (m_dir / "ws" / m.doc["files"]["measurement"].get<std::string>()).string();
  std::vector<std::string> store = {"store-round"};
  auto t = task();
  store.insert(store.end(), t.begin(), t.end());
  store.insert(store.end(), {"--iter", "iter001", "--kernel", "iter001_naive", "--decision", "KEEP", "--bottleneck",
                             "compute_bound", "--idea", "x", "--measurement", file});
  auto s = run_croq(m_dir / "ws", store, env());
  EXPECT_EQ(s.rc, 5) << s.out;
  EXPECT_NE(s.doc["error"]["message"].get<std::string>().find("contended"), std::string::npos);
  EXPECT_NE(s.doc["error"]["message"].get<std::string>().find("pid 4242"), std::string::npos);
  std::vector<std::string> decide = {"decide"};
  decide.insert(decide.end(), t.begin(), t.end());
  decide.insert(decide.end(), {"--measurement", file, "--kernel", "iter001_naive"});
  EXPECT_EQ(run_croq(m_dir / "ws", decide, env()).rc, 5);
}

TEST_F(GpuSharing, AProcessThatComesDuringTheRunIsSeenAfterIt) {
  // The program starts "another job" on the GPU while it runs.
  atomic_write(m_program,
               "#!/bin/sh\necho '999, vllm, 40960, " + std::string(k_uuid) + "' > '" + (m_dir / "apps.csv").string() +
                   "'\necho 'VERIFY: PASS'\necho 'TFLOPS: 50.0   time_ms: 0.01'\n",
               false);
  ::chmod(m_program.c_str(), 0755);
  auto m = measure({"--idle-timeout", "0"});
  EXPECT_EQ(m.rc, 6) << m.err;
  EXPECT_FALSE(m.doc["contention"]["before"]["contended"].get<bool>());
  EXPECT_TRUE(m.doc["contention"]["after"]["contended"].get<bool>());
  EXPECT_NE(m.doc["contention"]["reasons"][0].get<std::string>().find("after: compute process pid 999 vllm"),
            std::string::npos);
}

TEST_F(GpuSharing, AClockLimitBeforeOrAfterIsContentionButTheRunsOwnPowerCapIsNot) {
  set_load("0", "0x0000000000000040");  // hardware thermal slowdown
  auto hot = measure({"--idle-timeout", "0"});
  EXPECT_EQ(hot.rc, 6);
  EXPECT_NE(hot.doc["contention"]["reasons"][0].get<std::string>().find("hw_thermal_slowdown"), std::string::npos);
  // The software power cap right after the run is the measurement's own load.
  atomic_write(m_program,
               "#!/bin/sh\necho '" + std::string(k_uuid) + ", 100, 0x0000000000000004' > '" +
                   (m_dir / "load.csv").string() + "'\necho 'VERIFY: PASS'\necho 'TFLOPS: 50.0   time_ms: 0.01'\n",
               false);
  ::chmod(m_program.c_str(), 0755);
  set_load("0", "0x0000000000000001");
  auto capped = measure({"--idle-timeout", "0"});
  EXPECT_EQ(capped.rc, 0) << capped.err;
  EXPECT_FALSE(capped.doc["contended"].get<bool>());
  EXPECT_EQ(capped.doc["contention"]["after"]["clock_reasons"][0], "sw_power_cap");
}

TEST_F(GpuSharing, TheMeasurementWaitsForTheGpuToBeIdle) {
  set_apps(std::string("4242, python3, 20480, ") + k_uuid + "\n");
  std::thread leave([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    set_apps("");
  });
  auto m = measure({"--idle-timeout", "30"});
  leave.join();
  EXPECT_EQ(m.rc, 0) << m.err;
  EXPECT_FALSE(m.doc["contended"].get<bool>());
  EXPECT_GE(m.doc["contention"]["waited_ms"].get<double>(), 1000);
  EXPECT_NE(m.err.find("not idle"), std::string::npos);
}

}  // namespace
}  // namespace croq
