// The library baseline (iter000) of a task, from its measurement: which library the runner times
// and the tag iter000 is named by, the result document (baseline/<...>/result file: the croq-tune
// skill's cublas_result.json fields, then croq's), the ledger record's request, and the warnings of
// a noisy or implausible baseline. Pure: croq baseline (steps/measure_step.hpp) writes and stores.
#pragma once
#include <string>

#include "croq/ledger/store.hpp"
#include "croq/measure/measurement.hpp"
#include "croq/measure/store_measurement.hpp"
#include "croq/workspace/workspace.hpp"

namespace croq {

struct BaselineLibrary {
  std::string runner_library;  // --library for the runner: auto, cublas, cublaslt, cusparselt, openblas
  std::string tag;             // iter000_<tag>: the library named, or cublas / cusparselt / openblas for auto
};

// `library_flag` (auto, cublas, cublaslt, cusparselt, openblas) checked against the dsl and the
// operator: the cpp dsl's baseline is OpenBLAS, OpenBLAS is the cpp dsl's only, cuSPARSELt is for
// sparse operators. Throws usage saying what to pass instead.
BaselineLibrary baseline_library(const std::string& dsl, const ShapeKey& shape, const std::string& library_flag);

// The record of iter000 (decision BASELINE, round 0, source measured) for a passed measurement.
StoreRequest baseline_store_request(const MeasurementFile& mf, const std::string& lib_tag, const std::string& task_uid,
                                    const std::string& measurement_display);

// The result document of a passed baseline measurement.
json baseline_result_document(const MeasurementFile& mf, const ShapeKey& shape, const std::string& lib_tag,
                              const std::string& task_uid, const std::string& measurement_display);

// [{flag: noisy|implausible, message}]: a spread above `cv_target`, or a rate under 1 % of the
// device's peak.
json baseline_warnings(const Measurement& m, double cv_target);

}  // namespace croq
