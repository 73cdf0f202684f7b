#include <algorithm>
#include <cmath>
#include <string>

#include "chessrl/core/error.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose bound is >= value (Prometheus's "le"); past the end: +Inf.
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[static_cast<std::size_t>(bucket)].fetch_add(1, std::memory_order_relaxed);
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    s.count += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(s.count);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  if (!(start > 0) || !std::isfinite(start))
    throw Error("exponential_buckets: start must be positive and finite, not " +
                std::to_string(start));
  if (!(factor > 1) || !std::isfinite(factor))
    throw Error("exponential_buckets: factor must be greater than 1, not " +
                std::to_string(factor));
  if (count < 1) throw Error("exponential_buckets: count must be at least 1");
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
  return bounds;
}

std::vector<double> linear_buckets(double start, double width, int count) {
  if (!std::isfinite(start)) throw Error("linear_buckets: start must be finite");
  if (!(width > 0) || !std::isfinite(width))
    throw Error("linear_buckets: width must be positive, not " + std::to_string(width));
  if (count < 1) throw Error("linear_buckets: count must be at least 1");
  std::vector<double> bounds;
  for (int i = 0; i < count; ++i) bounds.push_back(start + width * i);
  return bounds;
}

}  // namespace chessrl::metrics
