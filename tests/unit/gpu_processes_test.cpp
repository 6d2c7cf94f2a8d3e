// nvidia-smi parsing and the classification of GPU processes as ours, stale or foreign; `--kill`
// only ever signals stale processes of croq's own.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <map>
#include <set>

#include "croq/gpu/device_key.hpp"
#include "croq/gpu/processes.hpp"

namespace croq {
namespace {

class TableProcs : public ProcReader {
 public:
  std::map<int, ProcFacts> table;
  std::optional<ProcFacts> read(int pid) override {
    auto it = table.find(pid);
    if (it == table.end()) return std::nullopt;
    return it->second;
  }
  void add(int pid, int uid, int ppid, std::string exe) {
    table[pid] = ProcFacts{pid, uid, ppid, exe, exe.substr(exe.rfind('/') + 1)};
  }
};

TEST(GpuQuery, ParsesTheGpuAndComputeAppQueries) {
  auto gpus = parse_gpu_query(
      "0, NVIDIA H200, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11, 9.0, 580.159.04, 00000000:18:00.0, 143771, 14, 0, 31, 345, 1980\n");
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(make_gpu_key(gpus[0].name, gpus[0].compute_cap), "sm90_NVIDIA_H200");
  EXPECT_EQ(gpus[0].max_sm_clock_mhz, 1980);
  auto apps = parse_compute_apps(
      "4242, /usr/bin/python3, 20480, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n"
      "77, croq-gpu-runner, [N/A], GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11\n\n");
  ASSERT_EQ(apps.size(), 2u);
  EXPECT_EQ(apps[0].pid, 4242);
  EXPECT_EQ(apps[0].used_memory_mib, 20480);
  EXPECT_EQ(apps[1].used_memory_mib, 0);
  EXPECT_TRUE(parse_compute_apps("No running processes found\n").empty());
}

TEST(GpuProcesses, OursStaleAndForeignAreTold) {
  TableProcs p;
  const int me = 1000;
  p.add(10, me, 1, "/home/u/croq/build/bin/croq");                  // a croq measure
  p.add(11, me, 10, "/home/u/croq/build/bin/croq-gpu-runner");       // its runner: ours, waited for
  p.add(20, me, 1, "/home/u/croq/build/bin/croq-gpu-runner");        // orphaned runner: stale
  p.add(21, me, 1, "/w/tuning/sm90_NVIDIA_H200/croqtile/bin/k/m/iter003_x");  // orphaned legacy binary
  p.add(30, me, 1, "/usr/bin/python3");                              // the user's notebook: foreign
  p.add(40, 0, 1, "/usr/bin/vllm");                                  // another user: foreign
  std::vector<ComputeApp> apps = {{11, "croq-gpu-runner", 100, ""}, {20, "croq-gpu-runner", 100, ""},
                                  {21, "iter003_x", 100, ""},       {30, "python3", 100, ""},
                                  {40, "vllm", 100, ""},            {50, "hidden", 100, ""}};
  auto procs = classify_processes(apps, p, me);
  ASSERT_EQ(procs.size(), 6u);
  EXPECT_TRUE(procs[0].ours);
  EXPECT_FALSE(procs[0].stale);
  EXPECT_TRUE(procs[1].ours);
  EXPECT_TRUE(procs[1].stale);
  EXPECT_TRUE(procs[2].stale);
  EXPECT_FALSE(procs[3].ours);
  EXPECT_FALSE(procs[4].ours);
  EXPECT_NE(procs[4].why.find("another user"), std::string::npos);
  EXPECT_FALSE(procs[5].ours);
  EXPECT_NE(procs[5].why.find("not visible"), std::string::npos);

  std::vector<std::pair<int, int>> signals;
  std::set<int> alive = {20, 21};
  auto killed = end_stale_processes(
      procs,
      [&](int pid, int sig) {
        signals.emplace_back(pid, sig);
        if (sig == SIGKILL || pid == 20) alive.erase(pid);  // 21 ignores SIGTERM
        return 0;
      },
      [&](int pid) { return alive.count(pid) > 0; }, 50);
  EXPECT_EQ(killed, (std::vector<int>{20, 21}));
  for (const auto& [pid, sig] : signals) EXPECT_TRUE(pid == 20 || pid == 21) << pid;
  EXPECT_NE(std::find(signals.begin(), signals.end(), std::make_pair(21, static_cast<int>(SIGKILL))), signals.end());
  EXPECT_EQ(std::find(signals.begin(), signals.end(), std::make_pair(20, static_cast<int>(SIGKILL))), signals.end());
}

TEST(GpuHealthCheck, IdleMeansNoProcessAndNoLoad) {
  GpuInfo g;
  g.utilization_pct = 0;
  g.memory_used_mib = 14;
  EXPECT_TRUE(evaluate_health(g, {}).idle);
  g.utilization_pct = 97;
  GpuHealth busy = evaluate_health(g, {{4242, "python3", 20480, ""}});
  EXPECT_FALSE(busy.idle);
  ASSERT_EQ(busy.reasons.size(), 2u);
  EXPECT_NE(busy.reasons[0].find("python3 (pid 4242)"), std::string::npos);
  g.utilization_pct = 0;
  g.temperature_c = 90;
  GpuHealth hot = evaluate_health(g, {});
  EXPECT_TRUE(hot.idle);
  EXPECT_EQ(hot.warnings.size(), 1u);
}

TEST(GpuSelection, CudaVisibleDevicesAndDeviceFlagPickTheGpu) {
  auto gpus = parse_gpu_query(
      "0, NVIDIA H200, GPU-aaaa1111, 9.0, 580, x, 1, 1, 0, 30, 1, 1\n"
      "1, NVIDIA H200, GPU-bbbb2222, 9.0, 580, x, 1, 1, 0, 30, 1, 1\n");
  ::setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
  EXPECT_EQ(select_gpu(gpus, "")->uuid, "GPU-bbbb2222");
  EXPECT_EQ(select_gpu(gpus, "0")->uuid, "GPU-aaaa1111");
  ::setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa", 1);
  EXPECT_EQ(select_gpu(gpus, "")->index, 0);
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(select_gpu(gpus, "")->index, 0);
  EXPECT_FALSE(select_gpu(gpus, "7"));
}

}  // namespace
}  // namespace croq
