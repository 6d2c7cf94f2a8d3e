// Contention checks around a measurement, against replayed nvidia-smi answers (a fake process
// runner) and a fake /proc: who is on the GPU before and after, which clock limits count, the
// wait for an idle device, the field name of older drivers, and the record a measurement gets.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <mutex>

#include "croq/gpu/contention.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/util/process.hpp"

namespace croq {
namespace {

const char* k_uuid = "GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11";

// Answers nvidia-smi: the compute apps and the load (utilization, clock reasons) come from
// queues (the last answer repeats), so a test scripts what each successive check sees.
class FakeSmi : public ProcessRunner {
 public:
  std::deque<std::string> apps{""};
  std::deque<std::string> load{std::string(k_uuid) + ", 0, 0x0000000000000001"};
  bool old_driver = false;  // rejects clocks_event_reasons, as drivers before the rename did
  std::vector<std::string> queries;

  ProcessResult run(const ProcessSpec& spec) override {
    std::lock_guard<std::mutex> lock(m_mutex);
    ProcessResult r;
    r.started = true;
    r.exit_code = 0;
    const std::string q = spec.argv.size() > 1 ? spec.argv[1] : "";
    queries.push_back(q);
    if (q.rfind("--query-compute-apps=", 0) == 0) {
      r.out = next(apps);
    } else if (q.rfind("--query-gpu=uuid,utilization.gpu,", 0) == 0) {
      if (old_driver && q.find("clocks_event_reasons") != std::string::npos) {
        r.exit_code = 2;
        r.err = "Field \"clocks_event_reasons.active\" is not a valid field to query.";
      } else {
        r.out = next(load) + "\n";
      }
    } else {
      r.exit_code = 9;
    }
    return r;
  }

