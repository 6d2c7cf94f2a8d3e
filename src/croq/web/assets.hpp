// The monitor's static files (CSS, JavaScript, icon), embedded in the binary at build time by
// src/cmake/embed_files.cmake from src/croq/web/assets/. Served under /static/<name> by name lookup only,
// so no request can reach a file on disk through this path.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace croq::web {

struct Asset {
  const char* name;
  std::string_view data;
};

// Generated (assets_data.cpp in the build folder).
const std::vector<Asset>& embedded_assets();

const Asset* find_asset(std::string_view name);
// The asset's bytes, empty if there is none by that name.
std::string_view asset_text(std::string_view name);
// "text/css; charset=utf-8", "text/javascript; charset=utf-8", "image/svg+xml", ...
std::string asset_content_type(std::string_view name);

}  // namespace croq::web
