// croq next-iter: atomic reservation of the next iteration or attempt id.
#include <memory>

#include "cli/verbs.hpp"
#include "croq/ledger/ledger.hpp"
#include "croq/protocol/protocol.hpp"

namespace croq::cli {

VerbRunner setup_next_iter(CLI::App& app) {
  struct Opts {
    TaskOptions task;
    std::string tag;
    bool attempt = false;
    bool peek = false;
  };
  auto o = std::make_shared<Opts>();
  add_task_options(app, o->task);
  app.add_option("--tag", o->tag, "short name of the idea: [a-z][a-z0-9_]{1,30}")->required();
  app.add_flag("--attempt", o->attempt, "an attempt id (attempt<AAAA>_<tag>) for a failed try; uses no iteration number");
  app.add_flag("--peek", o->peek, "show the next id without reserving it");
  return [o](Context& ctx) {
    TaskRef t = resolve_task(ctx, o->task);
    validate_tag(o->tag);
    Ledger ledger(ctx.ws(), t);
    // An open plan's number, while it is not stored, is the one to hand out (again): following
    // croq state after a first next-iter, or writing the source first, moved the number past the
    // plan and the plan then refused it.
    std::optional<int> planned;
    if (!o->attempt) {
      if (auto cp = read_checkpoint(ctx.ws(), t); cp && cp->status != CheckpointStatus::CLOSED) {
        planned = try_parse_iter_number(cp->iter);  // reserve_iter hands it out only if it is not stored
      }
    }
    const int next = planned ? *planned : (o->attempt ? 0 : ledger.peek_next_iter());
    if (!o->peek) guard_implement(ctx.ws(), t, next, o->attempt);
    if (o->attempt) {
      int idx = o->peek ? ledger.peek_next_attempt() : ledger.reserve_attempt(lock_timeout(o->task));
      AttemptId id{idx, o->tag};
      ctx.emit({{"attempt", "attempt" + id.letters()}, {"kernel", id.name()}, {"index", idx}, {"reserved", !o->peek}});
    } else {
      int n = o->peek ? next : ledger.reserve_iter(lock_timeout(o->task), planned);
      IterId id{n, o->tag};
      ctx.emit({{"iter", id.number_name()}, {"kernel", id.name()}, {"number", n}, {"reserved", !o->peek}});
    }
    return ExitCode::ok;
  };
}

}  // namespace croq::cli
