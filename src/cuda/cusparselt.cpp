// Loading cuSPARSELt (cusparselt.hpp).
#include "cusparselt.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "cusparselt_api.hpp"

namespace croq::gpu_runner {

std::string CusparseLtApi::status_text(cusparseStatus_t s) const {
  const char* text = error_string ? error_string(s) : nullptr;
  return fmt::format("cusparseStatus {}{}", static_cast<int>(s), text ? fmt::format(" ({})", text) : std::string());
}

std::string cusparselt_origin(const CusparseLtApi& api) { return fmt::format("{} ({})", api.path, api.origin); }

std::shared_ptr<CusparseLtApi> load_cusparselt(const std::vector<LibraryCandidate>& candidates, std::string& error) {
  std::string tried;
  for (const auto& c : candidates) {
    void* h = ::dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      tried += fmt::format("\n  {} ({}): {}", c.path, c.origin, e ? e : "dlopen failed");
      continue;
    }
    auto api = std::make_shared<CusparseLtApi>();
    api->lib = h;
    api->path = c.path;
    api->origin = c.origin;
    std::string missing;
    auto sym = [&](auto& fn, const char* name, bool required = true) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      if (!fn && required) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    sym(api->init, "cusparseLtInit");
    sym(api->destroy, "cusparseLtDestroy");
    sym(api->get_version, "cusparseLtGetVersion");
    sym(api->error_string, "cusparseLtGetErrorString", false);
    sym(api->dense_descriptor_init, "cusparseLtDenseDescriptorInit");
    sym(api->structured_descriptor_init, "cusparseLtStructuredDescriptorInit");
    sym(api->mat_descriptor_destroy, "cusparseLtMatDescriptorDestroy");
    sym(api->matmul_descriptor_init, "cusparseLtMatmulDescriptorInit");
    sym(api->matmul_desc_set_attribute, "cusparseLtMatmulDescSetAttribute");
    sym(api->alg_selection_init, "cusparseLtMatmulAlgSelectionInit");
    sym(api->alg_set_attribute, "cusparseLtMatmulAlgSetAttribute");
    sym(api->alg_get_attribute, "cusparseLtMatmulAlgGetAttribute");
    sym(api->get_workspace, "cusparseLtMatmulGetWorkspace");
    sym(api->plan_init, "cusparseLtMatmulPlanInit");
    sym(api->plan_destroy, "cusparseLtMatmulPlanDestroy");
    sym(api->matmul, "cusparseLtMatmul");
    sym(api->matmul_search, "cusparseLtMatmulSearch");
    sym(api->prune_check2, "cusparseLtSpMMAPruneCheck2");
    sym(api->compressed_size2, "cusparseLtSpMMACompressedSize2");
    sym(api->compress2, "cusparseLtSpMMACompress2");
    if (!missing.empty()) {
      tried += fmt::format("\n  {} ({}): loaded, but it lacks {} (croq needs cuSPARSELt 0.7 or later)", c.path,
                           c.origin, missing);
      ::dlclose(h);
      continue;
    }
    return api;
  }
  error = fmt::format("cuSPARSELt ({}) could not be loaded; tried:{}\n  hint: {}", k_cusparselt_soname, tried,
                      cusparselt_missing_hint());
  return nullptr;
}

}  // namespace croq::gpu_runner
