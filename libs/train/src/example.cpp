#include "chessrl/train/example.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/record/policy_rule.h"

namespace chessrl::train {
namespace {

// `given`: every legal move of `pos` in generation order; null: generated
// here. One list serves the policy's legality and the legal targets.
Result<Example> finish_example(chess::Position& pos, const chess::MoveList* given,
                               std::span<const chess::Move> policy_moves,
                               std::span<const float> policy_probs, int result) {
  if (policy_moves.size() != policy_probs.size())
    return fail("policy has " + std::to_string(policy_moves.size()) + " moves but " +
                std::to_string(policy_probs.size()) + " probabilities");
  if (policy_moves.empty()) return fail("policy is empty");
  if (result < -1 || result > 1)
    return fail("result " + std::to_string(result) + " is not -1, 0 or 1");
  Example e;
  e.planes = nn::encode(pos);
  e.result = static_cast<std::int8_t>(result);
  chess::MoveList generated;
  if (!given) chess::generate_legal(pos, generated);
  const chess::MoveList& legal = given ? *given : generated;
  double sum = 0;
  e.policy.reserve(policy_moves.size());
  for (std::size_t i = 0; i < policy_moves.size(); ++i) {
    const float p = policy_probs[i];
    if (!record::probability_ok(p))
      return fail("policy probability " + std::to_string(p) + " of " +
                  chess::to_uci(policy_moves[i]) + " is outside [0, 1]");
    if (!legal.contains(policy_moves[i]))
      return fail("policy move " + chess::to_uci(policy_moves[i]) + " is not legal in " +
                  pos.fen());
    const int index = nn::policy_index(policy_moves[i], pos.side_to_move());
    for (const auto& [seen, q] : e.policy)
      if (seen == index)
        return fail("policy move " + chess::to_uci(policy_moves[i]) + " appears twice");
    e.policy.emplace_back(static_cast<std::uint16_t>(index), p);
    sum += p;
  }
  if (auto problem = record::policy_sum_problem(sum)) return fail(*problem);
  for (auto& entry : e.policy) entry.second = static_cast<float>(entry.second / sum);
  e.legal.reserve(std::size_t(legal.size()));
  for (const chess::Move m : legal)
    e.legal.push_back(static_cast<std::uint16_t>(nn::policy_index(m, pos.side_to_move())));
  return e;
}

}  // namespace

Result<Example> make_example(std::string_view fen, std::span<const chess::Move> history,
                             std::span<const chess::Move> policy_moves,
                             std::span<const float> policy_probs, int result) {
  auto pos = chess::Position::from_fen(fen);
  if (!pos) return fail("bad FEN '" + std::string(fen) + "': " + pos.error());
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (!chess::is_legal(*pos, history[i]))
      return fail("history move " + std::to_string(i + 1) + " (" + chess::to_uci(history[i]) +
                  ") is not legal in " + pos->fen());
    pos->make_move(history[i]);
  }
  return finish_example(*pos, nullptr, policy_moves, policy_probs, result);
}

Result<Example> make_example_at(chess::Position& reached, const chess::MoveList& legal,
                                std::span<const chess::Move> policy_moves,
                                std::span<const float> policy_probs, int result) {
  return finish_example(reached, &legal, policy_moves, policy_probs, result);
}

Result<std::vector<Example>> examples_from_record(const record::GameRecord& record) {
  auto pos = chess::Position::from_fen(record.start_fen);
  if (!pos) return fail("game " + record.id + ": bad start FEN: " + pos.error());
  int white_result = 0;
  if (record.result.outcome == chess::Outcome::kWhiteWins) white_result = 1;
  if (record.result.outcome == chess::Outcome::kBlackWins) white_result = -1;
  // White's material lead after each ply (index 0: the start), for the
  // material head's targets.
  std::vector<int> balance{chess::material_balance(*pos)};
  {
    chess::Position walk = *pos;
    for (const chess::Move m : record.moves) {
      if (!chess::is_legal(walk, m)) break;  // reported below, at its ply
      walk.make_move(m);
      balance.push_back(chess::material_balance(walk));
    }
  }
  std::vector<Example> out;
  out.reserve(record.targets.size());
  std::size_t next_target = 0;
  for (std::size_t ply = 0; ply <= record.moves.size(); ++ply) {
    while (next_target < record.targets.size() &&
           std::size_t(record.targets[next_target].ply) == ply) {
      const record::MoveTarget& t = record.targets[next_target++];
      std::vector<chess::Move> moves;
      std::vector<float> probs;
      for (const auto& entry : t.policy) {
        moves.push_back(entry.move);
        probs.push_back(entry.probability);
      }
      const int result = pos->side_to_move() == chess::kWhite ? white_result : -white_result;
      auto e = finish_example(*pos, nullptr, moves, probs, result);
      if (!e) return fail("game " + record.id + " ply " + std::to_string(ply) + ": " + e.error());
      e->root_value = t.root_value;
      e->root_draw = t.root_draw;
      const std::size_t later =
          std::min(ply + std::size_t(chess::kMaterialHorizonPlies), balance.size() - 1);
      const int lead = balance[later] * (pos->side_to_move() == chess::kWhite ? 1 : -1);
      e->material = static_cast<std::int16_t>(lead);
      e->has_material = true;
      // balance.size() - 1 moves were legal: a reply past them stays unknown
      // (the record is refused at that move below anyway).
      if (ply + 1 < balance.size() - 1)
        e->reply = static_cast<std::int16_t>(
            nn::policy_index(record.moves[ply + 1], ~pos->side_to_move()));
      e->plies_left = static_cast<std::int16_t>(
          std::min<std::size_t>(record.moves.size() - ply, INT16_MAX));
      out.push_back(std::move(*e));
    }
    if (ply == record.moves.size()) break;
    if (!chess::is_legal(*pos, record.moves[ply]))
      return fail("game " + record.id + " ply " + std::to_string(ply) + ": " +
                  chess::to_uci(record.moves[ply]) + " is not legal");
    pos->make_move(record.moves[ply]);
  }
  if (next_target != record.targets.size())
    return fail("game " + record.id + ": a target's ply is out of order or past the last move");
  return out;
}

namespace {

Result<void> load_file(const std::string& path, std::vector<Example>& out) {
  std::ifstream in(path);
  if (!in) return fail("cannot read " + path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto record = record::parse_record(line);
    if (!record) return fail(path + ":" + std::to_string(number) + ": " + record.error());
    auto examples = examples_from_record(*record);
    if (!examples) return fail(path + ":" + std::to_string(number) + ": " + examples.error());
    for (auto& e : *examples) out.push_back(std::move(e));
  }
  if (in.bad()) return fail("error reading " + path);
  return {};
}

}  // namespace

Result<std::vector<Example>> load_examples(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file() && entry.path().extension() == ".jsonl")
        files.push_back(entry.path().string());
    if (ec) return fail("cannot list " + path + ": " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) return fail("no *.jsonl files in " + path);
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  } else {
    return fail("no such file or directory: " + path);
  }
  std::vector<Example> out;
  for (const auto& f : files)
    if (auto r = load_file(f, out); !r) return fail(r.error());
  if (out.empty()) return fail("no training positions in " + path);
  return out;
}

}  // namespace chessrl::train
