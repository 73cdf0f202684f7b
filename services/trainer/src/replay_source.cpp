#include "replay_source.h"

#include <cmath>

#include <algorithm>
#include <string>
#include <utility>

#include "chessrl/chess/position.h"
#include "chessrl/replay/move_codec.h"

namespace chessrl::trainer {

namespace {

std::string where(const v1::TrainingPosition& p) {
  return "sampled position of game '" + p.game_id() + "' ply " + std::to_string(p.ply());
}

}  // namespace

Result<train::Example> to_example(const v1::TrainingPosition& p) {
  auto start = chess::Position::from_fen(p.fen());
  if (!start.ok()) return fail(where(p) + ": bad FEN '" + p.fen() + "': " + start.error());
  chess::Position pos = std::move(start).value();

  std::vector<chess::Move> history;
  history.reserve(static_cast<std::size_t>(p.history_moves_size()));
  for (int i = 0; i < p.history_moves_size(); ++i) {
    const std::uint32_t code = p.history_moves(i);
    const auto move = replay::decode_move(pos, code);
    if (!move) {
      return fail(where(p) + ": history move " + std::to_string(i) + " (code " +
                  std::to_string(code) + ") is not legal in " + pos.fen());
    }
    history.push_back(*move);
    pos.make_move(*move);
  }

  if (p.policy_moves_size() != p.policy_probs_size()) {
    return fail(where(p) + ": " + std::to_string(p.policy_moves_size()) + " policy moves but " +
                std::to_string(p.policy_probs_size()) + " probabilities");
  }
  std::vector<chess::Move> policy_moves;
  policy_moves.reserve(static_cast<std::size_t>(p.policy_moves_size()));
  for (int i = 0; i < p.policy_moves_size(); ++i) {
    const std::uint32_t code = p.policy_moves(i);
    const auto move = replay::decode_move(pos, code);
    if (!move) {
      return fail(where(p) + ": policy move " + std::to_string(i) + " (code " +
                  std::to_string(code) + ") is not legal in " + pos.fen());
    }
    policy_moves.push_back(*move);
  }
  const std::vector<float> probs(p.policy_probs().begin(), p.policy_probs().end());
  if (p.result() < -1 || p.result() > 1) {
    return fail(where(p) + ": result " + std::to_string(p.result()) + " is not -1, 0 or 1");
  }

  if (!std::isfinite(p.root_value()) || p.root_value() < -1 || p.root_value() > 1 ||
      !std::isfinite(p.root_draw()) || p.root_draw() < 0 || p.root_draw() > 1) {
    return fail(where(p) + ": root value " + std::to_string(p.root_value()) + " / draw " +
                std::to_string(p.root_draw()) + " is outside [-1, 1] / [0, 1]");
  }
  auto example = train::make_example(p.fen(), history, policy_moves, probs, p.result());
  if (!example.ok()) return fail(where(p) + ": " + example.error());
  example->root_value = p.root_value();
  example->root_draw = p.root_draw();
  if (p.has_material_later()) {
    // More than all of one side's material (39 pawns' worth) cannot be.
    if (p.material_later() < -39 || p.material_later() > 39)
      return fail(where(p) + ": material_later " + std::to_string(p.material_later()) +
                  " is outside [-39, 39]");
    example->material = static_cast<std::int16_t>(p.material_later());
    example->has_material = true;
  }
  return std::move(example).value();
}

ReplaySource::ReplaySource(std::shared_ptr<rpc::ReplayClient> client, std::uint32_t max_sample)
    : client_(std::move(client)), max_sample_(std::max<std::uint32_t>(1, max_sample)) {}

Result<std::vector<train::Example>> ReplaySource::fetch(std::int64_t /*step*/, int /*rank*/,
                                                        int /*world*/, int count) {
  std::vector<train::Example> out;
  if (count <= 0) return out;
  out.reserve(static_cast<std::size_t>(count));
  auto remaining = static_cast<std::uint32_t>(count);
  while (remaining > 0) {
    const std::uint32_t ask = std::min(remaining, max_sample_);
    auto reply = client_->sample(ask);
    if (!reply.ok()) return fail("replay source: " + reply.error());
    if (reply->positions_size() == 0) {
      return fail("replay source: Sample(" + std::to_string(ask) +
                  ") returned no positions (window " +
                  std::to_string(reply->window_positions()) + " positions)");
    }
    for (const auto& position : reply->positions()) {
      auto example = to_example(position);
      if (!example.ok()) return fail("replay source: " + example.error());
      out.push_back(std::move(example).value());
    }
    remaining -= std::min(remaining, static_cast<std::uint32_t>(reply->positions_size()));
  }
  out.resize(static_cast<std::size_t>(count));
  return out;
}

Result<train::DataStatus> ReplaySource::status() {
  auto stats = client_->stats();
  if (!stats.ok()) return fail("replay source: " + stats.error());
  train::DataStatus status;
  status.window_positions = stats->window_positions();
  status.positions_stored_total = stats->positions_stored_total();
  status.fixed = false;
  return status;
}

}  // namespace chessrl::trainer
