#include "chessrl/train/source.h"

#include <cassert>

#include "chessrl/core/splitmix64.h"

namespace chessrl::train {

DatasetSource::DatasetSource(std::vector<Example> examples, std::uint64_t seed)
    : examples_(std::move(examples)), seed_(seed) {
  assert(!examples_.empty());
}

Result<std::vector<Example>> DatasetSource::fetch(std::int64_t step, int rank, int world,
                                                  int count) {
  if (rank < 0 || world < 1 || rank >= world || count < 1 || step < 0)
    return fail("DatasetSource::fetch: bad arguments (step " + std::to_string(step) + ", rank " +
                std::to_string(rank) + " of " + std::to_string(world) + ", count " +
                std::to_string(count) + ")");
  // SplitMix64: the same sequence everywhere.
  SplitMix64 rng(seed_ ^ (std::uint64_t(step) * 0xd1342543de82ef95ULL));
  rng.next();
  // Skip the earlier ranks' slices, so rank r of W sees what one rank with a
  // W times larger batch sees at positions [r * count, (r + 1) * count).
  for (std::int64_t i = 0; i < std::int64_t(rank) * count; ++i) rng.next();
  std::vector<Example> out;
  out.reserve(std::size_t(count));
  const std::uint64_t n = examples_.size();
  for (int i = 0; i < count; ++i) {
    // The modulo's bias is below n / 2^64: nothing for any data set.
    const std::uint64_t index = rng.next() % n;
    out.push_back(examples_[index]);
  }
  return out;
}

Result<DataStatus> DatasetSource::status() {
  return DataStatus{examples_.size(), examples_.size(), true};
}

}  // namespace chessrl::train
