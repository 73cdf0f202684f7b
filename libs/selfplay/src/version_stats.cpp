#include "chessrl/selfplay/version_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "chessrl/chess/position.h"

namespace chessrl::selfplay {

std::string termination_label(chess::Termination reason) {
  std::string label = chess::termination_name(reason);
  for (char& c : label)
    if (c == ' ' || c == '-') c = '_';
  return label;
}

Result<void> GameStats::add(const record::GameRecord& record) {
  chess::Color first_mover = chess::kWhite;
  if (!record.start_fen.empty()) {
    auto start = chess::Position::from_fen(record.start_fen);
    if (!start) return fail("game " + record.id + ": start FEN: " + start.error());
    first_mover = start->side_to_move();
  }
  // The result for White: 1, 0 or -1.
  int white = 0;
  if (record.result.outcome == chess::Outcome::kWhiteWins) white = 1;
  if (record.result.outcome == chess::Outcome::kBlackWins) white = -1;
  ++games;
  decisive += white != 0;
  plies += record.moves.size();
  ++terminations[termination_label(record.result.reason)];
  for (const record::MoveTarget& t : record.targets) {
    const bool white_to_move = (first_mover == chess::kWhite) == (t.ply % 2 == 0);
    const double z = white_to_move ? white : -white;
    const double error = double(t.root_value) - z;
    value_sq_error_sum += error * error;
    double entropy = 0;
    for (const record::PolicyEntry& e : t.policy)
      if (e.probability > 0) entropy -= double(e.probability) * std::log(double(e.probability));
    entropy_sum += entropy;
    ++positions;
  }
  return {};
}

void GameStats::merge(const GameStats& other) {
  games += other.games;
  decisive += other.decisive;
  plies += other.plies;
  positions += other.positions;
  entropy_sum += other.entropy_sum;
  value_sq_error_sum += other.value_sq_error_sum;
  for (const auto& [label, count] : other.terminations) terminations[label] += count;
}

std::string to_json(const GameStats& s) {
  nlohmann::json j;
  j["version"] = s.version;
  j["games"] = s.games;
  j["decisive"] = s.decisive;
  j["plies"] = s.plies;
  j["positions"] = s.positions;
  j["policy_entropy"] = s.policy_entropy();
  j["value_mse"] = s.value_mse();
  j["terminations"] = nlohmann::json::object();
  for (const auto& [label, count] : s.terminations) j["terminations"][label] = count;
  return j.dump();
}

Result<GameStats> parse_game_stats(std::string_view text) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  GameStats s;
  for (const auto& [key, field] : {std::pair{"version", &s.version}, std::pair{"games", &s.games},
                                   std::pair{"decisive", &s.decisive}, std::pair{"plies", &s.plies},
                                   std::pair{"positions", &s.positions}}) {
    if (!j.contains(key) || !j[key].is_number_unsigned())
      return fail(std::string("'") + key + "' is missing or not a count");
    *field = j[key].get<std::uint64_t>();
  }
  if (s.decisive > s.games) return fail("'decisive' is more than 'games'");
  for (const auto& [key, mean] : {std::pair{"policy_entropy", &s.entropy_sum},
                                  std::pair{"value_mse", &s.value_sq_error_sum}}) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() < 0)
      return fail(std::string("'") + key + "' is missing or not a number >= 0");
    *mean = j[key].get<double>() * double(s.positions);  // back to a sum
  }
  if (!j.contains("terminations") || !j["terminations"].is_object())
    return fail("'terminations' is missing or not an object");
  for (const auto& [label, count] : j["terminations"].items()) {
    if (!count.is_number_unsigned()) return fail("'terminations." + label + "' is not a count");
    s.terminations[label] = count.get<std::uint64_t>();
  }
  return s;
}

std::string describe(const GameStats& s) {
  std::vector<std::pair<std::uint64_t, std::string>> ends;
  for (const auto& [label, count] : s.terminations) ends.emplace_back(count, label);
  std::sort(ends.rbegin(), ends.rend());
  std::string how;
  for (const auto& [count, label] : ends) {
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.0f%%", how.empty() ? "" : ", ", label.c_str(),
                  100.0 * double(count) / double(std::max<std::uint64_t>(1, s.games)));
    how += part;
  }
  char line[512];
  std::snprintf(line, sizeof line,
                "v%llu: %llu games, %.0f%% decisive (%s), %.1f plies on average, policy entropy "
                "%.2f nats, value MSE %.3f over %llu positions",
                static_cast<unsigned long long>(s.version),
                static_cast<unsigned long long>(s.games), 100.0 * s.decisive_share(),
                how.empty() ? "none" : how.c_str(), s.mean_plies(), s.policy_entropy(),
                s.value_mse(), static_cast<unsigned long long>(s.positions));
  return line;
}

}  // namespace chessrl::selfplay
