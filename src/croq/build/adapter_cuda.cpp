// The cuda adapter: srcs/.../iterNNN_tag.cu -> bin/.../iterNNN_tag.so with nvcc --shared (builder.hpp).
#include "croq/build/job.hpp"

#include <fmt/format.h>

#include "croq/build/symbols.hpp"
#include "croq/build/toolchain.hpp"

namespace croq::build_detail {

void build_cuda(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
                CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache) {
  if (forbid_if_impure(ws, t.task.dsl, candidate_files(t.source), rec)) return;
  CompileJob job;
  job.hint = hint_for(t.task.dsl);
  const std::string arch = resolve_arch(t, o);
  rec.doc["arch"] = arch;
  job.label = "nvcc";
  job.compiler = tc.nvcc;
  job.flags = {"-O3", "-std=c++17", "--shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-I" + croq_include_dir().string(),
               gencode_flag(arch)};
  const auto& c = composable_nvcc_flags();
  job.flags.insert(job.flags.end(), c.begin(), c.end());
  build_shared_object(ws, t, o, versions, f, rec, cache, std::move(job));
}

}  // namespace croq::build_detail
