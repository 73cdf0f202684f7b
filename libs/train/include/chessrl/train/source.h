// Where a trainer's examples come from. An ExampleSource is called from the
// trainer's prefetch thread (fetch) and from its main thread (status), never
// concurrently with itself for the same method; implementations make the two
// safe to run at the same time.
#pragma once

#include <cstdint>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/train/example.h"

namespace chessrl::train {

// What gates training: the minimum window and the sample-reuse cap.
struct DataStatus {
  std::uint64_t window_positions = 0;        // positions available to sample now
  std::uint64_t positions_stored_total = 0;  // positions ever stored (self-play's output)
  bool fixed = false;  // a fixed data set: neither gate applies
};

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  // `count` examples for rank `rank` of `world` at optimizer step `step`
  // (0-based). A source may ignore step, rank and world (the replay service
  // samples at random); a deterministic one uses them so that every rank
  // draws its own slice of the same global batch.
  virtual Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world,
                                             int count) = 0;
  virtual Result<DataStatus> status() = 0;
  // Called once when training stops: a fetch or status call in flight may
  // give up at once, and the source is not used again. Default: nothing.
  virtual void cancel() {}
};

// A fixed data set in memory. The global batch of step s is world * count
// indices drawn uniformly with replacement from a generator seeded by (seed,
// s); rank r takes the r-th slice of `count`. So W ranks with batch b see
// exactly the examples one rank with batch W * b sees, in the same order.
class DatasetSource : public ExampleSource {
 public:
  // Precondition: examples is not empty.
  DatasetSource(std::vector<Example> examples, std::uint64_t seed);
  Result<std::vector<Example>> fetch(std::int64_t step, int rank, int world, int count) override;
  Result<DataStatus> status() override;
  std::size_t size() const { return examples_.size(); }

 private:
  std::vector<Example> examples_;
  std::uint64_t seed_;
};

}  // namespace chessrl::train
