// BatchEvaluator: many callers enqueue positions and wait; worker threads run
// the backend on batches of up to max_batch positions, taken as soon as that
// many wait or when the oldest has waited `batch_timeout`. A position cache,
// keyed by the hash of the position with its history (encoding.h), answers
// repeated positions without the network. Thread-safe; nothing spins: callers
// sleep on a futex until their last position is done, workers on a condition
// variable until there is work.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/nn/backend.h"

namespace chessrl::nn {

inline constexpr int kMaxMoves = chess::MoveList::kCapacity;

// One position to evaluate. The caller fills the inputs (prepare() does it);
// evaluate() fills the outputs. Reusable: allocate once, prepare many times.
struct EvalRequest {
  // In.
  InputPlanes input;
  std::uint64_t key = 0;  // cache key (from encode); 0 bypasses the cache
  int num_moves = 0;
  std::array<std::uint16_t, kMaxMoves> policy_index;  // of each legal move
  // Out.
  std::array<float, kMaxMoves> priors;  // softmax over the legal moves, same order
  Wdl wdl;
  bool from_cache = false;
};

// Encodes pos (left unchanged) and sets the policy indices of `moves`, which
// must be pos's legal moves (at most kMaxMoves).
void prepare(EvalRequest& request, chess::Position& pos, std::span<const chess::Move> moves);

struct BatchEvaluatorOptions {
  int max_batch = 256;
  std::chrono::microseconds batch_timeout{2000};
  int workers = 0;             // threads calling the backend; 0: backend.preferred_streams()
  std::size_t cache_size = 0;  // positions kept; 0 disables the cache
  // Called by a worker after every forward pass with the batch size and the
  // pass's seconds (for a batch-size histogram); must be thread-safe and quick.
  std::function<void(int batch, double seconds)> on_batch = nullptr;
  // Called by every evaluate() with the positions asked for and how many the
  // cache answered (for hit-ratio counters); must be thread-safe and quick.
  std::function<void(std::size_t requests, std::size_t cache_hits)> on_lookup = nullptr;
};

// Counters since construction; take two snapshots and subtract for rates.
struct EvaluatorStats {
  std::uint64_t requests = 0;    // positions asked for
  std::uint64_t cache_hits = 0;  // answered from the cache
  std::uint64_t evaluated = 0;   // positions through the network
  std::uint64_t batches = 0;     // forward passes
  double forward_seconds = 0;    // time inside backend.forward
  double latency_seconds = 0;    // summed enqueue-to-result time of evaluated positions
  // Latency in microseconds, four buckets per doubling: bucket i holds
  // [2^(i/4), 2^((i+1)/4)) us, so quantiles are good to about 19%.
  static constexpr int kLatencyBuckets = 128;
  std::array<std::uint64_t, kLatencyBuckets> latency_histogram{};
  double mean_batch() const { return batches ? double(evaluated) / double(batches) : 0; }
  double mean_latency() const { return evaluated ? latency_seconds / double(evaluated) : 0; }
  // An upper bound of the q-quantile of latency in seconds (0 < q < 1), from
  // the histogram.
  double latency_quantile(double q) const;
};

EvaluatorStats operator-(const EvaluatorStats& a, const EvaluatorStats& b);

class PositionCache;

class BatchEvaluator {
 public:
  BatchEvaluator(std::shared_ptr<InferenceBackend> backend, BatchEvaluatorOptions options);
  // Stops the workers after the queue drains. No evaluate() may be running.
  ~BatchEvaluator();
  BatchEvaluator(const BatchEvaluator&) = delete;
  BatchEvaluator& operator=(const BatchEvaluator&) = delete;

  // Evaluates every request and returns when all are done. Callers should pass
  // all the positions they have at once (a search's whole leaf batch).
  // Rethrows the backend's exception if its forward pass failed.
  void evaluate(std::span<EvalRequest> requests);
  void evaluate(EvalRequest& request) { evaluate(std::span<EvalRequest>(&request, 1)); }

  EvaluatorStats stats() const;
  const BatchEvaluatorOptions& options() const { return options_; }
  InferenceBackend& backend() { return *backend_; }

 private:
  // A caller's requests; done when `remaining` reaches 0. Lives on the
  // caller's stack. The caller sleeps on `remaining` as a futex; the worker
  // that brings it to 0 then only wakes that address through the kernel, which
  // is safe even after the caller has returned (a stale wake is spurious for
  // whoever waits there next, and futex waiters always re-check).
  struct Group {
    std::atomic<std::int32_t> remaining{0};
    std::atomic<bool> error_claimed{false};
    std::exception_ptr error;  // written once, by the claimant, before its decrement
  };
  struct Pending {
    EvalRequest* request;
    Group* group;
    std::chrono::steady_clock::time_point enqueued;
  };
  struct Counters;

  void worker_loop();
  void run_batch(std::vector<Pending>& batch, std::vector<InputPlanes>& inputs,
                 std::vector<float>& logits, std::vector<Wdl>& wdl);

  std::shared_ptr<InferenceBackend> backend_;
  BatchEvaluatorOptions options_;
  std::unique_ptr<PositionCache> cache_;
  std::unique_ptr<Counters> counters_;

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace chessrl::nn
