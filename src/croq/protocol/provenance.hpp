// Which measurement documents may back a stored figure. A document backs a decision only if croq
// itself wrote it for this task, for the kernel being stored, and measured what croq built:
//   - an evidence entry of kind `measure` (written by `croq measure` / `croq baseline` when they
//     wrote the file) names this very file with this very content (sha256): a file written by
//     hand, edited after croq wrote it, copied elsewhere, or written for another task has none;
//   - the entry is for the stored kernel (iter000_<lib> for a baseline, whose document must be a
//     baseline measurement; a candidate's must not be);
//   - the candidate's hash in the document is the output of the latest `croq build` of that kernel
//     made before the measurement (required in an enforced task; checked whenever such a build
//     exists otherwise).
// In an enforced task store-round refuses anything else (rule `measurement_from_croq`); in an
// advisory one the record is stored with `source: "unverified"` and the reason in
// `measurement.unverified`, so that no one mistakes it for a measured figure.
#pragma once
#include <optional>
#include <string>

#include "croq/ledger/store.hpp"
#include "croq/measure/store_measurement.hpp"
#include "croq/protocol/evidence.hpp"

namespace croq {

struct MeasurementProvenance {
  bool trusted = false;
  std::string problem;             // why the document cannot back a decision (empty when trusted)
  std::string hint;                // what to do instead
  std::optional<Evidence> entry;   // the evidence entry croq wrote with the file
};

// `kernel` is the kernel the record stores (iter012_tag as planned, before a failure becomes an
// attempt; iter000_<lib> for a baseline). `require_build`: the candidate must come from `croq build`.
MeasurementProvenance check_measurement_provenance(const Workspace& ws, const TaskRef& task, const MeasurementFile& file,
                                                   const std::string& kernel, bool require_build);

// store-round and baseline: checks `file` for the record `kernel`. In an enforced task an
// untrusted document is refused (Error refused, rule measurement_from_croq, nothing written);
// otherwise `req.source` becomes "unverified" and req.extra.measurement.unverified the reason.
MeasurementProvenance vet_measurement(const Workspace& ws, const TaskRef& task, StoreRequest& req,
                                      const MeasurementFile& file, const std::string& kernel);

// What croq's build of `kernel` established about it, written into the round's record so that a
// driver cannot claim otherwise: for CroqTile, `cu_finetuned` (the .cu differs from what choreo
// generated for the .co). An --extra value that contradicts it is refused (Error usage), as is
// `co_bypassed: true` for a .cu that is choreo's own output, and (CroqTile) a record whose kernel's
// build document was changed after croq build wrote it. Nothing happens without a build of `kernel`.
void apply_build_facts(const Workspace& ws, const TaskRef& task, StoreRequest& req, const std::string& kernel);

}  // namespace croq
