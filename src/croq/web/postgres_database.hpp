// The PostgreSQL backend of the monitor's database (database.hpp), for several machines writing one
// database: `croq serve --db postgresql://user@host:port/database` (libpq's URL forms, with
// `?host=/socket/dir` and the other libpq parameters). Same schema and migrations as SQLite.
#pragma once
#include <memory>
#include <string>

#include "croq/web/database.hpp"

namespace croq::web {

bool is_postgres_location(const std::string& location);  // postgresql:// or postgres://
// The location with any password replaced by *** (for messages, info() and the system panel).
std::string redact_postgres_location(const std::string& location);
bool postgres_supported();  // croq was built with libpq
// Connects and migrates. Throws Error(usage) when the server cannot be reached (or croq was built
// without libpq), Error(corrupt) for a newer schema.
std::unique_ptr<Database> open_postgres_database(const std::string& url, const DatabaseOptions& options);

}  // namespace croq::web
