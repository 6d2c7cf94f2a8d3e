// The task ledger (ledger.hpp): locked, whole-record appends; an incremental index; the TSV view.
#include "croq/ledger/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>
#include <fmt/format.h>

#include "croq/util/error.hpp"
#include "croq/util/hash.hpp"
#include "croq/util/read_count.hpp"
#include "croq/util/time.hpp"
#include "croq/workspace/ids.hpp"
#include "croq/workspace/secret.hpp"
#include "croq/workspace/sources.hpp"

namespace croq {

namespace {

constexpr size_t k_max_index_warnings = 20;
constexpr size_t k_sig_bytes = 64;

struct FileStat {
  bool exists = false;
  uint64_t size = 0;
  uint64_t inode = 0;
  int64_t mtime_ns = 0;
};

FileStat stat_file(const fs::path& p) {
  struct stat st{};
  FileStat f;
  if (::stat(p.c_str(), &st) != 0) return f;
  f.exists = true;
  f.size = static_cast<uint64_t>(st.st_size);
  f.inode = static_cast<uint64_t>(st.st_ino);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return f;
}

uint64_t size_of_file(const fs::path& p) { return stat_file(p).size; }

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

// Signatures tell whether bytes already folded are still the same (not an integrity check
// against tampering): FNV-1a over at most 64 bytes, cheap enough for every call of every verb.
std::string fingerprint(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}{:04x}", h, bytes.size());
}

std::string signature_before(const fs::path& p, uint64_t offset) {
  uint64_t start = offset > k_sig_bytes ? offset - k_sig_bytes : 0;
  return fingerprint(read_range(p, start, offset - start));
}

std::string signature_head(const fs::path& p, uint64_t offset) {
  return fingerprint(read_range(p, 0, std::min<uint64_t>(offset, k_sig_bytes)));
}

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

// An unterminated last line of idea-log.jsonl that is a whole record (hand-written files often
// lack the final newline) is kept; anything else there is a torn record.
bool is_whole_record(std::string_view tail) {
  auto j = try_parse_json(tail);
  return j && RoundRecord::from_json(*j).has_value();
}

bool is_whole_tsv_row(std::string_view tail) {
  std::vector<std::string> w;
  return parse_results_tsv(std::string(k_tsv_header) + "\n" + std::string(tail), &w).size() == 1 && w.empty();
}

TailPolicy idea_log_tail_policy() { return TailPolicy{is_whole_record, k_max_record_bytes}; }
TailPolicy tsv_tail_policy() { return TailPolicy{is_whole_tsv_row, k_max_record_bytes}; }
TailPolicy json_tail_policy() {
  return TailPolicy{[](std::string_view t) { return try_parse_json(t).has_value(); }, k_max_record_bytes};
}

IntSet without(const IntSet& set, int value) {
  IntSet kept;
  for (const auto& [lo, hi] : set.ranges()) {
    for (int v = lo; v <= hi; ++v) {
      if (v != value) kept.insert(v);
    }
  }
  return kept;
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

void LedgerIndex::fold(const RoundRecord& r, const Workspace* ws) {
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
  const bool baseline_record = r.decision == Decision::BASELINE || (num && *num == 0);
  // A measured record whose figure is not its measurement's was edited after it was stored: it is
  // neither the best nor the baseline (status, reports and the monitor showed the edited figure).
  std::optional<std::string> unbacked;
  if (baseline_record || r.decision == Decision::KEEP) {
    if (ws) {
      unbacked = unbacked_figure(*ws, r);
    } else if (auto measured = r.edited_figure()) {
      unbacked = fmt::format("the record says {:.6g} TFLOPS, its own measurement block {:.6g}", *r.tflops, *measured);
    }
    if (unbacked && warnings.size() < 20) {
      warnings.push_back(fmt::format("{}'s figure is not its measurement's ({}): the record was edited, and is not "
                                     "counted as the {}",
                                     r.kernel, *unbacked, baseline_record ? "baseline" : "best"));
    }
  }
  if (baseline_record) {
    if (!unbacked) baseline = b;
    return;
  }
  if (r.decision == Decision::KEEP) {
    if (!unbacked && num && *num >= 1 && r.tflops && (!best || !best->tflops || *r.tflops > *best->tflops)) best = b;
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
  j["inode"] = inode;
  j["mtime_ns"] = mtime_ns;
  j["head_sig"] = head_sig;
  j["tail_sig"] = tail_sig;
  j["tsv_bytes"] = tsv_bytes;
  j["tsv_mtime_ns"] = tsv_mtime_ns;
  j["tsv_rows"] = tsv_rows;
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
  auto inode = get_integer(j, "inode");
  if (!bytes || *bytes < 0 || !inode) return std::nullopt;
  x.bytes = static_cast<uint64_t>(*bytes);
  x.inode = static_cast<uint64_t>(*inode);
  x.mtime_ns = get_integer(j, "mtime_ns").value_or(0);
  x.head_sig = get_string(j, "head_sig").value_or("");
  x.tail_sig = get_string(j, "tail_sig").value_or("");
  x.tsv_bytes = static_cast<uint64_t>(std::max(0LL, get_integer(j, "tsv_bytes").value_or(0)));
  x.tsv_mtime_ns = get_integer(j, "tsv_mtime_ns").value_or(0);
  // Counters must fit what holds them: a value that does not is a damaged index, not a number to cut.
  auto counter = [&](const char* key, long long fallback, long long lo, long long hi) -> std::optional<int> {
    const long long v = get_integer(j, key).value_or(fallback);
    if (v < lo || v > hi) return std::nullopt;
    return static_cast<int>(v);
  };
  auto tsv_rows = counter("tsv_rows", -1, -1, INT_MAX);
  auto records = counter("records", 0, 0, INT_MAX);
  auto invalid = counter("invalid_lines", 0, 0, INT_MAX);
  auto max_round = counter("max_round", 0, 0, k_max_round_number);
  auto non_keep = counter("non_keep_streak", 0, 0, INT_MAX);
  auto discards = counter("discard_streak", 0, 0, INT_MAX);
  auto rounds = IntSet::from_json(j.value("rounds", json::array()), k_max_round_number);
  auto iters = IntSet::from_json(j.value("iters", json::array()), k_max_iter_number);
  auto attempts = IntSet::from_json(j.value("attempts", json::array()), k_max_attempts - 1);
  if (!tsv_rows || !records || !invalid || !max_round || !non_keep || !discards || !rounds || !iters || !attempts) {
    return std::nullopt;
  }
  x.tsv_rows = *tsv_rows;
  x.records = *records;
  x.invalid_lines = *invalid;
  x.torn_tail = j.value("torn_tail", false);
  x.rounds = std::move(*rounds);
  x.iters = std::move(*iters);
  x.attempts = std::move(*attempts);
  x.max_round = *max_round;
  if (j.contains("last") && j["last"].is_object()) x.last = RecordBrief::from_json(j["last"]);
  if (j.contains("best") && j["best"].is_object()) x.best = RecordBrief::from_json(j["best"]);
  if (j.contains("baseline") && j["baseline"].is_object()) x.baseline = RecordBrief::from_json(j["baseline"]);
  x.non_keep_streak = *non_keep;
  x.discard_streak = *discards;
  if (j.contains("decisions") && j["decisions"].is_object()) {
    for (auto it = j["decisions"].begin(); it != j["decisions"].end(); ++it) {
      if (!it.value().is_number_integer()) continue;
      const long long n = it.value().get<long long>();
      if (n < 0 || n > INT_MAX) return std::nullopt;
      x.decisions[it.key()] = static_cast<int>(n);
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
  return {{"schema", k_reservations_schema}, {"live_iters", live_iters.to_json()}, {"max_attempt", max_attempt}};
}

std::optional<Reservations> Reservations::from_json(const json& j, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<Reservations> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (!j.is_object() || get_string(j, "schema").value_or("") != k_reservations_schema) {
    return fail(fmt::format("not a {} document", k_reservations_schema));
  }
  Reservations r;
  std::string w;
  auto live = IntSet::from_json(j.value("live_iters", json::array()), k_max_iter_number, &w);
  if (!live) return fail(fmt::format("live_iters: {} (iteration numbers are 0..{})", w, k_max_iter_number));
  r.live_iters = std::move(*live);
  const json& a = j.contains("max_attempt") ? j["max_attempt"] : json(-1);
  if (!a.is_number_integer() || a.get<long long>() < -1 || a.get<long long>() >= k_max_attempts) {
    return fail(fmt::format("max_attempt {} is outside -1..{} (AAAA..ZZZZ)", a.dump(), k_max_attempts - 1));
  }
  r.max_attempt = static_cast<int>(a.get<long long>());
  return r;
}

Ledger::Ledger(const Workspace& ws, TaskRef task) : m_ws(ws), m_task(std::move(task)) {}

bool Ledger::exists() const {
  std::error_code ec;
  return fs::exists(m_ws.idea_log(m_task), ec) || fs::exists(m_ws.results_tsv(m_task), ec);
}

std::vector<std::string> Ledger::linked_files() const {
  std::vector<std::string> out;
  for (const fs::path& p : {m_ws.idea_log(m_task), m_ws.results_tsv(m_task), m_ws.attempt_log(m_task),
                            m_ws.reservations(m_task), m_ws.ledger_index(m_task), m_ws.task_lock(m_task)}) {
    struct stat st{};
    if (::lstat(p.c_str(), &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) out.push_back(fmt::format("{} is a symbolic link", m_ws.display(p)));
    else if (!S_ISREG(st.st_mode)) out.push_back(fmt::format("{} is not a regular file", m_ws.display(p)));
    else if (st.st_nlink > 1) out.push_back(fmt::format("{} has other hard links", m_ws.display(p)));
  }
  return out;
}

FileLock Ledger::lock(std::chrono::milliseconds timeout, std::string_view purpose) const {
  FileLock lock(m_ws.task_lock(m_task), timeout, purpose, m_ws.root());
  // Writers read these files before they write them: a link would make croq read (and then
  // write) a file elsewhere. Refused before anything is read.
  if (auto linked = linked_files(); !linked.empty()) {
    throw Error(ExitCode::corrupt,
                fmt::format("refusing to write task {}: {}; croq writes only real files inside the workspace",
                            m_task.id(), linked.front()),
                "replace the link with a real file (move what it points to into place), then try again");
  }
  return lock;
}

std::string Ledger::index_purpose() const { return std::string(k_index_schema) + " " + m_task.id(); }

std::optional<LedgerIndex> Ledger::read_index() const {
  auto text = read_file(m_ws.ledger_index(m_task));
  if (!text) return std::nullopt;
  auto j = try_parse_json(*text);
  if (!j || !j->is_object()) return std::nullopt;
  // Trusted only with a MAC made with this workspace's key over everything else in it: a cache
  // edited by hand (its signature fields kept) would otherwise override the records.
  auto mac = get_string(*j, "mac");
  auto key = workspace_key(m_ws);
  if (!mac || !key) return std::nullopt;
  json body = *j;
  body.erase("mac");
  if (workspace_mac(*key, index_purpose(), dump_compact(body)) != *mac) return std::nullopt;
  return LedgerIndex::from_json(body);
}

void Ledger::write_index(const LedgerIndex& index) const {
  try {
    json j = index.to_json();
    if (auto key = workspace_key(m_ws)) j["mac"] = workspace_mac(*key, index_purpose(), dump_compact(j));
    atomic_write(m_ws.ledger_index(m_task), dump_compact(j) + "\n", /*durable=*/false, m_ws.root());
  } catch (const Error&) {
    // The index is a cache; failing to write it loses nothing (the next reader folds again).
  }
}

LedgerIndex Ledger::refresh_index(bool write_back) const {
  const fs::path log = m_ws.idea_log(m_task);
  const FileStat st = stat_file(log);
  const uint64_t size = st.size;
  LedgerIndex idx;
  bool loaded = false;
  if (auto x = read_index()) {
    // Still the same file, and the bytes folded are still there? (A file of the same size
    // with another modification time was rewritten in place.)
    const bool rewritten_same_size = x->bytes == size && x->mtime_ns != st.mtime_ns;
    if (st.exists && x->inode == st.inode && x->bytes <= size && !rewritten_same_size &&
        (x->bytes == 0 || (signature_before(log, x->bytes) == x->tail_sig &&
                           signature_head(log, x->bytes) == x->head_sig))) {
      idx = std::move(*x);
      loaded = true;
    }
  }
  if (!loaded) {
    idx = LedgerIndex{};
    idx.inode = st.inode;
  }
  bool changed = !loaded;
  if (idx.bytes < size) {
    std::string chunk = read_range(log, idx.bytes, size - idx.bytes);
    size_t last_nl = chunk.rfind('\n');
    size_t complete = last_nl == std::string::npos ? 0 : last_nl + 1;
    // Line numbers are only known when folding from the start.
    JsonlParse parsed = parse_idea_log(std::string_view(chunk).substr(0, complete), idx.bytes == 0 ? 1 : 0);
    for (const auto& r : parsed.records) idx.fold(r, &m_ws);
    idx.invalid_lines += parsed.invalid_lines;
    for (auto& w : parsed.warnings) {
      if (idx.warnings.size() >= k_max_index_warnings) break;
      if (idx.bytes != 0) w = fmt::format("idea-log.jsonl: a malformed line after byte {} skipped", idx.bytes);
      idx.warnings.push_back(w);
    }
    uint64_t folded_to = idx.bytes + complete;
    // What follows the last newline: a whole record without its newline, or a torn one.
    std::string_view rest = std::string_view(chunk).substr(complete);
    bool torn = false;
    if (!rest.empty() && !is_blank(rest)) {
      auto j = try_parse_json(rest);
      std::optional<RoundRecord> r;
      if (j) r = RoundRecord::from_json(*j);
      if (r) {
        idx.fold(*r, &m_ws);
        folded_to = size;
      } else {
        torn = true;
      }
    }
    if (folded_to != idx.bytes || torn != idx.torn_tail) changed = true;
    idx.bytes = folded_to;
    idx.torn_tail = torn;
    idx.head_sig = signature_head(log, idx.bytes);
    idx.tail_sig = signature_before(log, idx.bytes);
  } else if (idx.torn_tail) {
    idx.torn_tail = false;  // the torn tail was cut off by a writer
    changed = true;
  }
  if (idx.mtime_ns != st.mtime_ns) {
    idx.mtime_ns = st.mtime_ns;
    changed = true;
  }
  if (changed && write_back) write_index(idx);
  return idx;
}

LedgerIndex Ledger::index() const {
  count_state_read(StateDoc::ledger_index);
  std::error_code ec;
  bool can_write = fs::exists(m_ws.idea_log(m_task), ec);
  return refresh_index(can_write);
}

JsonlParse Ledger::read_all() const {
  count_state_read(StateDoc::ledger_records);
  auto text = read_file(m_ws.idea_log(m_task));
  if (!text) return {};
  return parse_idea_log(*text);
}

std::optional<RoundRecord> Ledger::record_at(uint64_t offset) const {
  const fs::path log = m_ws.idea_log(m_task);
  std::string line;
  for (uint64_t chunk = 4096; line.size() <= k_max_record_bytes; chunk *= 4) {
    line = read_range(log, offset, chunk);
    size_t nl = line.find('\n');
    if (nl != std::string::npos) {
      line.resize(nl);
      break;
    }
    if (line.size() < chunk) break;  // end of file
  }
  auto j = try_parse_json(line);
  if (!j) return std::nullopt;
  return RoundRecord::from_json(*j);
}

std::vector<RoundRecord> Ledger::tail(size_t n) const {
  count_state_read(StateDoc::ledger_records);
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
  atomic_write(m_ws.results_tsv(m_task), out, /*durable=*/false, m_ws.root());
}

LedgerIndex Ledger::writable_state_locked(std::vector<RoundRecord>* legacy_rows) const {
  const fs::path log = m_ws.idea_log(m_task);
  if (size_of_file(log) == 0) {
    std::vector<std::string> warnings;
    auto rows = read_tsv(&warnings);
    if (!rows.empty() || !warnings.empty()) {
      // A legacy task: only a hand-written results.tsv.
      if (!warnings.empty()) {
        throw Error(ExitCode::corrupt,
                    fmt::format("{} has unreadable rows ({}), and there is no idea-log.jsonl to rebuild it from",
                                m_ws.display(m_ws.results_tsv(m_task)), warnings.front()),
                    "fix the rows by hand, or run `croq session clean --invalid-only` to import the readable ones "
                    "(the file is kept as .bak.<time>)");
      }
      LedgerIndex idx;
      for (const auto& r : rows) idx.fold(r);
      if (legacy_rows) *legacy_rows = std::move(rows);
      return idx;
    }
  }
  LedgerIndex idx = refresh_index(false);
  if (idx.torn_tail && size_of_file(log) - idx.bytes > k_max_record_bytes) {
    throw Error(ExitCode::corrupt,
                fmt::format("{} ends with {} bytes without a line end: damage, not an interrupted write",
                            m_ws.display(log), size_of_file(log) - idx.bytes),
                "`croq session clean --invalid-only` sets them aside (the old file is kept as .bak.<time>)");
  }
  if (idx.invalid_lines > 0) {
    throw Error(ExitCode::corrupt,
                fmt::format("{} has {} unreadable line(s){}; croq adds nothing to a damaged ledger",
                            m_ws.display(log), idx.invalid_lines,
                            idx.warnings.empty() ? "" : " (" + idx.warnings.front() + ")"),
                "see them with `croq session validate`; `croq session clean --invalid-only` sets them aside "
                "(the old file is kept as .bak.<time>)");
  }
  return idx;
}

void Ledger::note_tsv_locked(LedgerIndex& index) const {
  FileStat t = stat_file(m_ws.results_tsv(m_task));
  index.tsv_bytes = t.size;
  index.tsv_mtime_ns = t.mtime_ns;
  index.tsv_rows = index.records;
}

void Ledger::check_tsv_in_step_locked(LedgerIndex& index, StoreOutcome& outcome) const {
  const fs::path tsv = m_ws.results_tsv(m_task);
  FileStat t = stat_file(tsv);
  if (t.exists && t.size == index.tsv_bytes && t.mtime_ns == index.tsv_mtime_ns && index.tsv_rows == index.records) {
    return;  // as the last writer left it
  }
  auto text = read_file(tsv);
  bool header_ok = text && text->rfind(std::string(k_tsv_header) + "\n", 0) == 0;
  if (text && header_ok && count_tsv_rows(*text) == static_cast<size_t>(index.records)) {
    note_tsv_locked(index);
    return;
  }
  if (index.records == 0 && (!text || text->empty())) return;
  std::string fresh = std::string(k_tsv_header) + "\n";
  for (const auto& r : read_all().records) fresh += tsv_row(r) + "\n";
  if (text && !text->empty() && fresh.rfind(*text, 0) != 0) {
    // Not just a view that fell behind (a crash between the two appends): keep what was there.
    atomic_write(tsv.string() + ".bak." + std::to_string(::time(nullptr)), *text, /*durable=*/true, m_ws.root());
  }
  atomic_write(tsv, fresh, /*durable=*/false, m_ws.root());  // a view: rebuilt from the records whenever it is out of step
  note_tsv_locked(index);
  outcome.tsv_rebuilt = true;
}

Reservations Ledger::reservations() const {
  const fs::path path = m_ws.reservations(m_task);
  auto text = read_file(path);
  if (!text) return {};
  std::string why = "not JSON";
  auto j = try_parse_json(*text);
  std::optional<Reservations> r;
  if (j) r = Reservations::from_json(*j, &why);
  if (!r) {
    throw Error(ExitCode::corrupt, fmt::format("{} cannot be read: {}", m_ws.display(path), why),
                "run `croq session clean --invalid-only` (it sets the file aside; ids handed out but not yet "
                "stored are then free again)");
  }
  return *r;
}

void Ledger::write_reservations(const Reservations& r) const {
  // Atomic but not fsynced: a process crash never loses it; after a power loss it may revert,
  // and ids then come from the stored records again (which are fsynced).
  atomic_write(m_ws.reservations(m_task), dump_compact(r.to_json()) + "\n", /*durable=*/false, m_ws.root());
}

StoreOutcome Ledger::store(RoundRecord record, const StoreOptions& options, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "store-round " + record.kernel);
  StoreOutcome outcome;
  const fs::path log = m_ws.idea_log(m_task);

  // 1. Decide everything from the current state; nothing is written until all checks pass.
  std::vector<RoundRecord> legacy_rows;
  LedgerIndex idx = writable_state_locked(&legacy_rows);
  Reservations res = reservations();
  bool res_changed = false;

  if (options.failure_to_attempt && is_failure(record.decision) && record.iter_number()) {
    outcome.planned_iter = record.iter;
    const std::string tag = record.kernel.substr(record.kernel.find('_') + 1);
    int index = next_free_attempt(idx, res);
    if (index >= k_max_attempts) refuse_exhausted("attempt id", "attemptZZZZ");
    AttemptId id{index, tag};
    record.iter = "attempt" + id.letters();
    record.kernel = id.name();
    record.extra["planned_iter"] = outcome.planned_iter;
    res.max_attempt = index;
    res_changed = true;
  }
  auto num = record.iter_number();
  check_id_in_sequence(record, idx, res);
  if (num && !is_failure(record.decision) && idx.iters.contains(*num)) {
    throw Error(ExitCode::conflict, fmt::format("{} is already stored for this task", iter_number_name(*num)),
                "get a fresh id with `croq next-iter`, or look at `croq resume` to see what is stored");
  }
  if (auto a = record.attempt_index(); a && idx.attempts.contains(*a)) {
    throw Error(ExitCode::conflict, fmt::format("attempt{} is already stored for this task", attempt_letters(*a)),
                "get a fresh attempt id with `croq next-iter --attempt`");
  }
  if (options.auto_round) {
    record.round = record.decision == Decision::BASELINE ? 0 : idx.max_round + 1;
  } else if (record.round >= 1 && idx.rounds.contains(record.round)) {
    throw Error(ExitCode::conflict, fmt::format("round {} is already stored for this task", record.round),
                fmt::format("the next round is {}; omit --round to have croq number it", idx.max_round + 1));
  } else if (record.round > idx.max_round + 1 + k_max_id_skip) {
    throw Error(ExitCode::usage,
                fmt::format("round {} skips {} rounds past the next one ({}): one record would use up this task's "
                            "round numbers",
                            record.round, record.round - idx.max_round - 1, idx.max_round + 1),
                "omit --round to have croq number it");
  }
  if (record.round > k_max_round_number) refuse_exhausted("round number", std::to_string(idx.max_round));
  if (record.timestamp.empty()) record.timestamp = now_iso8601();
  if (!record.extra.contains("schema")) record.extra["schema"] = k_round_schema;
  const std::string line = dump_compact(record.to_json());
  if (line.size() > k_max_record_bytes) {
    throw_usage(fmt::format("the record is {} bytes; the limit is {}", line.size(), k_max_record_bytes),
                "shorten the idea or the extra fields");
  }
  std::vector<int> release;
  if (num && !is_failure(record.decision)) release.push_back(*num);
  if (auto planned = get_string(record.extra, "planned_iter")) {
    if (auto n = try_parse_iter_number(*planned)) release.push_back(*n);
  }

  // 2. A legacy task's rows become the JSONL first (the TSV stays as it is).
  if (!legacy_rows.empty()) {
    std::string content;
    for (auto& r : legacy_rows) {
      r.extra["source"] = "tsv-import";
      r.extra["schema"] = k_round_schema;
      content += dump_compact(r.to_json()) + "\n";
    }
    atomic_write(log, content, /*durable=*/true, m_ws.root());
    outcome.imported_tsv = true;
    idx = refresh_index(false);
  }

  // 3. The view must hold exactly the records before this one gets its row.
  check_tsv_in_step_locked(idx, outcome);

  // 4. The record: one write, fsynced. From here on the round is stored.
  AppendOutcome app = append_line(log, line, /*durable=*/true, idea_log_tail_policy(), m_ws.root());
  outcome.offset = app.offset;
  outcome.repaired_torn_tail = app.repaired_torn_tail;
  outcome.torn_bytes = app.torn_bytes;
  if (app.offset == idx.bytes || (app.terminated_tail && app.offset == idx.bytes + 1)) {
    idx.fold(record);
    idx.torn_tail = false;
    idx.bytes = app.offset + line.size() + 1;
    idx.head_sig = signature_head(log, idx.bytes);
    idx.tail_sig = signature_before(log, idx.bytes);
    const FileStat after = stat_file(log);
    idx.mtime_ns = after.mtime_ns;
    idx.inode = after.inode;  // the file may have been created by this append
  } else {
    idx = refresh_index(false);
  }

  // 5. The TSV row (a header first if the file is new), as one write.
  const fs::path tsv = m_ws.results_tsv(m_task);
  std::string row = tsv_row(record);
  if (size_of_file(tsv) == 0) row = std::string(k_tsv_header) + "\n" + row;
  AppendOutcome tsv_app = append_line(tsv, row, /*durable=*/false, tsv_tail_policy(), m_ws.root());
  if (tsv_app.repaired_torn_tail) {
    StoreOutcome ignored;
    idx.tsv_rows = -1;
    check_tsv_in_step_locked(idx, ignored);
    outcome.tsv_rebuilt = outcome.tsv_rebuilt || ignored.tsv_rebuilt;
  } else {
    note_tsv_locked(idx);
  }

  // 6. Reservations consumed or released by this round.
  for (int n : release) {
    if (res.live_iters.contains(n)) {
      res.live_iters = without(res.live_iters, n);
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

void Ledger::check_id_in_sequence(const RoundRecord& record, const LedgerIndex& idx, const Reservations& res) const {
  const std::string repair =
      "store it under the id `croq next-iter` hands out; a task never skips more than " + std::to_string(k_max_id_skip) +
      " ids (`croq session clean --invalid-only` sets aside a record stored so before)";
  if (auto num = record.iter_number(); num && !is_failure(record.decision)) {
    const int next = next_free_iter(idx, res);
    if (*num > next + k_max_id_skip) {
      throw Error(ExitCode::usage,
                  fmt::format("{} skips {} unused iteration numbers past the next free one ({}): one record would use "
                              "up this task's iteration numbers",
                              iter_number_name(*num), *num - next, iter_number_name(std::min(next, k_max_iter_number))),
                  repair);
    }
  }
  if (auto a = record.attempt_index()) {
    const int next = next_free_attempt(idx, res);
    if (*a > next + k_max_id_skip) {
      throw Error(ExitCode::usage,
                  fmt::format("attempt{} skips {} unused attempt ids past the next free one: one record would use up "
                              "this task's attempt ids",
                              attempt_letters(*a), *a - next),
                  repair);
    }
  }
}

int Ledger::next_free_iter(const LedgerIndex& idx, const Reservations& res) {
  return std::max(idx.iters.max().value_or(0), res.live_iters.max().value_or(0)) + 1;
}

int Ledger::next_free_attempt(const LedgerIndex& idx, const Reservations& res) {
  return std::max(idx.attempts.max().value_or(-1), res.max_attempt) + 1;
}

void Ledger::refuse_exhausted(const char* what, const std::string& last) const {
  throw Error(ExitCode::corrupt,
              fmt::format("every {} of task {} is used: {} is stored or handed out", what, m_task.id(), last),
              "if that id was never meant (a record or reservation far out of sequence), `croq session clean "
              "--invalid-only` sets it aside; otherwise continue in a new task (another --model)");
}

int Ledger::peek_next_iter() const {
  std::vector<RoundRecord> legacy;
  LedgerIndex idx = writable_state_locked(&legacy);
  Reservations res = reservations();
  int top = std::max(idx.iters.max().value_or(0), res.live_iters.max().value_or(0));
  top = std::max(top, highest_iter_on_disk().value_or(0));
  return top + 1;
}

namespace {

// Iteration numbers a failure stored as an attempt gave back.
std::set<int> released_iters(const std::vector<RoundRecord>& records) {
  std::set<int> released;
  for (const auto& r : records) {
    if (!r.attempt_index()) continue;
    if (auto planned = get_string(r.extra, "planned_iter")) {
      try {
        released.insert(parse_iter_number(*planned));
      } catch (const Error&) {
        // Not an iteration name: it frees no number.
      }
    }
  }
  return released;
}

}  // namespace

std::optional<int> Ledger::highest_iter_on_disk() const {
  return max_iteration_number_on_disk(m_ws, m_task, released_iters(read_all().records));
}

int Ledger::peek_next_iter(const LedgerIndex& idx, const std::vector<RoundRecord>& records) const {
  if (size_of_file(m_ws.idea_log(m_task)) == 0) return peek_next_iter();  // legacy rows, or nothing stored
  Reservations res = reservations();
  int top = std::max(idx.iters.max().value_or(0), res.live_iters.max().value_or(0));
  top = std::max(top, max_iteration_number_on_disk(m_ws, m_task, released_iters(records)).value_or(0));
  return top + 1;
}

int Ledger::peek_next_attempt() const {
  std::vector<RoundRecord> legacy;
  LedgerIndex idx = writable_state_locked(&legacy);
  Reservations res = reservations();
  return std::max(idx.attempts.max().value_or(-1), res.max_attempt) + 1;
}

int Ledger::reserve_iter(std::chrono::milliseconds lock_timeout, std::optional<int> planned) {
  FileLock guard = lock(lock_timeout, "next-iter");
  std::vector<RoundRecord> legacy;
  LedgerIndex idx = writable_state_locked(&legacy);
  Reservations res = reservations();
  // Drop reservations that have since been stored.
  IntSet live;
  for (const auto& [lo, hi] : res.live_iters.ranges()) {
    for (int v = lo; v <= hi; ++v) {
      if (!idx.iters.contains(v)) live.insert(v);
    }
  }
  if (planned && *planned >= 1 && *planned <= k_max_iter_number && !idx.iters.contains(*planned)) {
    live.insert(*planned);
    res.live_iters = live;
    write_reservations(res);
    return *planned;
  }
  // Above every number stored, reserved, or found in the task's file names (a folder of other tools
  // can hold sources its ledger never recorded).
  int next = std::max({idx.iters.max().value_or(0), live.max().value_or(0),
                       highest_iter_on_disk().value_or(0)}) + 1;
  if (next > k_max_iter_number) refuse_exhausted("iteration number", iter_number_name(k_max_iter_number));
  live.insert(next);
  res.live_iters = live;
  write_reservations(res);
  return next;
}

int Ledger::reserve_attempt(std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "next-iter --attempt");
  std::vector<RoundRecord> legacy;
  LedgerIndex idx = writable_state_locked(&legacy);
  Reservations res = reservations();
  int next = next_free_attempt(idx, res);
  if (next >= k_max_attempts) refuse_exhausted("attempt id", "attemptZZZZ");
  res.max_attempt = next;
  write_reservations(res);
  return next;
}

void Ledger::release_iter(int number, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "release");
  Reservations res = reservations();
  if (!res.live_iters.contains(number)) return;
  res.live_iters = without(res.live_iters, number);
  write_reservations(res);
}

json Ledger::append_attempt(json record, const std::string& tag, std::chrono::milliseconds lock_timeout) {
  FileLock guard = lock(lock_timeout, "attempt");
  std::vector<std::string> warnings;
  (void)read_attempts(&warnings);
  for (const auto& w : warnings) {
    if (w.find("torn") != std::string::npos) continue;  // cut off by the append
    throw Error(ExitCode::corrupt, fmt::format("{}; croq adds nothing to a damaged log", w),
                "`croq session clean --invalid-only` sets the unreadable lines aside (the old file is kept as .bak.<time>)");
  }
  std::vector<RoundRecord> legacy;
  LedgerIndex idx = writable_state_locked(&legacy);
  Reservations res = reservations();
  const int index = next_free_attempt(idx, res);
  if (index >= k_max_attempts) refuse_exhausted("attempt id", "attemptZZZZ");
  const AttemptId id{index, tag};
  json out = json::object();
  out["attempt"] = "attempt" + id.letters();
  out["kernel"] = id.name();
  for (auto it = record.begin(); it != record.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  append_line(m_ws.attempt_log(m_task), dump_compact(out), /*durable=*/true, json_tail_policy(), m_ws.root());
  res.max_attempt = index;
  write_reservations(res);
  return out;
}

std::vector<json> Ledger::read_attempts(std::vector<std::string>* warnings) const {
  count_state_read(StateDoc::attempts);
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
    if (is_blank(line)) continue;
    auto j = try_parse_json(line);
    if (!j || !j->is_object()) {
      if (warnings) {
        warnings->push_back(e == std::string::npos
                                ? fmt::format("attempt-log.jsonl line {}: torn last line skipped (an interrupted write)", line_no)
                                : fmt::format("attempt-log.jsonl line {}: not a JSON object — skipped", line_no));
      }
      continue;
    }
    out.push_back(std::move(*j));
  }
  return out;
}

std::set<std::string> failed_kernel_names(const std::vector<RoundRecord>& records) {
  std::set<std::string> out;
  for (const auto& r : records) {
    if (!r.attempt_index()) continue;
    const auto planned = get_string(r.extra, "planned_iter");
    const auto cut = r.kernel.find('_');
    if (planned && cut != std::string::npos) out.insert(*planned + r.kernel.substr(cut));
  }
  return out;
}

std::optional<fs::path> find_live_source(const Workspace& ws, const TaskRef& task, const std::string& id) {
  if (try_parse_iter_id(id) || try_parse_attempt_id(id)) return find_primary_source(ws, task, id);  // its own
  auto all = find_sources(ws, task, id);
  if (all.empty()) return std::nullopt;
  const std::set<std::string> failed = failed_kernel_names(Ledger(ws, task).read_all().records);
  for (const auto& f : all) {
    if (!failed.count(f.stem().string())) return f;
  }
  return std::nullopt;
}

FigureBacking figure_backing(const Workspace& ws, const RoundRecord& r) {
  FigureBacking b;
  if (auto measured = r.edited_figure()) {
    b.kind = FigureBacking::edited_block;
    b.other = measured;
    return b;
  }
  // A failure's measurement is no PASS by nature, and its figure counts for nothing.
  if (!r.tflops || is_failure(r.decision) || r.source() != "measured" || !r.extra.contains("measurement") ||
      !r.extra["measurement"].is_object()) {
    return b;
  }
  const json& prov = r.extra["measurement"];
  const auto file = get_string(prov, "file");
  const auto sha = get_string(prov, "sha256");
  if (!file || !sha || file->empty()) return b;
  b.file = fs::path(*file).is_absolute() ? fs::path(*file) : ws.root() / *file;
  const auto text = read_file(b.file);
  b.kind = FigureBacking::file_gone;
  if (!text) return b;  // moved away: the record's own block was checked above
  b.kind = FigureBacking::file_replaced;
  if (sha256_hex(*text) != *sha) return b;
  const auto doc = try_parse_json(*text);
  b.kind = FigureBacking::not_pass;
  if (!doc || !doc->is_object() || get_string(*doc, "verdict").value_or("") != "PASS") return b;
  b.other = (*doc)["tflops"].is_number() ? std::optional<double>((*doc)["tflops"].get<double>()) : std::nullopt;
  b.kind = b.other && !figures_differ(*b.other, *r.tflops) ? FigureBacking::backed : FigureBacking::other_figure;
  return b;
}

std::optional<std::string> unbacked_figure(const Workspace& ws, const RoundRecord& r) {
  const FigureBacking b = figure_backing(ws, r);
  switch (b.kind) {
    case FigureBacking::edited_block:
      return fmt::format("the record says {:.6g} TFLOPS, its own measurement block {:.6g}", *r.tflops, *b.other);
    case FigureBacking::not_pass:
      return fmt::format("its measurement file {} is not a PASS", ws.display(b.file));
    case FigureBacking::other_figure:
      return fmt::format("the record says {:.6g} TFLOPS, its measurement file {} {}", *r.tflops, ws.display(b.file),
                         b.other ? fmt::format("{:.6g}", *b.other) : "none");
    // Replaced since (`croq baseline --force` rewrites the baseline's file; before croq wrote a stored
    // kernel's new measurement to a file of its own, a re-run rewrote the best's), gone, or nothing
    // to check: nothing to compare.
    case FigureBacking::file_replaced:
    case FigureBacking::file_gone:
    case FigureBacking::not_checked:
    case FigureBacking::backed: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace croq
