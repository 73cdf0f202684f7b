// Metrics in Prometheus's model: named families of counters, gauges and
// histograms, one time series per label set, rendered in the text exposition
// format (0.0.4) so that `promtool check metrics` passes. Names follow
// docs/architecture.md: prefix chessrl_, base units, counters end in _total (and
// nothing else does). Series are created once and then updated lock-free; the
// Registry and every Counter/Gauge/Histogram are thread-safe. References stay
// valid for the Registry's lifetime.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace chessrl::metrics {

using Labels = std::map<std::string, std::string>;

// A value that only goes up.
class Counter {
 public:
  void inc(double amount = 1.0);  // amount >= 0
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double amount);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into buckets by upper bound (value <= bound), plus
// their sum and count. observe() is lock-free: an atomic count per bucket and
// an atomic sum (compare-and-swap).
class Histogram {
 public:
  // `bounds`: strictly increasing and finite; +Inf is implicit. The Registry
  // checks them; here they are a precondition.
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);  // NaN is ignored

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    std::uint64_t count = 0;
  };
  Snapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // bounds_.size() + 1, not cumulative
  std::atomic<double> sum_{0.0};
};

// `count` bounds: start, start*factor, start*factor^2, ... (start > 0, factor > 1).
std::vector<double> exponential_buckets(double start, double factor, int count);
// `count` bounds: start, start+width, start+2*width, ... (width > 0).
std::vector<double> linear_buckets(double start, double width, int count);

class Registry {
 public:
  // The series `name{labels}`, created on first use. `help` (non-empty when
  // the family is created) is kept from the first call. Throws chessrl::Error,
  // naming the metric, for a name or label name Prometheus does not accept, a
  // counter not ending in _total or another type ending in it, a gauge or
  // counter ending in _bucket, _sum or _count, a name already used by another
  // type (or by a histogram's _bucket/_sum/_count series), or empty help.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // As above; also throws for bounds that are not finite and strictly
  // increasing, for bounds that differ from the family's, and for a label "le".
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       const Labels& labels = {});

  // Every family, sorted by name, with # HELP and # TYPE lines.
  std::string serialize() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    std::string help;
    Type type = Type::kCounter;
    std::vector<double> bounds;  // histograms
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, const std::string& help, Type type, const Labels& labels);
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

// Adds chessrl_build_info{version="<project version>"} = 1.
void add_build_info(Registry& registry);

}  // namespace chessrl::metrics
