#include "matches_view.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace chessrl::evaluator_service {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The last `max_bytes` of a file (from the start of a line), or "".
std::string read_tail(const fs::path& path, std::uintmax_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > std::streamoff(max_bytes) ? size - std::streamoff(max_bytes) : 0;
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (start > 0) {
    const auto newline = text.find('\n');
    text.erase(0, newline == std::string::npos ? text.size() : newline + 1);
  }
  return text;
}

// The PGN file a record names, when it is in pgn/ under the state directory
// and not too large; null otherwise (a record from another directory, a file
// pruned or unreadable).
Json pgn_text(const fs::path& state_dir, const Json& record) {
  if (!record.contains("pgn") || !record["pgn"].is_string()) return nullptr;
  const fs::path file = state_dir / "pgn" / fs::path(record["pgn"].get<std::string>()).filename();
  std::error_code error;
  const std::uintmax_t size = fs::file_size(file, error);
  if (error || size > MatchesView::kMaxPgnBytes) return nullptr;
  std::ifstream in(file, std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string MatchesView::json() const {
  const fs::path results = fs::path(state_dir_) / "results.jsonl";
  std::error_code error;
  const std::uintmax_t size = fs::file_size(results, error);
  const std::uintmax_t key_size = error ? 0 : size;
  const auto mtime = fs::last_write_time(results, error);
  const std::int64_t key_mtime = error ? 0 : mtime.time_since_epoch().count();
  std::lock_guard lock(mutex_);
  if (key_size != built_size_ || key_mtime != built_mtime_) {
    cached_ = build();
    built_size_ = key_size;
    built_mtime_ = key_mtime;
  }
  return cached_;
}

std::string MatchesView::build() const {
  const fs::path dir(state_dir_);
  // A results.jsonl line is a few hundred bytes: the tail holds the newest kMaxMatches.
  std::istringstream lines(read_tail(dir / "results.jsonl", 512 * 1024));
  std::vector<Json> records;
  for (std::string line; std::getline(lines, line);) {
    Json record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.contains("candidate")) records.push_back(std::move(record));
  }
  std::reverse(records.begin(), records.end());  // newest first
  if (records.size() > kMaxMatches) records.resize(kMaxMatches);

  Json out = {{"best_version", 0}, {"matches", Json::array()}, {"gating", nullptr},
              {"gauntlet", nullptr}};
  bool best_known = false;
  for (Json& record : records) {
    const bool gating = record.value("opponent", "") == "best";
    if (gating && !best_known) {
      best_known = true;
      out["best_version"] = record.value("promoted", false)
                                ? record.value("candidate", std::uint64_t{0})
                                : record.value("opponent_version", std::uint64_t{0});
    }
    const char* kind = gating ? "gating" : "gauntlet";
    if (out[kind].is_null()) {
      Json game = {{"candidate", record.value("candidate", std::uint64_t{0})},
                   {"pgn", pgn_text(dir, record)}};
      if (gating) game["opponent_version"] = record.value("opponent_version", std::uint64_t{0});
      if (!game["pgn"].is_null()) out[kind] = std::move(game);
    }
    record.erase("pgn");
    out["matches"].push_back(std::move(record));
  }
  return out.dump();
}

}  // namespace chessrl::evaluator_service
