// Every GPU test process holds the device's lease (gpu/lease.hpp) while it runs, the same lease
// croq measure, croq baseline and croq profile take: a GPU test never runs beside a measurement or
// a profile on the same GPU (nor beside another GPU test when ctest runs them in parallel). Taken
// only where there is a GPU; without one the tests skip anyway.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "croq/gpu/device_key.hpp"
#include "croq/gpu/lease.hpp"

namespace croq {
namespace {

class GpuLeaseEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    std::string error;
    if (query_gpus(&error).empty()) return;
    const std::string id = resolve_gpu_lease_id("");
    const std::string filter = ::testing::GTEST_FLAG(filter);
    m_lease.emplace(DeviceLease::acquire(id, "croq_gpu_tests " + filter,
                                         std::chrono::minutes(30), [&](const std::string& holder) {
                                           std::fprintf(stderr, "GPU tests: waiting for device %s: held by %s\n",
                                                        id.c_str(), holder.c_str());
                                         }));
  }
  void TearDown() override { m_lease.reset(); }

 private:
  std::optional<DeviceLease> m_lease;
};

const auto* const k_registered = ::testing::AddGlobalTestEnvironment(new GpuLeaseEnvironment);

}  // namespace
}  // namespace croq
