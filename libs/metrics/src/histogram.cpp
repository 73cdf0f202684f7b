#include <prometheus/histogram.h>

#include <cmath>
#include <string>

#include "chessrl/core/error.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {

void Histogram::observe(double value) {
  // prometheus-cpp would count NaN into the first bucket and make the sum NaN for good.
  if (std::isnan(value)) return;
  series_->Observe(value);
}

Histogram::Snapshot Histogram::snapshot() const {
  const prometheus::ClientMetric metric = series_->Collect();
  Snapshot s;
  s.cumulative.reserve(metric.histogram.bucket.size());
  for (const auto& bucket : metric.histogram.bucket)
    s.cumulative.push_back(bucket.cumulative_count);
  s.sum = metric.histogram.sample_sum;
  s.count = metric.histogram.sample_count;
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
