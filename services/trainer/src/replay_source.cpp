#include "replay_source.h"

#include <algorithm>
#include <string>
#include <utility>

#include "chessrl/record/training_position.h"

namespace chessrl::trainer_service {

Result<train::Example> to_example(const v1::TrainingPosition& p) {
  // Decoding replays the history (the input planes need its positions); the
  // policy rule is applied once, by make_example.
  auto decoded = record::decode_position(p);
  if (!decoded.ok()) return fail(decoded.error());
  auto example = train::make_example(decoded->fen, decoded->history, decoded->policy_moves,
                                     decoded->policy_probs, decoded->result);
  if (!example.ok()) {
    return fail("sampled position of game '" + p.game_id() + "' ply " + std::to_string(p.ply()) +
                ": " + example.error());
  }
  example->root_value = decoded->root_value;
  example->root_draw = decoded->root_draw;
  if (decoded->material_later) {
    example->material = static_cast<std::int16_t>(*decoded->material_later);
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

void ReplaySource::cancel() { client_->cancel(); }

}  // namespace chessrl::trainer_service
