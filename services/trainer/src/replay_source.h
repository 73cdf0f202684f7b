// ReplaySource: the trainer's examples from the replay service. fetch() draws
// uniformly random positions with Sample (ignoring step, rank and world: every
// rank samples on its own) and turns each TrainingPosition into an Example;
// status() reads the window's size from Stats. Both may run at the same time
// from two threads (the gRPC client is thread-safe).
//
// With `inflight` 1, fetch() makes its Sample calls one after another and
// decodes on the calling thread. With `inflight` k > 1, k worker threads each
// make a Sample call of min(the last fetch's count, max_sample) positions and
// decode its reply, so k calls are in flight and decoding overlaps them; at
// most k calls' worth of positions are fetched ahead of fetch(), in flight or
// decoded. fetch() hands the positions out in the order the calls were made,
// each exactly once (a reply's positions left over after one fetch begin the
// next). A failed call (or an undecodable reply) is returned by the fetch that
// reaches it, and no new call starts from the failure until the fetch after
// that one: the caller's backoff paces the retries, as with one call.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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

// Every position of a Sample reply as Examples, in order; the first one that
// does not decode fails the whole reply (its error names it).
Result<std::vector<train::Example>> to_examples(const v1::SampleReply& reply);

// The trainer's default --sample-inflight (docs/benchmarks.md, "The trainer's data source").
inline constexpr int kDefaultSampleInflight = 4;

class ReplaySource : public train::ExampleSource {
 public:
  // A Sample call of `count` positions, and how to end the calls in flight
  // for good (ReplayClient::sample and ReplayClient::cancel).
  using SampleCall = std::function<rpc::RpcResult<v1::SampleReply>(std::uint32_t count)>;
  using CancelCalls = std::function<void()>;

  // `max_sample`: the most positions one Sample call asks for (the service
  // refuses more than its own --max-sample); larger fetches are split.
  // `inflight`: Sample calls kept in flight (1..64; clamped).
  ReplaySource(std::shared_ptr<rpc::ReplayClient> client, std::uint32_t max_sample = 16384,
               int inflight = 1);
  ReplaySource(SampleCall sample, CancelCalls cancel, std::uint32_t max_sample, int inflight);
  // Stops the workers and waits for their calls in flight to return (call
  // cancel() first not to wait out a deadline).
  ~ReplaySource() override;
  ReplaySource(const ReplaySource&) = delete;
  ReplaySource& operator=(const ReplaySource&) = delete;

  Result<std::vector<train::Example>> fetch(std::int64_t step, int rank, int world,
                                            int count) override;
  Result<train::DataStatus> status() override;
  // Cancels the Sample or Stats calls in flight (the replay service may be
  // gone: a stop does not wait out --rpc-deadline on it); a fetch waiting for
  // the workers returns at once, failed.
  void cancel() override;

  int inflight() const { return inflight_; }

 private:
  // One Sample call's positions, decoded, or why there are none.
  struct Chunk {
    std::vector<train::Example> examples;
    std::string error;  // empty: ok
  };

  Result<std::vector<train::Example>> fetch_one_at_a_time(int count);
  Result<std::vector<train::Example>> fetch_pipelined(int count);
  Chunk sample_chunk(std::uint32_t ask);
  void work();

  std::shared_ptr<rpc::ReplayClient> client_;  // null with a SampleCall
  SampleCall sample_;
  CancelCalls cancel_calls_;
  std::uint32_t max_sample_;
  int inflight_;

  // The pipeline (inflight_ > 1), under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool started_ = false;  // the first fetch came: workers may call
  bool failed_ = false;   // a call failed: no new one until a fetch after the one that returned it
  bool error_returned_ = false;  // a fetch returned a call's failure
  std::uint32_t chunk_ = 0;
  int calls_out_ = 0;            // calls in flight
  std::uint64_t next_call_ = 0;  // sequence number of the next call made
  std::uint64_t next_take_ = 0;  // sequence number fetch() takes next
  std::map<std::uint64_t, Chunk> ready_;
  std::deque<train::Example> leftover_;  // positions taken, not yet handed out
  std::vector<std::thread> workers_;
};

}  // namespace chessrl::trainer_service
