// Raw forward-pass throughput, shared by the benchmarks that compare against
// it (bench nn, bench selfplay). Defined in bench/command.cpp.
#pragma once

#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/nn/backend.h"

namespace chessrl::tool {

// Positions along seeded random games, each with its history.
std::vector<chess::Position> bench_positions(int count);

struct RawResult {
  double evals_per_second;
  double ms_per_batch;
  // CPU time of the calling thread per pass: with one LibTorch thread per
  // stream, the pass's cost whatever else shares the cores (wall time is not).
  double cpu_ms_per_batch = 0;
};

// `streams` threads each calling backend.forward on `inputs` for `seconds`;
// the summed rate.
RawResult measure_raw(nn::InferenceBackend& backend, const std::vector<nn::InputPlanes>& inputs,
                      double seconds, int streams);

// One stream on the calling thread.
RawResult measure_raw_here(nn::InferenceBackend& backend,
                           const std::vector<nn::InputPlanes>& inputs, double seconds);

}  // namespace chessrl::tool
