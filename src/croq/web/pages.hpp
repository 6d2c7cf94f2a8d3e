// The dashboard's HTML, rendered on the server: whole pages for the first load and fragments
// (table rows, the task header, the idea log, the system panel) that app.js swaps in when the
// event stream says something changed. Every text from a ledger or a request is escaped; pages
// use no inline script or style, so the Content-Security-Policy can forbid both.
#pragma once
#include <string>

#include "croq/web/monitor.hpp"

namespace croq::web {

struct ListQuery {
  std::string state;  // only tasks in this state (empty: all)
};

std::string page_tasks(Monitor& m, const ListQuery& q);
std::string fragment_task_rows(Monitor& m, const ListQuery& q);

std::string page_task(Monitor& m, const TaskRow& row, bool all_rounds);
std::string fragment_task_head(Monitor& m, const TaskRow& row);
// Rows of the rounds table, newest first.
// (`uid`: the kernels link to their source page.)
std::string fragment_rounds(const std::vector<RoundRow>& rows_oldest_first, const std::string& uid = {});
// A kernel's source and its ordered diff against the base it was derived from.
std::string page_source(Monitor& m, const TaskRow& row, const std::string& kernel);
std::string fragment_ideas(Monitor& m, const TaskRow& row);

std::string page_add(Monitor& m);
std::string page_system(Monitor& m);
std::string fragment_system(Monitor& m);

// A minimal page with a title and a paragraph (errors, the token prompt).
std::string page_message(const std::string& title, const std::string& message_html);

// "convergence", "progression" or "bottlenecks" for one task (nullopt for another name), drawn
// `width` pixels wide (0: the page's default), so that a phone gets text it can read.
std::optional<std::string> task_chart(Monitor& m, const TaskRow& row, const std::string& which, int width = 0);

// The last `lines` lines of a task's run log (run 0: the latest).
std::string run_log_tail(const Workspace& ws, const TaskRow& row, int run, int lines);

// Number formats shared with the report.
std::string show_tflops(const json& v);
std::string show_pct(const json& v);
std::string show_duration(double seconds);
std::string protocol_text(const json& stats);

}  // namespace croq::web
