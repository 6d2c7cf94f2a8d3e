// A random key private to one workspace (tuning/.croq/key: 32 random bytes as hex, mode 0600,
// created on first use), for the caches croq trusts instead of re-reading the truth. The ledger
// index carries an HMAC-SHA256 of its content made with this key, so a hand edit of the cache (or
// a script that keeps its signature fields intact) is caught and the cache is rebuilt from
// idea-log.jsonl. It raises the bar; it is not a defence against someone who runs as the same user
// and reads the key: the records themselves (idea-log.jsonl) stay the truth, and repairs start there.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "croq/workspace/workspace.hpp"

namespace croq {

// The key (64 hex characters), created if missing; nullopt if it cannot be read or created (a
// read-only workspace, a damaged key file): then no cache is trusted.
std::optional<std::string> workspace_key(const Workspace& ws);
fs::path workspace_key_path(const Workspace& ws);

// HMAC-SHA256 (hex) of `data` under `key`, for `purpose` (a short label, so that a MAC made for
// one kind of document never validates another).
std::string workspace_mac(const std::string& key, std::string_view purpose, std::string_view data);

}  // namespace croq