 private:
  static std::string next(std::deque<std::string>& q) {
    std::string v = q.front();
    if (q.size() > 1) q.pop_front();
    return v;
  }
  std::mutex m_mutex;
};

class NoProc : public ProcReader {
 public:
  std::optional<ProcFacts> read(int) override { return std::nullopt; }
};

class Contention : public ::testing::Test {
 protected:
  void SetUp() override { set_process_runner(&m_smi); }
  void TearDown() override { set_process_runner(nullptr); }
  FakeSmi m_smi;
  NoProc m_proc;
};

TEST(GpuLoad, ParsesTheDevicesLineOnly) {
  auto l = parse_gpu_load("GPU-other, 99, 0x0000000000000004\n" + std::string(k_uuid) + ", 7, 0x0000000000000048\n",
                          k_uuid);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->utilization_pct, 7);
  EXPECT_EQ(l->clock_reasons, 0x48u);
  EXPECT_FALSE(parse_gpu_load("0, NVIDIA H200, GPU-8d6b5f52-1d4e-2e47-5c59-3d1a0e2a9f11, 9.0", k_uuid));
  auto na = parse_gpu_load(std::string(k_uuid) + ", [N/A], [N/A]", k_uuid);
  ASSERT_TRUE(na);
  EXPECT_FALSE(na->utilization_pct);
  EXPECT_FALSE(na->clock_reasons);
}

TEST_F(Contention, AnyComputeProcessOnTheDeviceIsContentionOtherDevicesAreNot) {
  m_smi.apps = {std::string("4242, python3, 20480, ") + k_uuid + "\n77, trainer, 100, GPU-another\n"};
  ContentionCheck before = check_contention(k_uuid, true, m_proc);
  EXPECT_TRUE(before.contended());
  ASSERT_EQ(before.processes.size(), 1u);
  EXPECT_EQ(before.processes[0].app.pid, 4242);
  ASSERT_EQ(before.reasons.size(), 1u);
  EXPECT_NE(before.reasons[0].find("pid 4242 python3 (20480 MiB)"), std::string::npos) << before.reasons[0];
  EXPECT_NE(before.reasons[0].find("not visible in this process namespace"), std::string::npos);
  m_smi.apps = {""};
  EXPECT_FALSE(check_contention(k_uuid, false, m_proc).contended());
}

TEST_F(Contention, BeforeAnIdleGpuMustBeUnloadedAfterOnlyHardwareLimitsCount) {
  m_smi.load = {std::string(k_uuid) + ", 60, 0x0000000000000000"};
  ContentionCheck busy = check_contention(k_uuid, true, m_proc);
  ASSERT_TRUE(busy.contended());
  EXPECT_NE(busy.reasons[0].find("utilization 60 %"), std::string::npos);
  EXPECT_FALSE(check_contention(k_uuid, false, m_proc).contended());  // after: our own load

  m_smi.load = {std::string(k_uuid) + ", 0, 0x0000000000000004"};  // software power cap
  EXPECT_TRUE(check_contention(k_uuid, true, m_proc).contended());
  EXPECT_FALSE(check_contention(k_uuid, false, m_proc).contended());

  m_smi.load = {std::string(k_uuid) + ", 100, 0x0000000000000088"};  // hardware slowdown and power brake
  ContentionCheck after = check_contention(k_uuid, false, m_proc);
  ASSERT_TRUE(after.contended());
  EXPECT_NE(after.reasons[0].find("hw_slowdown, hw_power_brake_slowdown"), std::string::npos) << after.reasons[0];
}

TEST_F(Contention, OlderDriversReasonsFieldIsUsed) {
  m_smi.old_driver = true;
  m_smi.load = {std::string(k_uuid) + ", 0, 0x0000000000000020"};
  ContentionCheck c = check_contention(k_uuid, true, m_proc);
  EXPECT_TRUE(c.contended());
  EXPECT_TRUE(c.errors.empty());
  bool asked_old = false;
  for (const auto& q : m_smi.queries) asked_old |= q.find("clocks_throttle_reasons.active") != std::string::npos;
  EXPECT_TRUE(asked_old);
}

TEST_F(Contention, WithoutNvidiaSmiNothingIsContendedAndTheChecksSaySo) {
  set_process_runner(nullptr);
  class Missing : public ProcessRunner {
   public:
    ProcessResult run(const ProcessSpec&) override { return {}; }
  } missing;
  set_process_runner(&missing);
  ContentionCheck c = check_contention(k_uuid, true, m_proc);
  EXPECT_FALSE(c.contended());
  EXPECT_EQ(c.errors.size(), 2u);
  EXPECT_FALSE(c.processes_listed);
}

TEST_F(Contention, TheWaitEndsWhenTheDeviceIsIdleOrTheTimeIsUp) {
  const std::string busy = std::string("4242, python3, 20480, ") + k_uuid + "\n";
  m_smi.apps = {busy, busy, ""};
  int told = 0;
  double waited = 0;
  ContentionCheck c = wait_until_idle(k_uuid, std::chrono::seconds(10), std::chrono::milliseconds(20),
                                      [&](const ContentionCheck& w) {
                                        ++told;
                                        EXPECT_TRUE(w.contended());
                                      },
                                      &waited);
  EXPECT_FALSE(c.contended());
  EXPECT_EQ(told, 1);
  EXPECT_GE(waited, 35.0);

  m_smi.apps = {busy};
  ContentionCheck still = wait_until_idle(k_uuid, std::chrono::milliseconds(100), std::chrono::milliseconds(20));
  EXPECT_TRUE(still.contended());
}

TEST_F(Contention, TheRecordNamesBeforeDuringAndAfter) {
  ContentionCheck before = check_contention(k_uuid, true, m_proc);
  m_smi.apps = {std::string("999, vllm, 40960, ") + k_uuid + "\n"};
  ContentionCheck after = check_contention(k_uuid, false, m_proc);
  json r = contention_record(before, after, 12.4, 1);
  EXPECT_TRUE(r["contended"].get<bool>());
  ASSERT_EQ(r["reasons"].size(), 2u);
  EXPECT_EQ(r["reasons"][0], "during: 1 other compute process on the device while it was timed");
  EXPECT_NE(r["reasons"][1].get<std::string>().find("after: compute process pid 999 vllm"), std::string::npos);
  EXPECT_EQ(r["waited_ms"], 12);
  EXPECT_FALSE(r["before"]["contended"].get<bool>());

  Measurement m;
  m.contention = r;
  EXPECT_TRUE(m.contended());
  EXPECT_NE(m.contention_reason().find("pid 999"), std::string::npos);
  auto back = Measurement::from_json(m.to_json());
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->contended());
  EXPECT_FALSE(Measurement{}.contended());
  EXPECT_TRUE(contention_record(before, before, 0, 0)["contended"] == false);
}

}  // namespace
}  // namespace croq
