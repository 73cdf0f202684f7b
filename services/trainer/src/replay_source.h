// ReplaySource: the trainer's examples from the replay service. fetch() draws
// uniformly random positions with Sample (ignoring step, rank and world: every
// rank samples on its own) and turns each TrainingPosition into an Example;
// status() reads the window's size from Stats. Both may run at the same time
// from two threads (the gRPC client is thread-safe; the source holds no other
// mutable state).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/train/example.h"
#include "chessrl/train/source.h"
#include "chessrl/v1/game.pb.h"

namespace chessrl::trainer_service {

// One sampled position as an Example: replays history_moves from fen, decodes
// the policy moves in the reached position. Errors name the game id and ply
// and what is wrong (a bad FEN, an undecodable or illegal move, a bad target).
Result<train::Example> to_example(const v1::TrainingPosition& position);

class ReplaySource : public train::ExampleSource {
 public:
  // `max_sample`: the most positions one Sample call asks for (the service
  // refuses more than its own --max-sample); larger fetches are split.
  ReplaySource(std::shared_ptr<rpc::ReplayClient> client, std::uint32_t max_sample = 16384);

  Result<std::vector<train::Example>> fetch(std::int64_t step, int rank, int world,
                                            int count) override;
  Result<train::DataStatus> status() override;
  // Cancels the Sample or Stats call in flight (the replay service may be
  // gone: a stop does not wait out --rpc-deadline on it).
  void cancel() override;

 private:
  std::shared_ptr<rpc::ReplayClient> client_;
  std::uint32_t max_sample_;
};

}  // namespace chessrl::trainer_service
