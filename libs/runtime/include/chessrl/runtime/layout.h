// How a process that searches lays out its work: evaluator workers (forward
// passes in flight), search threads, games in flight and the batch each
// forward pass may take. One rule for `chessrl-selfplay`, `chessrl selfplay`
// and `chessrl bench selfplay`, so a benchmark measures what the service runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/nn/batch_evaluator.h"

namespace chessrl::runtime {

struct SearchLayout {
  int workers = 0;           // evaluator workers; 0: the device's streams
  int threads = 0;           // search threads; 0: twice the workers
  int batch = 0;             // leaves per forward pass to aim for; 0: 256 on CUDA, 64 on a CPU
  int concurrent_games = 0;  // games in flight; 0: enough to fill threads x batch
};

// What the zeros of `layout` become on `device` ("cpu", "cuda", "cuda:N") with
// `nn_threads` LibTorch threads per pass (0: the default CPU split), for
// searches that collect `leaves_per_search` leaves per round; never more games
// in flight than `max_games` (0: no limit). Workers follow the backend's own
// rule (nn::make_torch_backend's preferred_streams), so the layout is known
// before a network is built.
SearchLayout fill_layout(SearchLayout layout, const std::string& device, int nn_threads,
                         int leaves_per_search, std::uint64_t max_games = 0);

// The BatchEvaluator options of a filled layout: one search thread's round is
// one forward pass (its games' leaves, at once), capped at 4096.
nn::BatchEvaluatorOptions evaluator_options(const SearchLayout& layout, int leaves_per_search,
                                            std::size_t cache_size);

}  // namespace chessrl::runtime
