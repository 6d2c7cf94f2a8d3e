// `croq store-round --measurement FILE`: the stored TFLOPS and decision come from a measurement
// file, never from the command line.
//   PASS        -> the driver's --decision (KEEP or DISCARD; BASELINE for a baseline measurement)
//   any failure -> its ledger decision (verdict.hpp: failure_decision); a KEEP, DISCARD or
//                  BASELINE given with a failed measurement is refused, as is a failure decision
//                  that contradicts the file
// The record gets source "measured" (a legacy measurement keeps "reported") and an `extra`
// object `measurement` with the provenance: {file, sha256 (of the file), candidate,
// candidate_sha256, kind, verdict, reason, tflops, median_ms, cv, reps, seed, device_key,
// device_uuid, sm_clock_mhz, created_at}.
#pragma once
#include <filesystem>
#include <string>

#include "croq/ledger/store.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/workspace/ids.hpp"

namespace croq {

struct MeasurementFile {
  std::filesystem::path path;
  std::string sha256;
  Measurement measurement;
};

// Throws Error(not_found) for a missing file, Error(usage) for one that is not a measurement.
MeasurementFile read_measurement_file(const std::filesystem::path& path);

// Fills req.tflops, req.decision (when derived), req.source and req.extra["measurement"].
// Throws Error(usage) when the request contradicts the file or the file is for another problem.
void apply_measurement(StoreRequest& req, const MeasurementFile& file, const std::string& display_path,
                       const ShapeKey& shape);

// The provenance object stored in the record's extra.measurement.
json measurement_provenance(const MeasurementFile& file, const std::string& display_path);

}  // namespace croq
