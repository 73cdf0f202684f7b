// The page's files, built into the binary (cmake/embed_assets.cmake writes
// web_assets.cpp from static/ and the npm packages of package.json), so the
// viewer needs no files at run time and fetches nothing from the internet.
#pragma once

#include <span>
#include <string_view>

namespace chessrl::web_service {

struct Asset {
  std::string_view path;          // relative to the page: "index.html", "static/app.js", "vendor/..."
  std::string_view content_type;  // from the file's extension
  std::string_view body;
};

std::span<const Asset> assets();
// nullptr when there is none.
const Asset* find_asset(std::string_view path);

}  // namespace chessrl::web_service
