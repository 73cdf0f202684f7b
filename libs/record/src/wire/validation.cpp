#include "chessrl/record/validation.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cassert>
#include <cmath>
#include <optional>
#include <utility>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/record/policy_rule.h"
#include "chessrl/record/result_rule.h"

namespace chessrl::record {

std::string_view reason_label(RejectReason reason) {
  switch (reason) {
    case RejectReason::kMalformed:
      return "malformed";
    case RejectReason::kBadId:
      return "bad_id";
    case RejectReason::kOversized:
      return "oversized";
    case RejectReason::kBadFen:
      return "bad_fen";
    case RejectReason::kIllegalMove:
      return "illegal_move";
    case RejectReason::kBadPolicy:
      return "bad_policy";
    case RejectReason::kBadResult:
      return "bad_result";
  }
  return "malformed";
}

namespace {

using chess::Termination;

// History kept before each training position: the input planes' seven earlier
// positions, plus the plies back to the last irreversible move before them.
constexpr int kHistoryPlies = 7;

Rejection reject(RejectReason reason, std::string detail) {
  return Rejection{reason, std::move(detail)};
}

std::string at_ply(std::size_t ply) { return "ply " + std::to_string(ply) + ": "; }

bool is_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

// A wire move as UCI text when its fields are in range ("e7e8q"), else "code N".
std::string code_text(std::uint32_t code) {
  constexpr std::uint32_t kPromotionScale = 64 * 64;
  if (code >= 5 * kPromotionScale) return "code " + std::to_string(code);
  std::string text = chess::square_name(static_cast<chess::Square>(code % 64)) +
                     chess::square_name(static_cast<chess::Square>((code / 64) % 64));
  const std::uint32_t promotion = code / kPromotionScale;
  if (promotion != 0) text += "nbrq"[promotion - 1];
  return text;
}

// The legal moves of one position with their wire codes, computed once per ply.
struct LegalMoves {
  chess::MoveList moves;
  std::array<std::uint32_t, chess::MoveList::kCapacity> codes{};

