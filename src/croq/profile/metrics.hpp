// The figures an engineer reads in an Nsight Compute profile, extracted from one KernelProfile of
// either CSV form. Each figure remembers which ncu metric it came from (its `source`), so that the
// classifier's evidence names real metric names, and figures the CSV does not hold stay empty
// (never a default that looks like a measurement).
//
// Percentages are "% of peak" as ncu reports them; durations are microseconds; sizes are bytes;
// frequencies are Hz. Units are converted from the CSV's unit cells ("ns", "usecond", "Kbyte/block",
// "Ghz", ...); a unit croq does not know leaves the figure empty and adds a warning.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "croq/profile/ncu_csv.hpp"

namespace croq::profile {

struct Figure {
  std::optional<double> value;
  std::string source;  // the metric name (raw page) or "<Section>/<Metric>" (long form)

  explicit operator bool() const { return value.has_value(); }
  double operator*() const { return *value; }
};

// The stall reasons of ncu's Warp State Statistics (smsp__pcsamp_warps_issue_stalled_<reason>).
const std::vector<std::string>& stall_reasons();

struct ProfileMetrics {
  std::string kernel;
  std::string kernel_id;
  std::string device;       // "NVIDIA H200" when the raw page has it
  std::string cc;           // "9.0"

  // Speed of light (% of peak, elapsed).
  Figure sm_throughput_pct;       // sm__throughput.avg.pct_of_peak_sustained_elapsed
  Figure memory_throughput_pct;   // gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
  Figure dram_throughput_pct;     // gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
  Figure l1tex_throughput_pct;    // l1tex__throughput.avg.pct_of_peak_sustained_active
  Figure l2_throughput_pct;       // lts__throughput.avg.pct_of_peak_sustained_elapsed
  Figure shared_throughput_pct;   // l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed
  // Pipes (% of peak, elapsed).
  Figure tensor_pipe_pct;         // sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
  Figure fma_pipe_pct;            // sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed
  Figure issue_slot_pct;          // sm__issue_active.avg.pct_of_peak_sustained_elapsed
  Figure executed_ipc;            // sm__inst_executed.avg.per_cycle_active
  Figure eligible_warps_per_scheduler;  // smsp__warps_eligible.avg.per_cycle_active
  Figure no_eligible_pct;         // smsp__issue_inst0.avg.pct_of_peak_sustained_active
  // Occupancy.
  Figure achieved_occupancy_pct;     // sm__warps_active.avg.pct_of_peak_sustained_active
  Figure theoretical_occupancy_pct;  // sm__maximum_warps_per_active_cycle_pct
  std::string occupancy_limiter;     // registers | shared_mem | warps | blocks | barriers (ties: "a+b")
  std::map<std::string, double> occupancy_block_limits;  // launch__occupancy_limit_<x>
  // Resources.
  Figure registers_per_thread;    // launch__registers_per_thread
  Figure shared_bytes_per_block;  // launch__shared_mem_per_block (static + dynamic)
  Figure spill_instructions;      // sass__inst_executed_register_spilling
  Figure local_load_instructions; // smsp__sass_inst_executed_op_local_ld.sum
  Figure local_store_instructions;// smsp__sass_inst_executed_op_local_st.sum
  Figure local_spill_requests;    // derived__local_spilling_requests
  // Shared memory bank conflicts.
  Figure bank_conflicts;          // l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
  Figure shared_wavefronts;       // l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
  // Caches and bandwidth.
  Figure l1_hit_rate_pct;         // l1tex__t_sector_hit_rate.pct
  Figure l2_hit_rate_pct;         // lts__t_sector_hit_rate.pct
  Figure dram_bytes;              // dram__bytes_read.sum + dram__bytes_write.sum
  // Warp stalls: share of PC samples (smsp__pcsamp_warps_issue_stalled_<r> / smsp__pcsamp_sample_count
  // * 100), and warps stalled per issued instruction (smsp__average_warps_issue_stalled_<r>_per_issue_active.ratio).
  std::map<std::string, double> stall_pct_of_samples;
  std::map<std::string, double> stall_per_issue;
  // Launch.
  Figure duration_us;             // gpu__time_duration.sum
  Figure grid_ctas;               // launch__grid_size
  Figure block_threads;           // launch__block_size
  Figure sm_count;                // launch__sm_count / device__attribute_multiprocessor_count
  Figure waves_per_sm;            // launch__waves_per_multiprocessor
  Figure sm_frequency_hz;         // sm__cycles_elapsed.avg.per_second
  std::string grid_size;          // "(2, 66, 1)"
  std::string block_size;         // "(384, 1, 1)"

  std::vector<std::string> warnings;  // units not understood, inconsistent figures
  std::vector<std::string> ncu_rules; // long form: ncu's own rule messages

  // Stall share in % (samples if present, else the per-issue ratios normalised, `selected` excluded).
  std::map<std::string, double> stall_shares() const;
};

ProfileMetrics extract_metrics(const KernelProfile& kernel);

// Unit conversion helpers (exposed for tests); nullopt for a unit not understood.
std::optional<double> to_microseconds(double value, const std::string& unit);
std::optional<double> to_bytes(double value, const std::string& unit);
std::optional<double> to_hertz(double value, const std::string& unit);

}  // namespace croq::profile
