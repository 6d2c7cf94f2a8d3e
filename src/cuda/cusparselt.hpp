// cuSPARSELt, loaded at run time (dlopen): the GPU runner's 2:4 sparse library baseline. croq is
// built without cuSPARSELt's header or library; the small part of its C API the runner uses is
// declared in cusparselt_api.hpp from NVIDIA's documentation (version 0.7 - 0.8 ABI). This header
// has no CUDA type, so the host side of the runner can hold the loaded library.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "croq/measure/cusparselt_locate.hpp"

namespace croq::gpu_runner {

struct CusparseLtApi;  // cusparselt_api.hpp

// The first candidate that loads with every entry point the runner calls, or nullptr with `error`
// naming each place tried, why it failed, and what to do.
std::shared_ptr<CusparseLtApi> load_cusparselt(const std::vector<LibraryCandidate>& candidates, std::string& error);
// "/path/libcusparseLt.so.0 (python package nvidia.cusparselt)"
std::string cusparselt_origin(const CusparseLtApi& api);

}  // namespace croq::gpu_runner
