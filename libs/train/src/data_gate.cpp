#include "data_gate.h"

#include <algorithm>
#include <limits>

namespace chessrl::train {

DataGate::DataGate(std::uint64_t min_window, double max_reuse, int global_batch,
                   std::function<void(const std::string&)> log)
    : min_window_(min_window),
      max_reuse_(max_reuse),
      global_batch_(std::max(global_batch, 1)),
      log_(std::move(log)) {}

void DataGate::observe(std::uint64_t stored, std::uint64_t samples_total) {
  if (!based_) {
    // First look: the positions stored so far back the samples trained so far
    // (a resumed run's checkpoint count), as before any reset.
    based_ = true;
    base_samples_ = 0;
    base_positions_ = stored;
    base_counter_ = stored;
  } else if (stored < last_counter_) {
    // The counter restarted (the store was flushed): what was trained before
    // says nothing about the positions stored from now on.
    ++resets_;
    log_("data: the source's stored-positions counter went down from " +
         std::to_string(last_counter_) + " to " + std::to_string(stored) +
         " (the store was reset?): max_reuse now counts from here");
    base_samples_ = samples_total;
    base_positions_ = 0;
    base_counter_ = 0;
  }
  last_counter_ = stored;
}

std::pair<std::int64_t, std::string> DataGate::allowance(ExampleSource& source, std::int64_t step,
                                                         std::uint64_t samples_total,
                                                         bool refresh) {
  constexpr std::int64_t kUnlimited = std::numeric_limits<std::int64_t>::max();
  if (min_window_ == 0 && max_reuse_ == 0) return {kUnlimited, ""};
  const auto now = std::chrono::steady_clock::now();
  if (refresh || !status_ok_ || now - status_at_ > std::chrono::seconds(1)) {
    auto s = source.status();
    status_at_ = now;
    if (!s) {
      status_ok_ = false;
      return {step, "the data source's status is unavailable: " + s.error()};
    }
    status_ = *s;
    status_ok_ = true;
    if (!status_.fixed) observe(status_.positions_stored_total, samples_total);
  }
  if (status_.fixed) return {kUnlimited, ""};
  if (status_.window_positions < min_window_)
    return {0, "the window holds " + std::to_string(status_.window_positions) +
                   " positions, fewer than min_window " + std::to_string(min_window_)};
  if (max_reuse_ > 0) {
    const std::uint64_t positions = base_positions_ + (last_counter_ - base_counter_);
    const double allowed_samples = double(base_samples_) + max_reuse_ * double(positions);
    const auto allowed =
        static_cast<std::int64_t>((allowed_samples - double(samples_total)) / global_batch_);
    return {step + std::max<std::int64_t>(allowed, 0),
            std::to_string(samples_total - base_samples_) + " samples trained on " +
                std::to_string(positions) + " positions stored: max_reuse " +
                std::to_string(max_reuse_) + " reached, waiting for self-play"};
  }
  return {kUnlimited, ""};
}

double DataGate::reuse(std::uint64_t samples_total) const {
  if (!status_ok_ || status_.fixed || !based_) return 0;
  const std::uint64_t positions = base_positions_ + (last_counter_ - base_counter_);
  if (positions == 0) return 0;
  return double(samples_total - base_samples_) / double(positions);
}

}  // namespace chessrl::train
