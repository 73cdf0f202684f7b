#include "replay_source.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "chessrl/nn/policy_map.h"
#include "chessrl/record/training_position.h"

namespace chessrl::trainer_service {

Result<train::Example> to_example(const v1::TrainingPosition& p) {
  // Decoding replays the history once (the input planes need its positions)
  // and generates the reached position's moves once; it leaves both, and the
  // policy rule is applied once, by make_example_at.
  chess::Position reached;
  chess::MoveList legal;
  auto decoded = record::decode_position(p, &reached, &legal);
  if (!decoded.ok()) return fail(decoded.error());
  auto example = train::make_example_at(reached, legal, decoded->policy_moves,
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
  if (decoded->next_moves.size() == 2)
    example->reply = static_cast<std::int16_t>(
        nn::policy_index(decoded->next_moves[1], ~reached.side_to_move()));
  if (decoded->plies_left)
    example->plies_left = static_cast<std::int16_t>(std::min(*decoded->plies_left, INT16_MAX));
  return std::move(example).value();
}

Result<std::vector<train::Example>> to_examples(const v1::SampleReply& reply) {
  std::vector<train::Example> out;
  out.reserve(static_cast<std::size_t>(reply.positions_size()));
  for (const auto& position : reply.positions()) {
    auto example = to_example(position);
    if (!example.ok()) return fail(example.error());
    out.push_back(std::move(example).value());
  }
  return out;
}

ReplaySource::ReplaySource(std::shared_ptr<rpc::ReplayClient> client, std::uint32_t max_sample,
                           int inflight)
    : ReplaySource([c = client.get()](std::uint32_t count) { return c->sample(count); },
                   [c = client.get()] { c->cancel(); }, max_sample, inflight) {
  client_ = std::move(client);
}

ReplaySource::ReplaySource(SampleCall sample, CancelCalls cancel, std::uint32_t max_sample,
                           int inflight)
    : sample_(std::move(sample)),
      cancel_calls_(std::move(cancel)),
      max_sample_(std::max<std::uint32_t>(1, max_sample)),
      inflight_(std::clamp(inflight, 1, 64)) {
  if (inflight_ > 1)
    for (int i = 0; i < inflight_; ++i) workers_.emplace_back([this] { work(); });
}

ReplaySource::~ReplaySource() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& worker : workers_) worker.join();
}

Result<std::vector<train::Example>> ReplaySource::fetch(std::int64_t /*step*/, int /*rank*/,
                                                        int /*world*/, int count) {
  if (count <= 0) return std::vector<train::Example>{};
  return inflight_ > 1 ? fetch_pipelined(count) : fetch_one_at_a_time(count);
}

ReplaySource::Chunk ReplaySource::sample_chunk(std::uint32_t ask) {
  Chunk chunk;
  auto reply = sample_(ask);
  if (!reply.ok()) {
    chunk.error = "replay source: " + reply.error();
  } else if (reply->positions_size() == 0) {
    chunk.error = "replay source: Sample(" + std::to_string(ask) +
                  ") returned no positions (window " + std::to_string(reply->window_positions()) +
                  " positions)";
  } else if (auto examples = to_examples(*reply); !examples.ok()) {
    chunk.error = "replay source: " + examples.error();
  } else {
    chunk.examples = std::move(examples).value();
  }
  return chunk;
}

Result<std::vector<train::Example>> ReplaySource::fetch_one_at_a_time(int count) {
  std::vector<train::Example> out;
  out.reserve(static_cast<std::size_t>(count));
  auto remaining = static_cast<std::uint32_t>(count);
  while (remaining > 0) {
    Chunk chunk = sample_chunk(std::min(remaining, max_sample_));
    if (!chunk.error.empty()) {
      error_returned_ = true;
      return fail(chunk.error);
    }
    remaining -= std::min(remaining, static_cast<std::uint32_t>(chunk.examples.size()));
    std::move(chunk.examples.begin(), chunk.examples.end(), std::back_inserter(out));
  }
  out.resize(static_cast<std::size_t>(count));
  return out;
}

void ReplaySource::work() {
  for (;;) {
    std::uint64_t call = 0;
    std::uint32_t ask = 0;
    {
      std::unique_lock lock(mu_);
      // At most inflight_ calls' worth ahead of fetch(): in flight plus ready.
      cv_.wait(lock, [&] {
        return stopping_ || (started_ && !failed_ && calls_out_ + int(ready_.size()) < inflight_);
      });
      if (stopping_) return;
      call = next_call_++;
      ask = chunk_;
      ++calls_out_;
    }
    Chunk chunk = sample_chunk(ask);
    {
      std::lock_guard lock(mu_);
      --calls_out_;
      if (!chunk.error.empty()) failed_ = true;
      ready_.emplace(call, std::move(chunk));
    }
    cv_.notify_all();
  }
}

Result<std::vector<train::Example>> ReplaySource::fetch_pipelined(int count) {
  const auto wanted = static_cast<std::size_t>(count);
  std::unique_lock lock(mu_);
  if (stopping_) return fail("replay source: cancelled");
  chunk_ = std::min(static_cast<std::uint32_t>(count), max_sample_);
  started_ = true;
  if (error_returned_) {
    // The caller retries after the failure it was given: calls start again.
    error_returned_ = failed_ = false;
  }
  cv_.notify_all();
  while (leftover_.size() < wanted) {
    cv_.wait(lock, [&] { return stopping_ || ready_.count(next_take_) > 0; });
    if (stopping_) return fail("replay source: cancelled");
    auto at = ready_.find(next_take_);
    Chunk chunk = std::move(at->second);
    ready_.erase(at);
    ++next_take_;
    cv_.notify_all();  // room for another call
    // What was taken stays in leftover_: a failed fetch loses no position.
    if (!chunk.error.empty()) {
      error_returned_ = true;
      return fail(chunk.error);
    }
    std::move(chunk.examples.begin(), chunk.examples.end(), std::back_inserter(leftover_));
  }
  std::vector<train::Example> out;
  out.reserve(wanted);
  for (std::size_t i = 0; i < wanted; ++i) {
    out.push_back(std::move(leftover_.front()));
    leftover_.pop_front();
  }
  return out;
}

Result<train::DataStatus> ReplaySource::status() {
  if (!client_) return fail("replay source: no replay client to ask for Stats");
  auto stats = client_->stats();
  if (!stats.ok()) return fail("replay source: " + stats.error());
  train::DataStatus status;
  status.window_positions = stats->window_positions();
  status.positions_stored_total = stats->positions_stored_total();
  status.fixed = false;
  return status;
}

void ReplaySource::cancel() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (cancel_calls_) cancel_calls_();
}

}  // namespace chessrl::trainer_service
