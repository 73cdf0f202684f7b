#include "evaluator_state.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

namespace chessrl::evaluator_service {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string iso_time(std::int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

// JSON has no infinities; the estimates are clamped, but stay safe.
double finite(double x) { return std::isfinite(x) ? x : 0.0; }

// Elo to one decimal without "-0.0".
double tidy(double x) { return std::abs(x) < 0.05 ? 0.0 : x; }

Json to_json(const MatchRecord& r) {
  Json j;
  j["time"] = iso_time(r.time_ms);
  j["candidate"] = r.candidate;
  j["opponent"] = r.opponent;
  if (r.opponent_version > 0) j["opponent_version"] = r.opponent_version;
  j["wins"] = r.score.wins;
  j["draws"] = r.score.draws;
  j["losses"] = r.score.losses;
  j["games"] = r.score.games();
  j["pairs"] = r.score.pairs;
  j["score"] = finite(r.score.score());
  j["elo"] = finite(r.elo.elo);
  j["lower"] = finite(r.elo.lower);
  j["upper"] = finite(r.elo.upper);
  j["forfeits"] = r.forfeits;
  j["promoted"] = r.promoted;
  j["seconds"] = finite(r.seconds);
  j["pgn"] = r.pgn;
  return j;
}

}  // namespace

std::string to_json_line(const MatchRecord& r) { return to_json(r).dump(); }

std::string to_json_line(const EvaluationReport& r) {
  Json j;
  j["candidate"] = r.candidate;
  j["evaluated"] = r.evaluated;
  j["best_before"] = r.best_before;
  j["best"] = r.best_after;
  j["promoted"] = r.promoted;
  j["note"] = r.note;
  j["matches"] = Json::array();
  for (const auto& m : r.matches) j["matches"].push_back(to_json(m));
  j["skipped"] = r.skipped;
  if (!r.ladder_rung.empty()) j["ladder_rung"] = r.ladder_rung;
  j["seconds"] = finite(r.seconds);
  return j.dump();
}

std::string describe(const MatchRecord& r) {
  char buf[256];
  std::string opponent = r.opponent;
  if (r.opponent_version > 0) opponent += " v" + std::to_string(r.opponent_version);
  std::snprintf(buf, sizeof buf,
                "v%llu vs %s: +%d =%d -%d score %.3f elo %+.1f [%+.1f, %+.1f] (%d games",
                static_cast<unsigned long long>(r.candidate), opponent.c_str(), r.score.wins,
                r.score.draws, r.score.losses, r.score.score(), tidy(r.elo.elo), tidy(r.elo.lower),
                tidy(r.elo.upper), r.score.games());
  std::string text = buf;
  if (r.forfeits > 0) text += ", " + std::to_string(r.forfeits) + " forfeited";
  return text + ")";
}

Result<StateDir> StateDir::open(const std::string& path) {
  std::error_code error;
  for (const std::string& dir : {path, path + "/pgn", path + "/models"}) {
    fs::create_directories(dir, error);
    if (error) return fail("--state-dir: cannot create " + dir + ": " + error.message());
  }
  return StateDir(path);
}

Result<EvaluatorProgress> StateDir::load_progress() const {
  const std::string file = path_ + "/state.json";
  std::ifstream in(file);
  if (!in) return EvaluatorProgress{};
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail(file + ": not a JSON object");
  EvaluatorProgress progress;
  for (const auto& [key, field] : {std::pair{"last_evaluated", &progress.last_evaluated},
                                   std::pair{"last_gated", &progress.last_gated}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number_unsigned()) {
      return fail(file + ": '" + key + "' is not a version number");
    }
    *field = j[key].get<std::uint64_t>();
  }
  if (j.contains("ladder_rung")) {
    if (!j["ladder_rung"].is_string()) return fail(file + ": 'ladder_rung' is not a rung's label");
    progress.ladder_rung = j["ladder_rung"].get<std::string>();
  }
  return progress;
}

Result<void> StateDir::save_progress(const EvaluatorProgress& progress) const {
  Json j;
  j["last_evaluated"] = progress.last_evaluated;
  j["last_gated"] = progress.last_gated;
  if (!progress.ladder_rung.empty()) j["ladder_rung"] = progress.ladder_rung;
  return write_file_atomically(path_ + "/state.json", j.dump() + "\n");
}

Result<void> StateDir::append_result(const MatchRecord& record) const {
  const std::string file = results_path();
  std::ofstream out(file, std::ios::app);
  out << to_json_line(record) << '\n';
  out.flush();
  if (!out) return fail("cannot append to " + file + ": " + std::strerror(errno));
  return {};
}

std::string StateDir::match_pgn_path(std::uint64_t candidate, std::uint64_t best) const {
  return path_ + "/pgn/match-v" + std::to_string(candidate) + "-v" + std::to_string(best) + ".pgn";
}

std::string StateDir::gauntlet_pgn_path(std::uint64_t candidate) const {
  return path_ + "/pgn/gauntlet-v" + std::to_string(candidate) + ".pgn";
}

std::string StateDir::model_path(std::uint64_t version) const {
  return path_ + "/models/model-v" + std::to_string(version) + ".chrl";
}

Result<std::vector<std::uint64_t>> StateDir::prune_models(std::size_t keep_newest,
                                                          std::uint64_t best) const {
  std::vector<std::uint64_t> deleted;
  if (keep_newest == 0) return deleted;
  const std::filesystem::path dir = path_ + "/models";
  std::error_code error;
  std::vector<std::uint64_t> saved;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    // model-v<N>.chrl exactly (not a temporary of write_file_atomically, nothing else).
    const std::string name = it->path().filename().string();
    std::uint64_t version = 0;
    const char* first = name.data() + 7;
    const char* last = name.data() + name.size() - 5;
    if (name.size() <= 12 || name.rfind("model-v", 0) != 0 ||
        name.compare(name.size() - 5, 5, ".chrl") != 0 ||
        std::from_chars(first, last, version).ptr != last ||
        name != "model-v" + std::to_string(version) + ".chrl") {
      continue;
    }
    saved.push_back(version);
  }
  if (error) return fail("cannot list " + dir.string() + ": " + error.message());
  std::sort(saved.begin(), saved.end());
  const std::size_t old = saved.size() > keep_newest ? saved.size() - keep_newest : 0;
  for (std::size_t i = 0; i < old; ++i) {
    // The best, and the oldest: the run's first version, the baseline every
    // later one is measured against ("+N Elo over its first version").
    if (saved[i] == best || i == 0) continue;
    const std::string file = model_path(saved[i]);
    if (!std::filesystem::remove(file, error) && error) {
      return fail("cannot delete " + file + ": " + error.message());
    }
    deleted.push_back(saved[i]);
  }
  return deleted;
}

}  // namespace chessrl::evaluator_service
