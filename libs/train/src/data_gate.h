// The data gates of one rank: the minimum window and the sample-reuse cap.
// The cap counts against positions stored since a base the gate keeps itself:
// the data source's stored counter may be reset under a running trainer (a
// Redis FLUSHALL), so a counter that goes down re-bases the gate (samples
// trained from then on count against positions stored from then on) instead
// of comparing the checkpoint's sample count with a counter that restarted.
// Internal to libs/train; no LibTorch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "chessrl/train/source.h"

namespace chessrl::train {

class DataGate {
 public:
  DataGate(std::uint64_t min_window, double max_reuse, int global_batch,
           std::function<void(const std::string&)> log);

  // (the step the gates allow training up to, why not further) after `step`
  // steps and `samples_total` samples; reads the source's status at most
  // once a second unless `refresh`.
  std::pair<std::int64_t, std::string> allowance(ExampleSource& source, std::int64_t step,
                                                 std::uint64_t samples_total, bool refresh);
  // Samples trained / positions stored since the base: what max_reuse caps.
  // 0 when unknown (no status read, a fixed data set, nothing stored).
  double reuse(std::uint64_t samples_total) const;
  // The next allowance() reads the status again.
  void invalidate() { status_ok_ = false; }
  // Times the source's stored counter went down (reset) while training.
  std::uint64_t resets() const { return resets_; }

 private:
  void observe(std::uint64_t stored, std::uint64_t samples_total);

  std::uint64_t min_window_;
  double max_reuse_;
  int global_batch_;
  std::function<void(const std::string&)> log_;
  DataStatus status_;
  bool status_ok_ = false;
  std::chrono::steady_clock::time_point status_at_{};
  // The base: samples trained then, positions credited then, the counter then.
  bool based_ = false;
  std::uint64_t base_samples_ = 0;
  std::uint64_t base_positions_ = 0;
  std::uint64_t base_counter_ = 0;
  std::uint64_t last_counter_ = 0;
  std::uint64_t resets_ = 0;
};

}  // namespace chessrl::train
