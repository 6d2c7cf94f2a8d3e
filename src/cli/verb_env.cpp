// croq env validate: is this machine ready for a dsl (src/croq/build/env_check.hpp).
#include <memory>

#include <fmt/format.h>

#include "cli/verbs.hpp"
#include "croq/build/env_check.hpp"
#include "croq/workspace/ids.hpp"

namespace croq::cli {

VerbRunner setup_env_validate(CLI::App& app) {
  struct Opts {
    std::string dsl;
  };
  auto o = std::make_shared<Opts>();
  app.add_option("--dsl", o->dsl, "cuda | croqtile | triton | cpp")->required();
  return [o](Context& ctx) {
    require_buildable_dsl(o->dsl, "validate a toolchain for");
    json doc = validate_environment(o->dsl, EnvProbe::system());
    for (const auto& e : doc["errors"]) {
      ctx.note(fmt::format("[env] error {}: {} -> {}", e.value("check", ""), e.value("message", ""), e.value("fix", "")));
    }
    for (const auto& w : doc["warnings"]) {
      ctx.note(fmt::format("[env] warning {}: {}", w.value("check", ""), w.value("message", "")));
    }
    ctx.emit(doc);
    return doc.value("pass", false) ? ExitCode::ok : ExitCode::failure;
  };
}

}  // namespace croq::cli
