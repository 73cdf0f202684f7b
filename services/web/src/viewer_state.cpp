#include "viewer_state.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace chessrl::web_service {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxPlies = 2048;         // moves of one game kept
constexpr std::size_t kMaxMatches = 100;        // matches kept
constexpr std::size_t kMaxPgnBytes = 1 << 20;   // one PGN text
constexpr std::size_t kMaxShortString = 256;

std::string short_string(const Json& j, const char* key, std::size_t max = kMaxShortString) {
  if (!j.contains(key) || !j[key].is_string()) return "";
  std::string s = j[key].get<std::string>();
  if (s.size() > max) s.resize(max);
  return s;
}

std::uint64_t unsigned_number(const Json& j, const char* key) {
  if (!j.contains(key)) return 0;
  const Json& v = j[key];
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() > 0) return std::uint64_t(v.get<std::int64_t>());
  return 0;
}

Json clean_game(const Json& g) {
  if (!g.is_object()) return nullptr;
  Json moves = Json::array();
  if (g.contains("moves") && g["moves"].is_array()) {
    for (const Json& m : g["moves"]) {
      if (moves.size() >= kMaxPlies) break;
      // UCI: e2e4, e7e8q.
      if (!m.is_string() || m.get_ref<const std::string&>().size() < 4 ||
          m.get_ref<const std::string&>().size() > 5)
        return nullptr;
      moves.push_back(m);
    }
  }
  return {{"id", short_string(g, "id", 128)},
          {"start_fen", short_string(g, "start_fen", 128)},
          {"moves", std::move(moves)},
          {"in_progress", g.value("in_progress", false)},
          {"result", short_string(g, "result", 8)},
          {"termination", short_string(g, "termination", 64)},
          {"max_plies", unsigned_number(g, "max_plies")}};
}

Json parse_object(const std::string& body, const char* what, std::string* error) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) *error = std::string(what) + ": not a JSON object";
  return j;
}

// The checked copies as JSON; clean_live() and clean_matches() are their text.
Result<Json> clean_live_json(const std::string& body);
Result<Json> clean_matches_json(const std::string& body);

}  // namespace

Result<std::string> clean_live(const std::string& body) {
  auto j = clean_live_json(body);
  if (!j.ok()) return fail(j.error());
  return j.value().dump();
}

Result<std::string> clean_matches(const std::string& body) {
  auto j = clean_matches_json(body);
  if (!j.ok()) return fail(j.error());
  return j.value().dump();
}

namespace {

Result<Json> clean_live_json(const std::string& body) {
  std::string error;
  const Json j = parse_object(body, "/live", &error);
  if (!error.empty()) return fail(error);
  if (!j.contains("pod") || !j["pod"].is_string() || j["pod"].get_ref<const std::string&>().empty())
    return fail("/live: no pod name");
  const Json game = j.contains("game") ? clean_game(j["game"]) : Json(nullptr);
  const Json previous = j.contains("previous") ? clean_game(j["previous"]) : Json(nullptr);
  const Json out = {{"pod", short_string(j, "pod", 253)},
                    {"model_version", unsigned_number(j, "model_version")},
                    {"games_finished", unsigned_number(j, "games_finished")},
                    {"updated_ms", unsigned_number(j, "updated_ms")},
                    {"game", game},
                    {"previous", previous}};
  return out;
}

Result<Json> clean_matches_json(const std::string& body) {
  std::string error;
  const Json j = parse_object(body, "/matches", &error);
  if (!error.empty()) return fail(error);
  Json matches = Json::array();
  if (j.contains("matches") && j["matches"].is_array()) {
    for (const Json& m : j["matches"]) {
      if (matches.size() >= kMaxMatches) break;
      if (!m.is_object()) continue;
      // Scalars only (numbers, booleans, short strings): what the table and the curve use.
      Json kept = Json::object();
      for (const auto& [key, value] : m.items()) {
        if (key.size() > 32) continue;
        if (value.is_number() || value.is_boolean()) kept[key] = value;
        if (value.is_string()) kept[key] = short_string(m, key.c_str());
      }
      matches.push_back(std::move(kept));
    }
  }
  const auto pgn_game = [&j](const char* kind) -> Json {
    if (!j.contains(kind) || !j[kind].is_object()) return nullptr;
    const Json& g = j[kind];
    if (!g.contains("pgn") || !g["pgn"].is_string()) return nullptr;
    if (g["pgn"].get_ref<const std::string&>().size() > kMaxPgnBytes) return nullptr;
    Json out = {{"candidate", unsigned_number(g, "candidate")}, {"pgn", g["pgn"]}};
    if (g.contains("opponent_version")) out["opponent_version"] = unsigned_number(g, "opponent_version");
    return out;
  };
  const Json out = {{"best_version", unsigned_number(j, "best_version")},
                    {"matches", std::move(matches)},
                    {"gating", pgn_game("gating")},
                    {"gauntlet", pgn_game("gauntlet")}};
  return out;
}

}  // namespace

