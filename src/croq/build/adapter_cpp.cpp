// The cpp adapter: srcs/.../iterNNN_tag.cpp -> bin/.../iterNNN_tag.so with g++ -shared -march=native
// (builder.hpp).
#include "croq/build/job.hpp"

#include <fmt/format.h>

#include "croq/build/symbols.hpp"
#include "croq/build/toolchain.hpp"

namespace croq::build_detail {

void build_cpp(const Workspace& ws, const BuildTarget& t, const BuildOptions& o, const Toolchain& tc,
               CompilerVersions& versions, const IterationFiles& f, BuildRecord& rec, const BuildCache& cache) {
  if (forbid_if_impure(ws, t.task.dsl, candidate_files(t.source), rec)) return;
  CompileJob job;
  job.hint = hint_for(t.task.dsl);
  job.label = "g++";
  job.compiler = tc.cxx;
  job.flags = {"-O3", "-march=native", "-std=c++20", "-shared", "-fPIC", "-I" + croq_include_dir().string()};
  const auto c = composable_cxx_flags(tc.cxx + " " + versions.version(tc.cxx, job.hint));
  job.flags.insert(job.flags.end(), c.begin(), c.end());
  job.extra_key = cpu_identity();  // -march=native: the output belongs to this CPU
  build_shared_object(ws, t, o, versions, f, rec, cache, std::move(job));
}

}  // namespace croq::build_detail
