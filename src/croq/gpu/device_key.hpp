// The device key names the machine a task's numbers belong to: the first folder under tuning/.
// For a GPU it is sm<cc>_<name> with spaces as '_' (the seeds' detect_gpu: "sm90_NVIDIA_H200");
// for the cpp backend it is cpu_<arch> ("cpu_x86_64").
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "croq/util/process.hpp"

namespace croq {

struct GpuInfo {
  int index = 0;
  std::string name;          // "NVIDIA H200"
  std::string uuid;          // "GPU-..."
  std::string compute_cap;   // "9.0"
  std::string driver;        // "580.159.04"
  std::string pci_bus_id;
  long memory_total_mib = 0;
  long memory_used_mib = 0;
  int utilization_pct = 0;
  int temperature_c = 0;
  int sm_clock_mhz = 0;
  int max_sm_clock_mhz = 0;
};

// "NVIDIA H200", "9.0" -> "sm90_NVIDIA_H200"
std::string make_gpu_key(const std::string& name, const std::string& compute_cap);
std::string cpu_device_key();

// Parses `nvidia-smi --query-gpu=<k_gpu_query_fields> --format=csv,noheader,nounits` output.
inline constexpr const char* k_gpu_query_fields =
    "index,name,uuid,compute_cap,driver_version,pci.bus_id,memory.total,memory.used,"
    "utilization.gpu,temperature.gpu,clocks.sm,clocks.max.sm";
std::vector<GpuInfo> parse_gpu_query(const std::string& csv);

// Queries the GPUs through nvidia-smi (via the process runner). Empty if there is none or
// nvidia-smi is missing; `error` says which.
std::vector<GpuInfo> query_gpus(std::string* error = nullptr);

// The GPU croq should use: --device if given, else the first of CUDA_VISIBLE_DEVICES, else 0.
// Returns the index into nvidia-smi's numbering (CUDA_VISIBLE_DEVICES may hold indexes or UUIDs).
std::optional<GpuInfo> select_gpu(const std::vector<GpuInfo>& gpus, const std::string& device_flag);

// The device key for a task: --gpu, else CROQ_GPU, else the detected GPU, else (dsl cpp) the
// CPU key. Throws Error(no_device) when none applies.
std::string resolve_device_key(const std::string& flag, const std::string& dsl);

}  // namespace croq