  void generate(const chess::Position& pos) {
    moves.clear();
    chess::generate_legal(pos, moves);
    for (int i = 0; i < moves.size(); ++i)
      codes[static_cast<std::size_t>(i)] = encode_move(moves[i]);
  }
  // Index of the legal move that `code` names, or -1.
  int find(std::uint32_t code) const {
    for (int i = 0; i < moves.size(); ++i)
      if (codes[static_cast<std::size_t>(i)] == code) return i;
    return -1;
  }
};

std::optional<Rejection> check_header(const v1::Game& game, const ValidationLimits& limits) {
  const std::string& id = game.id();
  if (id.empty()) return reject(RejectReason::kBadId, "id: empty");
  if (id.size() > limits.max_id_length)
    return reject(RejectReason::kBadId, "id: " + std::to_string(id.size()) +
                                            " characters, more than " +
                                            std::to_string(limits.max_id_length));
  for (char c : id)
    if (!is_id_char(c))
      return reject(RejectReason::kBadId, "id: character outside [A-Za-z0-9._:-]");
  const std::size_t bytes = game.ByteSizeLong();
  if (bytes > limits.max_game_bytes)
    return reject(RejectReason::kOversized, "game: " + std::to_string(bytes) +
                                                " bytes, more than " +
                                                std::to_string(limits.max_game_bytes));
  if (static_cast<std::size_t>(game.moves_size()) > limits.max_plies)
    return reject(RejectReason::kOversized, "moves: " + std::to_string(game.moves_size()) +
                                                " plies, more than " +
                                                std::to_string(limits.max_plies));
  if (game.producer().size() > limits.max_producer_length)
    return reject(
        RejectReason::kMalformed,
        "producer: longer than " + std::to_string(limits.max_producer_length) + " characters");
  return std::nullopt;
}

std::optional<Rejection> check_result_fields(const v1::Game& game) {
  const int outcome = game.outcome();
  if (outcome == v1::OUTCOME_UNSPECIFIED || !v1::Outcome_IsValid(outcome))
    return reject(RejectReason::kMalformed,
                  "outcome: unspecified or unknown (" + std::to_string(outcome) + ")");
  const int termination = game.termination();
  if (termination == v1::TERMINATION_UNSPECIFIED || !v1::Termination_IsValid(termination))
    return reject(RejectReason::kMalformed,
                  "termination: unspecified or unknown (" + std::to_string(termination) + ")");
  return std::nullopt;
}

std::optional<Rejection> check_target_fields(const v1::Game& game) {
  std::int64_t last_ply = -1;
  for (int i = 0; i < game.targets_size(); ++i) {
    const v1::MoveTarget& t = game.targets(i);
    const std::string where =
        "targets[" + std::to_string(i) + "] (ply " + std::to_string(t.ply()) + "): ";
    if (t.ply() >= static_cast<std::uint32_t>(game.moves_size()))
      return reject(RejectReason::kMalformed,
                    where + "ply out of range (" + std::to_string(game.moves_size()) + " moves)");
    if (static_cast<std::int64_t>(t.ply()) <= last_ply)
      return reject(RejectReason::kMalformed, where + "plies must strictly increase");
    last_ply = t.ply();
    if (t.policy_moves_size() != t.policy_probs_size())
      return reject(RejectReason::kMalformed,
                    where + "policy_moves and policy_probs differ in length");
    if (t.policy_moves_size() == 0) return reject(RejectReason::kMalformed, where + "empty policy");
    if (!std::isfinite(t.root_value()) || std::fabs(t.root_value()) > 1.0f)
      return reject(RejectReason::kMalformed, where + "root_value outside [-1, 1]");
    if (!std::isfinite(t.root_draw()) || t.root_draw() < 0.0f || t.root_draw() > 1.0f)
      return reject(RejectReason::kMalformed, where + "root_draw outside [0, 1]");
  }
  return std::nullopt;
}

// The policy of a target at the current position, whose legal moves are `legal`.
std::optional<Rejection> check_policy(const v1::MoveTarget& t, const chess::Position& pos,
                                      const LegalMoves& legal) {
  const std::string where = at_ply(t.ply());
  std::bitset<chess::MoveList::kCapacity> seen;
  double sum = 0;
  for (int j = 0; j < t.policy_moves_size(); ++j) {
    const std::uint32_t code = t.policy_moves(j);
    const int index = legal.find(code);
    if (index < 0)
      return reject(RejectReason::kBadPolicy,
                    where + "policy move " + code_text(code) + " is not legal in " + pos.fen());
    if (seen.test(static_cast<std::size_t>(index)))
      return reject(RejectReason::kBadPolicy,
                    where + "policy move " + code_text(code) + " appears twice");
    seen.set(static_cast<std::size_t>(index));
    const float p = t.policy_probs(j);
    if (!probability_ok(p))
      return reject(RejectReason::kBadPolicy,
                    where + "policy probability of " + code_text(code) + " outside [0, 1]");
    sum += p;
  }
  if (auto problem = policy_sum_problem(sum))
    return reject(RejectReason::kBadPolicy, where + *problem);
  return std::nullopt;
}

// The declared result against the final position: the one rule of
// result_rule.h, which the trainer's --data reading applies too.
std::optional<Rejection> check_final_result(const v1::Game& game, const chess::Position& pos) {
  // check_result_fields let through only outcomes and terminations the chess
  // library names.
  chess::GameResult declared;
  declared.outcome = game.outcome() == v1::WHITE_WINS   ? chess::Outcome::kWhiteWins
                     : game.outcome() == v1::BLACK_WINS ? chess::Outcome::kBlackWins
                                                        : chess::Outcome::kDraw;
  declared.reason = from_wire(game.termination()).value_or(Termination::kNone);
  const std::string name =
      v1::Outcome_Name(game.outcome()) + " by " + v1::Termination_Name(game.termination());
  if (auto problem = result_problem(pos, declared, name))
    return reject(RejectReason::kBadResult,
                  at_ply(static_cast<std::size_t>(game.moves_size())) + *problem);
  return std::nullopt;
}

// +1 when the side to move wins, -1 when it loses, 0 for a draw.
std::int32_t result_for(v1::Outcome outcome, chess::Color side_to_move) {
  if (outcome == v1::DRAW) return 0;
  const bool white_wins = outcome == v1::WHITE_WINS;
  return (white_wins == (side_to_move == chess::kWhite)) ? 1 : -1;
}

}  // namespace

Validation validate_game(const v1::Game& game, const ValidationLimits& limits) {
  if (auto r = check_header(game, limits)) return *std::move(r);
  chess::Position pos;
  if (!game.start_fen().empty()) {
    auto parsed = chess::Position::from_fen(game.start_fen());
    if (!parsed) return reject(RejectReason::kBadFen, "start_fen: " + parsed.error());
    pos = std::move(parsed).value();
  }
  if (auto r = check_result_fields(game)) return *std::move(r);
  if (auto r = check_target_fields(game)) return *std::move(r);

  const int plies = game.moves_size();
  // Per ply: the halfmove clock, and the FEN where a training position may
  // start (ply 0 and every ply with a zero halfmove clock: see below).
  std::vector<int> halfmove(static_cast<std::size_t>(plies) + 1);
  std::vector<std::string> fens(static_cast<std::size_t>(plies) + 1);
  // White's material lead before each ply and at the end: the material targets.
  std::vector<int> balance(static_cast<std::size_t>(plies) + 1);
  const chess::Color first_side = pos.side_to_move();
  int next_target = 0;
  LegalMoves legal;
  for (int ply = 0; ply < plies; ++ply) {
    const auto uply = static_cast<std::size_t>(ply);
    if (auto problem = move_after_end_problem(pos))
      return reject(RejectReason::kBadResult,
                    at_ply(uply) + *problem + " at ply " + std::to_string(ply));
    legal.generate(pos);
    const std::uint32_t code = game.moves(ply);
    const int index = legal.find(code);
    if (index < 0)
      return reject(RejectReason::kIllegalMove,
                    at_ply(uply) + "move " + code_text(code) + " is not legal in " + pos.fen());
    for (; next_target < game.targets_size() &&
           game.targets(next_target).ply() == static_cast<std::uint32_t>(ply);
         ++next_target)
      if (auto r = check_policy(game.targets(next_target), pos, legal)) return *std::move(r);
    halfmove[uply] = pos.halfmove_clock();
    balance[uply] = chess::material_balance(pos);
    if (ply == 0 || pos.halfmove_clock() == 0) fens[uply] = pos.fen();
    pos.make_move(legal.moves[index]);
  }
  if (auto r = check_final_result(game, pos)) return *std::move(r);
  balance[static_cast<std::size_t>(plies)] = chess::material_balance(pos);

  StoredGame stored;
  stored.id = game.id();
  stored.positions.reserve(static_cast<std::size_t>(game.targets_size()));
  v1::TrainingPosition tp;
  for (const v1::MoveTarget& t : game.targets()) {
    const int ply = static_cast<int>(t.ply());
    // k = min(ply, 7 + halfmove clock 7 plies earlier). The start ply is then
    // 0 or a ply right after a capture or pawn move (clock 0), whose FEN the
    // replay kept.
    int k = ply;
    if (ply >= kHistoryPlies)
      k = std::min(ply, kHistoryPlies + halfmove[static_cast<std::size_t>(ply - kHistoryPlies)]);
    const auto start = static_cast<std::size_t>(ply - k);
    assert(!fens[start].empty());
    tp.Clear();
    tp.set_fen(fens[start]);
    tp.mutable_history_moves()->Add(game.moves().begin() + (ply - k), game.moves().begin() + ply);
    *tp.mutable_policy_moves() = t.policy_moves();
    *tp.mutable_policy_probs() = t.policy_probs();
    const chess::Color side = (ply % 2 == 0) ? first_side : ~first_side;
    tp.set_result(result_for(game.outcome(), side));
    tp.set_root_value(t.root_value());
    tp.set_root_draw(t.root_draw());
    tp.set_model_version(game.model_version());
    tp.set_game_id(game.id());
    tp.set_ply(t.ply());
    const int later = std::min(ply + chess::kMaterialHorizonPlies, plies);
    tp.set_material_later(balance[static_cast<std::size_t>(later)] *
                          (side == chess::kWhite ? 1 : -1));
    tp.mutable_next_moves()->Add(game.moves().begin() + ply,
                                 game.moves().begin() + std::min(ply + 2, plies));
    tp.set_plies_left(static_cast<std::uint32_t>(plies - ply));
    stored.positions.push_back(tp.SerializeAsString());
  }
  return stored;
}

}  // namespace chessrl::record
