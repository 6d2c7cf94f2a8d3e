// Lookup of the embedded assets (assets.hpp).
#include "croq/web/assets.hpp"

#include "croq/util/text.hpp"

namespace croq::web {

const Asset* find_asset(std::string_view name) {
  for (const auto& a : embedded_assets()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

std::string_view asset_text(std::string_view name) {
  const Asset* a = find_asset(name);
  return a ? a->data : std::string_view();
}

std::string asset_content_type(std::string_view name) {
  if (ends_with(name, ".css")) return "text/css; charset=utf-8";
  if (ends_with(name, ".js")) return "text/javascript; charset=utf-8";
  if (ends_with(name, ".svg")) return "image/svg+xml";
  if (ends_with(name, ".png")) return "image/png";
  if (ends_with(name, ".ico")) return "image/x-icon";
  if (ends_with(name, ".html")) return "text/html; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace croq::web
