#include "chessrl/record/game_record.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/record/policy_rule.h"
#include "chessrl/record/result_rule.h"

namespace chessrl::record {

using chess::Outcome;
using chess::Termination;
using nlohmann::json;

bool GameRecord::resign_false_positive() const {
  if (!resign_disabled || would_resign_ply < 0) return false;
  const Outcome lost =
      would_resign_side == chess::kWhite ? Outcome::kBlackWins : Outcome::kWhiteWins;
  return result.outcome != lost;
}

namespace {

constexpr Termination kTerminations[] = {Termination::kNone,
                                         Termination::kCheckmate,
                                         Termination::kStalemate,
                                         Termination::kFiftyMoveRule,
                                         Termination::kThreefoldRepetition,
                                         Termination::kInsufficientMaterial,
                                         Termination::kResignation,
                                         Termination::kAdjudication,
                                         Termination::kMoveLimit};

Outcome outcome_from_pgn(const std::string& text, bool* ok) {
  *ok = true;
  if (text == "1-0") return Outcome::kWhiteWins;
  if (text == "0-1") return Outcome::kBlackWins;
  if (text == "1/2-1/2") return Outcome::kDraw;
  if (text == "*") return Outcome::kOngoing;
  *ok = false;
  return Outcome::kOngoing;
}

}  // namespace

std::string to_json(const GameRecord& r) {
  json j;
  j["id"] = r.id;
  j["index"] = r.index;
  j["seed"] = r.seed;
  j["start"] = r.start_fen;
  json moves = json::array();
  for (chess::Move m : r.moves) moves.push_back(chess::to_uci(m));
  j["moves"] = std::move(moves);
  j["result"] = r.result.pgn_result();
  j["termination"] = chess::termination_name(r.result.reason);
  json targets = json::array();
  for (const MoveTarget& t : r.targets) {
    json policy = json::array();
    for (const PolicyEntry& e : t.policy) policy.push_back({chess::to_uci(e.move), e.probability});
    targets.push_back({{"ply", t.ply},
                       {"value", t.root_value},
                       {"draw", t.root_draw},
                       {"visits", t.visits},
                       {"policy", std::move(policy)}});
  }
  j["targets"] = std::move(targets);
  j["resign"] = {{"disabled", r.resign_disabled},
                 {"would_ply", r.would_resign_ply},
                 {"would_side", r.would_resign_side == chess::kWhite ? "w" : "b"}};
  return j.dump();
}

Result<GameRecord> parse_record(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("game record is not valid JSON");
  if (!j.is_object()) return fail("game record is not a JSON object");
  GameRecord r;
  try {
    r.id = j.at("id").get<std::string>();
    r.index = j.at("index").get<std::uint64_t>();
    r.seed = j.at("seed").get<std::uint64_t>();
    r.start_fen = j.at("start").get<std::string>();
    auto start = chess::Position::from_fen(r.start_fen);
    if (!start) return fail("game record 'start': " + start.error());
    chess::Position pos = std::move(start).value();

    const json& moves = j.at("moves");
    if (!moves.is_array()) return fail("game record 'moves' is not an array");
    const json& targets = j.at("targets");
    if (!targets.is_array()) return fail("game record 'targets' is not an array");
    // Targets are checked against the position before their move, during the replay.
    std::size_t next_target = 0;
    int last_ply = -1;
    for (std::size_t ply = 0; ply < moves.size(); ++ply) {
      if (auto problem = move_after_end_problem(pos))
        return fail("game record move at ply " + std::to_string(ply) + ": " + *problem);
      auto m = chess::parse_uci(pos, moves[ply].get<std::string>());
      if (!m) return fail("game record move at ply " + std::to_string(ply) + ": " + m.error());
      while (next_target < targets.size() &&
             targets[next_target].at("ply").get<int>() == int(ply)) {
        const json& tj = targets[next_target++];
        MoveTarget t;
        t.ply = int(ply);
        const std::string where = "game record target at ply " + std::to_string(t.ply);
        if (t.ply <= last_ply) return fail(where + ": plies must increase");
        last_ply = t.ply;
        t.root_value = tj.at("value").get<float>();
        t.root_draw = tj.at("draw").get<float>();
        t.visits = tj.at("visits").get<std::uint32_t>();
        if (!(std::fabs(t.root_value) <= 1.0f) || !(t.root_draw >= 0 && t.root_draw <= 1))
          return fail(where + ": value must be in [-1, 1] and draw in [0, 1]");
        double sum = 0;
        for (const json& e : tj.at("policy")) {
          if (!e.is_array() || e.size() != 2) return fail(where + ": policy entries are [move, p]");
          auto pm = chess::parse_uci(pos, e[0].get<std::string>());
          if (!pm) return fail(where + ": policy move: " + pm.error());
          const float p = e[1].get<float>();
          if (!probability_ok(p))
            return fail(where + ": policy probability out of [0, 1]");
          sum += p;
          t.policy.push_back({*pm, p});
        }
        if (t.policy.empty()) return fail(where + ": empty policy");
        if (auto problem = policy_sum_problem(sum)) return fail(where + ": " + *problem);
        r.targets.push_back(std::move(t));
      }
      r.moves.push_back(*m);
      pos.make_move(*m);
    }
    if (next_target < targets.size())
      return fail("game record target at ply " +
                  std::to_string(targets[next_target].at("ply").get<int>()) +
                  ": plies must increase and name a move of the game");

    bool ok = false;
    r.result.outcome = outcome_from_pgn(j.at("result").get<std::string>(), &ok);
    if (!ok) return fail("game record 'result' must be 1-0, 0-1, 1/2-1/2 or *");
    const std::string reason = j.at("termination").get<std::string>();
    ok = false;
    for (Termination t : kTerminations)
      if (reason == chess::termination_name(t)) {
        r.result.reason = t;
        ok = true;
      }
    if (!ok) return fail("game record 'termination' is unknown: '" + reason + "'");
    // The one result rule replay's validation applies too (result_rule.h).
    if (auto problem = result_problem(pos, r.result, r.result.to_string()))
      return fail("game record result " + r.result.to_string() +
                  " contradicts the final position: " + *problem);

    const json& resign = j.at("resign");
    r.resign_disabled = resign.at("disabled").get<bool>();
    r.would_resign_ply = resign.at("would_ply").get<int>();
    const std::string side = resign.at("would_side").get<std::string>();
    if (side != "w" && side != "b") return fail("game record resign 'would_side' must be w or b");
    r.would_resign_side = side == "w" ? chess::kWhite : chess::kBlack;
  } catch (const json::exception& e) {
    return fail(std::string("game record field missing or of the wrong type: ") + e.what());
  }
  return r;
}

chess::PgnGame to_pgn(const GameRecord& record, const std::string& white,
                      const std::string& black) {
  chess::PgnGame game;
  game.event = "chessrl self-play";
  game.round = std::to_string(record.index + 1);
  game.white = white;
  game.black = black;
  const chess::Position standard;
  if (record.start_fen != standard.fen()) game.start_fen = record.start_fen;
  game.moves = record.moves;
  game.result = record.result.pgn_result();
  game.tags.emplace_back("Termination", chess::termination_name(record.result.reason));
  game.tags.emplace_back("GameId", record.id);
  return game;
}

}  // namespace chessrl::record