struct ViewerState::Board {
  Json live;  // the checked /live answer
  std::string pod;
  std::int64_t seen_ms = 0;
  bool answered = false;  // in the last round
};

ViewerState::ViewerState(ViewerConfig config) : config_(config) { rebuild(0); }

void ViewerState::apply(const PollRound& round) {
  std::lock_guard lock(mutex_);
  for (auto& [address, board] : boards_) board->answered = false;
  answered_ = unreachable_ = 0;
  selfplay_error_ = round.resolve_error;
  for (const auto& [address, body] : round.selfplay) {
    Result<Json> live = body.ok() ? clean_live_json(body.value()) : Result<Json>(fail(body.error()));
    if (!live.ok()) {
      ++unreachable_;
      // A transport error names the address already; a bad answer does not.
      if (selfplay_error_.empty())
        selfplay_error_ = body.ok() ? address + ": " + live.error() : live.error();
      continue;
    }
    ++answered_;
    auto& board = boards_[address];
    if (!board) board = std::make_shared<Board>();
    board->live = std::move(live).value();
    board->pod = board->live["pod"].get<std::string>();
    board->seen_ms = round.now_ms;
    board->answered = true;
  }
  std::erase_if(boards_, [&](const auto& entry) {
    return round.now_ms - entry.second->seen_ms > config_.stale_after_ms;
  });
  if (round.evaluator) {
    const Result<std::string>& answer = *round.evaluator;
    Result<Json> matches =
        answer.ok() ? clean_matches_json(answer.value()) : Result<Json>(fail(answer.error()));
    evaluator_ok_ = matches.ok();
    if (matches.ok()) {
      evaluator_ = std::make_shared<const Json>(std::move(matches).value());
      evaluator_ok_ms_ = round.now_ms;
      evaluator_error_.clear();
    } else {
      evaluator_error_ = matches.error();  // the last answer stays shown
    }
  }
  rebuild(round.now_ms);
}

void ViewerState::rebuild(std::int64_t now_ms) {
  std::vector<const Board*> shown;
  for (const auto& [address, board] : boards_) shown.push_back(board.get());
  std::sort(shown.begin(), shown.end(), [](const Board* a, const Board* b) {
    return a->pod != b->pod ? a->pod < b->pod : a->seen_ms > b->seen_ms;
  });
  if (shown.size() > std::size_t(config_.max_boards)) shown.resize(std::size_t(config_.max_boards));
  Json boards = Json::array();
  for (const Board* board : shown) {
    Json b = board->live;
    b["seen_ms"] = board->seen_ms;
    b["stale"] = !board->answered;
    boards.push_back(std::move(b));
  }
  const Json state = {
      {"now_ms", now_ms},
      {"poll_interval_ms", config_.poll_interval_ms},
      {"sources",
       {{"selfplay",
         {{"configured", config_.selfplay_configured},
          {"pods", answered_},
          {"unreachable", unreachable_},
          {"error", selfplay_error_}}},
        {"evaluator",
         {{"configured", config_.evaluator_configured},
          {"ok", evaluator_ok_},
          {"last_ok_ms", evaluator_ok_ms_},
          {"error", evaluator_error_}}}}},
      {"boards", std::move(boards)},
      {"evaluator", evaluator_ ? *evaluator_ : Json(nullptr)}};
  snapshot_ = std::make_shared<const std::string>(state.dump());
}

std::shared_ptr<const std::string> ViewerState::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_;
}

std::size_t ViewerState::boards() const {
  std::lock_guard lock(mutex_);
  return boards_.size();
}

}  // namespace chessrl::web_service
