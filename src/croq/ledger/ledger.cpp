// The task ledger (ledger.hpp): locked, whole-record appends; an incremental index; the TSV view.
#include "croq/ledger/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/time.hpp"

namespace croq {

namespace {

constexpr size_t k_max_index_warnings = 20;
constexpr size_t k_sig_bytes = 64;

uint64_t size_of_file(const fs::path& p) {
  struct stat st{};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

// Reads [offset, offset+len) of a file (shorter if the file is shorter).
std::string read_range(const fs::path& p, uint64_t offset, uint64_t len) {
  std::string out;
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  out.resize(len);
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, out.data() + got, len - got, static_cast<off_t>(offset + got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

std::string signature_before(const fs::path& p, uint64_t offset) {
  uint64_t start = offset > k_sig_bytes ? offset - k_sig_bytes : 0;
  return sha256_hex(read_range(p, start, offset - start)).substr(0, 32);
}

size_t count_tsv_rows(const std::string& content) {
  size_t rows = 0;
  size_t s = 0;
  bool first = true;
  while (s < content.size()) {
    size_t e = content.find('\n', s);
    std::string_view line(content.data() + s, (e == std::string::npos ? content.size() : e) - s);
    s = e == std::string::npos ? content.size() : e + 1;
    bool blank = std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\r' || c == '\t'; });
    if (blank) continue;
    if (first) {
      first = false;
      if (line.rfind("iter\t", 0) == 0 || line.rfind("round\t", 0) == 0) continue;
    }
    ++rows;
  }
  return rows;
}

}  // namespace

RecordBrief RecordBrief::of(const RoundRecord& r) {
  RecordBrief b;
  b.round = r.round;
  b.iter = r.iter;
  b.kernel = r.kernel;
  b.tflops = r.tflops;
  b.decision = decision_name(r.decision);
  b.bottleneck = r.bottleneck;
  b.timestamp = r.timestamp;
  b.source = r.source();
  return b;
}

json RecordBrief::to_json() const {
  json j = {{"round", round}, {"iter", iter}, {"kernel", kernel}};
  j["tflops"] = tflops ? json(*tflops) : json(nullptr);
  j["decision"] = decision;
  j["bottleneck"] = bottleneck;
  j["timestamp"] = timestamp;
  j["source"] = source;
  return j;
}

RecordBrief RecordBrief::from_json(const json& j) {
  RecordBrief b;
  b.round = static_cast<int>(get_integer(j, "round").value_or(0));
  b.iter = get_string(j, "iter").value_or("");
  b.kernel = get_string(j, "kernel").value_or("");
  b.tflops = get_number(j, "tflops");
  b.decision = get_string(j, "decision").value_or("");
  b.bottleneck = get_string(j, "bottleneck").value_or("");
  b.timestamp = get_string(j, "timestamp").value_or("");
  b.source = get_string(j, "source").value_or("");
  return b;
}

void LedgerIndex::fold(const RoundRecord& r) {
  ++records;
  if (r.round >= 1) {
    rounds.insert(r.round);
    max_round = std::max(max_round, r.round);
  }
  auto num = r.iter_number();
  if (num && !is_failure(r.decision)) iters.insert(*num);
  if (auto a = r.attempt_index()) attempts.insert(*a);
  RecordBrief b = RecordBrief::of(r);
  last = b;
  decisions[b.decision]++;
  if (r.decision == Decision::BASELINE || (num && *num == 0)) {
    baseline = b;
    return;
  }
  if (r.decision == Decision::KEEP) {
    if (num && *num >= 1 && r.tflops && (!best || !best->tflops || *r.tflops > *best->tflops)) best = b;
    non_keep_streak = 0;
    discard_streak = 0;
  } else if (r.decision == Decision::DISCARD) {
    ++non_keep_streak;
    ++discard_streak;
  } else if (is_failure(r.decision)) {
    ++non_keep_streak;
  }
}

json LedgerIndex::to_json() const {
  json j;
  j["schema"] = k_index_schema;
  j["bytes"] = bytes;
  j["tail_sig"] = tail_sig;
  j["records"] = records;
  j["invalid_lines"] = invalid_lines;
  j["torn_tail"] = torn_tail;
  j["rounds"] = rounds.to_json();
  j["iters"] = iters.to_json();
  j["attempts"] = attempts.to_json();
  j["max_round"] = max_round;
  j["last"] = last ? last->to_json() : json(nullptr);
  j["best"] = best ? best->to_json() : json(nullptr);
  j["baseline"] = baseline ? baseline->to_json() : json(nullptr);
  j["non_keep_streak"] = non_keep_streak;
  j["discard_streak"] = discard_streak;
  j["decisions"] = json::object();
  for (const auto& [k, v] : decisions) j["decisions"][k] = v;
  j["warnings"] = warnings;
  return j;
}

std::optional<LedgerIndex> LedgerIndex::from_json(const json& j) {
  if (get_string(j, "schema").value_or("") != k_index_schema) return std::nullopt;
  LedgerIndex x;
  auto bytes = get_integer(j, "bytes");
  if (!bytes || *bytes < 0) return std::nullopt;
  x.bytes = static_cast<uint64_t>(*bytes);
  x.tail_sig = get_string(j, "tail_sig").value_or("");
  x.records = static_cast<int>(get_integer(j, "records").value_or(0));
  x.invalid_lines = static_cast<int>(get_integer(j, "invalid_lines").value_or(0));
  x.torn_tail = j.value("torn_tail", false);
  x.rounds = IntSet::from_json(j.value("rounds", json::array()));
  x.iters = IntSet::from_json(j.value("iters", json::array()));
  x.attempts = IntSet::from_json(j.value("attempts", json::array()));
  x.max_round = static_cast<int>(get_integer(j, "max_round").value_or(0));
  if (j.contains("last") && j["last"].is_object()) x.last = RecordBrief::from_json(j["last"]);
  if (j.contains("best") && j["best"].is_object()) x.best = RecordBrief::from_json(j["best"]);
  if (j.contains("baseline") && j["baseline"].is_object()) x.baseline = RecordBrief::from_json(j["baseline"]);
  x.non_keep_streak = static_cast<int>(get_integer(j, "non_keep_streak").value_or(0));
  x.discard_streak = static_cast<int>(get_integer(j, "discard_streak").value_or(0));
  if (j.contains("decisions") && j["decisions"].is_object()) {
    for (auto it = j["decisions"].begin(); it != j["decisions"].end(); ++it) {
      if (it.value().is_number_integer()) x.decisions[it.key()] = it.value().get<int>();
    }
  }
  if (j.contains("warnings") && j["warnings"].is_array()) {
    for (const auto& w : j["warnings"]) {
      if (w.is_string()) x.warnings.push_back(w.get<std::string>());
    }
  }
  return x;
}

json Reservations::to_json() const {
  return {{"schema", "croq-reservations-v1"}, {"live_iters", live_iters.to_json()}, {"max_attempt", max_attempt}};
}

Reservations Reservations::from_json(const json& j) {
  Reservations r;
  if (j.is_object()) {
    r.live_iters = IntSet::from_json(j.value("live_iters", json::array()));
    r.max_attempt = static_cast<int>(get_integer(j, "max_attempt").value_or(-1));
  }
  return r;
}

Ledger::Ledger(const Workspace& ws, TaskRef task) : m_ws(ws), m_task(std::move(task)) {}

bool Ledger::exists() const {
  std::error_code ec;
  return fs::exists(m_ws.idea_log(m_task), ec) || fs::exists(m_ws.results_tsv(m_task), ec);
}

FileLock Ledger::lock(std::chrono::milliseconds timeout, std::string_view purpose) const {
  return FileLock(m_ws.task_lock(m_task), timeout, purpose);
}

void Ledger::write_index(const LedgerIndex& index) const {
  try {
    atomic_write(m_ws.ledger_index(m_task), dump_compact(index.to_json()) + "\n", /*durable=*/false);
  } catch (const Error&) {
    // The index is a cache; failing to write it loses nothing.
  }
}

LedgerIndex Ledger::refresh_index(bool write_back) const {
  const fs::path log = m_ws.idea_log(m_task);
  const uint64_t size = size_of_file(log);
  LedgerIndex idx;
  bool loaded = false;
  if (auto text = read_file(m_ws.ledger_index(m_task))) {
    if (auto j = try_parse_json(*text)) {
      if (auto x = LedgerIndex::from_json(*j)) {
        if (x->bytes <= size && (x->bytes == 0 || signature_before(log, x->bytes) == x->tail_sig)) {
          idx = std::move(*x);
          loaded = true;
        }
      }
    }
  }
  if (!loaded) idx = LedgerIndex{};
  bool changed = !loaded;
  if (idx.bytes < size) {
    std::string chunk = read_range(log, idx.bytes, size - idx.bytes);
    size_t last_nl = chunk.rfind('\n');
    size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
    // Line numbers are only known when folding from the start.
    JsonlParse parsed = parse_idea_log(std::string_view(chunk).substr(0, complete),
                                       idx.bytes == 0 ? 1 : 0);
    for (const auto& r : parsed.records) idx.fold(r);
    idx.invalid_lines += parsed.invalid_lines;
    for (auto& w : parsed.warnings) {
      if (idx.warnings.size() < k_max_index_warnings) {
        if (idx.bytes != 0) {
          // Renumbering is not possible incrementally; say where instead.
          auto pos = w.find(" line ");
          if (pos != std::string::npos) w = fmt::format("idea-log.jsonl: a malformed line after byte {} skipped", idx.bytes);
        }
        idx.warnings.push_back(w);
      }
    }
    idx.bytes += complete;
    idx.torn_tail = complete < chunk.size();
    if (idx.torn_tail && idx.warnings.size() < k_max_index_warnings) {
      idx.warnings.push_back("idea-log.jsonl: torn last line skipped (an interrupted write)");
    }
    idx.tail_sig = signature_before(log, idx.bytes);
    changed = true;
  } else if (idx.torn_tail && idx.bytes == size) {
    idx.torn_tail = false;  // the torn tail was repaired by a writer
    changed = true;
  }
  if (changed && write_back) write_index(idx);
  return idx;
}

LedgerIndex Ledger::index() const {
  std::error_code ec;
  bool can_write = fs::exists(m_ws.idea_log(m_task), ec);
  return refresh_index(can_write);
}

JsonlParse Ledger::read_all() const {
  auto text = read_file(m_ws.idea_log(m_task));
  if (!text) return {};
  return parse_idea_log(*text);
}

std::vector<RoundRecord> Ledger::tail(size_t n) const {
  const fs::path log = m_ws.idea_log(m_task);
  const uint64_t size = size_of_file(log);
  uint64_t window = 16384;
  while (true) {
    uint64_t start = size > window ? size - window : 0;
    std::string chunk = read_range(log, start, size - start);
    size_t from = 0;
    if (start > 0) {
      size_t nl = chunk.find('\n');
      if (nl == std::string::npos) {
        window *= 4;
        continue;
      }
      from = nl + 1;
    }
    JsonlParse parsed = parse_idea_log(std::string_view(chunk).substr(from));
    if (parsed.records.size() >= n || start == 0) {
      auto& r = parsed.records;
      if (r.size() > n) r.erase(r.begin(), r.end() - static_cast<long>(n));
      return r;
    }
    window *= 4;
  }
}

std::vector<RoundRecord> Ledger::read_tsv(std::vector<std::string>* warnings) const {
  auto text = read_file(m_ws.results_tsv(m_task));
  if (!text) return {};
  return parse_results_tsv(*text, warnings);
}

void Ledger::rebuild_tsv_locked(const std::vector<RoundRecord>& records) const {
  std::string out = std::string(k_tsv_header) + "\n";
  for (const auto& r : records) out += tsv_row(r) + "\n";
  atomic_write(m_ws.results_tsv(m_task), out);
}

bool Ledger::import_legacy_tsv_locked() const {
  if (size_of_file(m_ws.idea_log(m_task)) > 0) return false;
  std::vector<std::string> warnings;
  auto rows = read_tsv(&warnings);
  if (rows.empty()) return false;
  std::string content;
  for (auto& r : rows) {
    r.extra["source"] = "tsv-import";
    r.extra["schema"] = k_round_schema;
    content += dump_compact(r.to_json()) + "\n";
  }
  atomic_write(m_ws.idea_log(m_task), content);
  return true;
}

void Ledger::check_tsv_in_step_locked(const LedgerIndex& index, StoreOutcome& outcome) const {
  const fs::path tsv = m_ws.results_tsv(m_task);
  auto text = read_file(tsv);
  size_t rows = text ? count_tsv_rows(*text) : 0;
  bool header_ok = !text || text->empty() || text->rfind(k_tsv_header, 0) == 0;
  if (rows == static_cast<size_t>(index.records) && header_ok) return;
  if (text && !text->empty()) {
    // Keep what was there: the view is rebuilt, the old file is set aside.
    atomic_write(tsv.string() + ".bak." + std::to_string(::time(nullptr)), *text);
  }
  rebuild_tsv_locked(read_all().records);
  outcome.tsv_rebuilt = true;
}

Reservations Ledger::reservations() const {
  auto text = read_file(m_ws.reservations(m_task));
  if (!text) return {};
  auto j = try_parse_json(*text);
  return j ? Reservations::from_json(*j) : Reservations{};
}

void Ledger::write_reservations(const Reservations& r) const {
  atomic_write(m_ws.reservations(m_task), dump_compact(r.to_json()) + "\n");
}

StoreOutcome Ledger::store(RoundRecord record, bool auto_round, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "store-round " + record.kernel);
  StoreOutcome outcome;
  outcome.imported_tsv = import_legacy_tsv_locked();
  LedgerIndex idx = refresh_index(false);
  check_tsv_in_step_locked(idx, outcome);

  auto num = record.iter_number();
  if (num && !is_failure(record.decision) && idx.iters.contains(*num)) {
    throw Error(ExitCode::conflict, fmt::format("{} is already stored for this task", iter_number_name(*num)),
                "get a fresh id with `croq next-iter`, or look at `croq resume` to see what is stored");
  }
  if (auto a = record.attempt_index(); a && idx.attempts.contains(*a)) {
    throw Error(ExitCode::conflict, fmt::format("attempt{} is already stored for this task", attempt_letters(*a)),
                "get a fresh attempt id with `croq next-iter --attempt`");
  }
  if (auto_round) {
    record.round = record.decision == Decision::BASELINE ? 0 : idx.max_round + 1;
  } else if (record.round >= 1 && idx.rounds.contains(record.round)) {
    throw Error(ExitCode::conflict, fmt::format("round {} is already stored for this task", record.round),
                fmt::format("the next round is {}; omit --round to have croq number it", idx.max_round + 1));
  }
  if (record.timestamp.empty()) record.timestamp = now_iso8601();
  if (!record.extra.contains("schema")) record.extra["schema"] = k_round_schema;

  const std::string line = dump_compact(record.to_json());
  AppendOutcome app = append_line(m_ws.idea_log(m_task), line, /*durable=*/true);
  outcome.repaired_torn_tail = app.repaired_torn_tail;
  if (app.repaired_torn_tail) {
    idx = refresh_index(false);  // the torn bytes are gone: refold from what is there
  } else {
    idx.fold(record);
    idx.bytes = app.offset + line.size() + 1;
    idx.tail_sig = signature_before(m_ws.idea_log(m_task), idx.bytes);
  }

  // The TSV view: a header first if the file is new, then the row, as one write.
  const fs::path tsv = m_ws.results_tsv(m_task);
  std::string row = tsv_row(record);
  if (size_of_file(tsv) == 0) row = std::string(k_tsv_header) + "\n" + row;
  append_line(tsv, row, /*durable=*/false);

  // Reservations consumed or released by this round.
  Reservations res = reservations();
  bool res_changed = false;
  std::vector<int> release;
  if (num && !is_failure(record.decision)) release.push_back(*num);
  if (auto planned = get_string(record.extra, "planned_iter")) {
    try {
      release.push_back(parse_iter_number(*planned));
    } catch (const Error&) {
    }
  }
  for (int n : release) {
    if (res.live_iters.contains(n)) {
      IntSet kept;
      for (const auto& [lo, hi] : res.live_iters.ranges()) {
        for (int v = lo; v <= hi; ++v) {
          if (v != n) kept.insert(v);
        }
      }
      res.live_iters = kept;
      res_changed = true;
      outcome.released_reservation = iter_number_name(n);
    }
  }
  if (res_changed) write_reservations(res);

  write_index(idx);
  outcome.record = std::move(record);
  outcome.index = std::move(idx);
  return outcome;
}

int Ledger::peek_next_iter() const {
  LedgerIndex idx = refresh_index(false);
  Reservations res = reservations();
  int top = std::max(idx.iters.max().value_or(0), res.live_iters.max().value_or(0));
  return top + 1;
}

int Ledger::peek_next_attempt() const {
  LedgerIndex idx = refresh_index(false);
  Reservations res = reservations();
  return std::max(idx.attempts.max().value_or(-1), res.max_attempt) + 1;
}

int Ledger::reserve_iter(std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "next-iter");
  LedgerIndex idx = refresh_index(false);
  Reservations res = reservations();
  // Drop reservations that have since been stored.
  IntSet live;
  for (const auto& [lo, hi] : res.live_iters.ranges()) {
    for (int v = lo; v <= hi; ++v) {
      if (!idx.iters.contains(v)) live.insert(v);
    }
  }
  int next = std::max(idx.iters.max().value_or(0), live.max().value_or(0)) + 1;
  live.insert(next);
  res.live_iters = live;
  write_reservations(res);
  return next;
}

int Ledger::reserve_attempt(std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "next-iter --attempt");
  LedgerIndex idx = refresh_index(false);
  Reservations res = reservations();
  int next = std::max(idx.attempts.max().value_or(-1), res.max_attempt) + 1;
  res.max_attempt = next;
  write_reservations(res);
  return next;
}

void Ledger::release_iter(int number, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "release");
  Reservations res = reservations();
  IntSet kept;
  for (const auto& [lo, hi] : res.live_iters.ranges()) {
    for (int v = lo; v <= hi; ++v) {
      if (v != number) kept.insert(v);
    }
  }
  res.live_iters = kept;
  write_reservations(res);
}

void Ledger::append_attempt(const json& record, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "attempt");
  append_line(m_ws.attempt_log(m_task), dump_compact(record), /*durable=*/true);
}

std::vector<json> Ledger::read_attempts(std::vector<std::string>* warnings) const {
  std::vector<json> out;
  auto text = read_file(m_ws.attempt_log(m_task));
  if (!text) return out;
  size_t s = 0;
  int line_no = 0;
  while (s < text->size()) {
    size_t e = text->find('\n', s);
    std::string_view line(text->data() + s, (e == std::string::npos ? text->size() : e) - s);
    s = e == std::string::npos ? text->size() : e + 1;
    ++line_no;
    if (line.empty()) continue;
    auto j = try_parse_json(line);
    if (!j || !j->is_object()) {
      if (warnings) warnings->push_back(fmt::format("attempt-log.jsonl line {}: not a JSON object — skipped", line_no));
      continue;
    }
    out.push_back(std::move(*j));
  }
  return out;
}

}  // namespace croq
