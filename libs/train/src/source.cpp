#include "chessrl/train/source.h"

#include <cassert>

namespace chessrl::train {
namespace {

// SplitMix64: a small, good, seedable generator; the same sequence everywhere.
std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

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
  std::uint64_t state = seed_ ^ (std::uint64_t(step) * 0xd1342543de82ef95ULL);
  splitmix(state);
  // Skip the earlier ranks' slices, so rank r of W sees what one rank with a
  // W times larger batch sees at positions [r * count, (r + 1) * count).
  for (std::int64_t i = 0; i < std::int64_t(rank) * count; ++i) splitmix(state);
  std::vector<Example> out;
  out.reserve(std::size_t(count));
  const std::uint64_t n = examples_.size();
  for (int i = 0; i < count; ++i) {
    // The modulo's bias is below n / 2^64: nothing for any data set.
    const std::uint64_t index = splitmix(state) % n;
    out.push_back(examples_[index]);
  }
  return out;
}

Result<DataStatus> DatasetSource::status() {
  return DataStatus{examples_.size(), examples_.size(), true};
}

}  // namespace chessrl::train
