// Crash-safe file primitives. Every persisted croq file goes through these:
//  - atomic_write: a whole file is replaced at once (temp file in the same folder, fsync,
//    rename, fsync of the folder), so a reader sees the old or the new content, never a mix;
//  - append_line: one record appended whole with a single write(2) on an O_APPEND descriptor,
//    then fsync; a torn tail left by a crash is cut off first so records never run together;
//  - FileLock: an exclusive flock(2) on a lock file, released by the kernel if the holder dies.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace croq {

namespace fs = std::filesystem;

// Reads a whole file; nullopt if it does not exist. Throws croq::Error on other I/O errors.
std::optional<std::string> read_file(const fs::path& path);
// Reads a whole file; throws croq::Error (not_found) if it is missing.
std::string read_file_or_throw(const fs::path& path);

// Confinement: the writers below take an optional `root` (a workspace root). With it, `path` must
// lie below the root, and every component below the root is opened without following a symbolic
// link (O_NOFOLLOW, folders created as needed): a link planted in the task's folders cannot send a
// write outside the workspace. A violation throws Error(corrupt) naming the link, and nothing is
// written. The root itself may be reached through links.
//
// Replaces `path` with `content` atomically. `durable` adds the fsyncs (file and folder).
void atomic_write(const fs::path& path, std::string_view content, bool durable = true, const fs::path& root = {});

// Result of append_line: whether a torn tail (bytes after the last newline) was cut off first.
struct AppendOutcome {
  bool repaired_torn_tail = false;
  bool terminated_tail = false;  // the unterminated last line was a whole record: a newline was added
  size_t torn_bytes = 0;
  size_t offset = 0;  // byte offset at which the record starts
};

// What append_line does with bytes after the last newline of the file. A crash can leave a torn
// record there (cut off); a hand-written file may simply lack its final newline (`is_complete`
// says the tail is a whole record: it is kept and terminated). A tail longer than
// `max_torn_bytes` is not a torn record but damage: append_line refuses (Error corrupt) and
// changes nothing.
struct TailPolicy {
  std::function<bool(std::string_view tail)> is_complete;  // empty: every tail is torn
  size_t max_torn_bytes = 1u << 20;
};

// Appends `line` (a newline is added if missing) as one write(2) on an O_APPEND descriptor. The
// caller holds the lock that serialises writers of this file. `durable` fsyncs the data. The file
// is never reached through a symbolic link (its own name included, with or without `root`), and
// must be a regular file with no other hard link: an append never lands in a file elsewhere.
AppendOutcome append_line(const fs::path& path, std::string_view line, bool durable = true,
                          const TailPolicy& tail = {}, const fs::path& root = {});

// Temporary files atomic_write leaves behind when its process dies between creating and renaming
// them ("<name>.tmp.<pid>.<hex>" whose pid is no longer running), in `dir` (not recursive).
std::vector<fs::path> stale_temp_files(const fs::path& dir);

// Creates the folder and its parents (no error if they exist).
void ensure_dir(const fs::path& dir);

// Exclusive advisory lock on a lock file; waits up to `timeout` (zero: try once).
class FileLock {
 public:
  // The lock file is opened like append_line's files (no symbolic link, no other hard link):
  // the holder's note is written into it.
  FileLock(const fs::path& lock_path, std::chrono::milliseconds timeout,
           std::string_view purpose = {}, const fs::path& root = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock(FileLock&& other) noexcept;

  const fs::path& path() const { return m_path; }

  // Non-throwing attempt: nullopt if the lock is held by someone else (after `timeout`).
  static std::optional<FileLock> try_acquire(const fs::path& lock_path,
                                             std::chrono::milliseconds timeout,
                                             std::string_view purpose = {}, const fs::path& root = {});
  // The holder's description written into the lock file ("pid 123: store-round"), if any.
  static std::string describe_holder(const fs::path& lock_path);

 private:
  FileLock() = default;
  bool acquire(const fs::path& lock_path, std::chrono::milliseconds timeout,
               std::string_view purpose, const fs::path& root);
  fs::path m_path;
  int m_fd = -1;
};

}  // namespace croq
