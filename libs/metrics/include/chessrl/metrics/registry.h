// Metrics in Prometheus's model: named families of counters, gauges and
// histograms, one time series per label set, rendered in the text exposition
// format (0.0.4) so that `promtool check metrics` passes. The series, their
// values and the text format are prometheus-cpp's (core); this layer keeps the
// project's API and adds the rules prometheus-cpp does not enforce. Names
// follow docs/architecture.md: prefix chessrl_, base units, counters end in
// _total (and nothing else does). The Registry and every
// Counter/Gauge/Histogram are thread-safe. References stay valid for the
// Registry's lifetime.
//
// prometheus-cpp's headers stay out of this one (they are only forward
// declared here) so that the services compile without them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace chessrl::metrics {

using Labels = std::map<std::string, std::string>;

// A value that only goes up.
class Counter {
 public:
  void inc(double amount = 1.0);  // a negative or NaN amount is ignored
  double value() const;

 private:
  friend class Registry;
  explicit Counter(prometheus::Counter& series) : series_(&series) {}
  prometheus::Counter* series_;
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double value);
  void add(double amount);
  double value() const;

 private:
  friend class Registry;
  explicit Gauge(prometheus::Gauge& series) : series_(&series) {}
  prometheus::Gauge* series_;
};

// Observations counted into buckets by upper bound (value <= bound), plus
// their sum and count. observe() takes a lock of the series' own
// (prometheus-cpp keeps the buckets, sum and count consistent with one).
class Histogram {
 public:
  void observe(double value);  // NaN is ignored

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    std::uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  friend class Registry;
  explicit Histogram(prometheus::Histogram& series) : series_(&series) {}
  prometheus::Histogram* series_;
};

// `count` bounds: start, start*factor, start*factor^2, ... (start > 0, factor > 1).
std::vector<double> exponential_buckets(double start, double factor, int count);
// `count` bounds: start, start+width, start+2*width, ... (width > 0).
std::vector<double> linear_buckets(double start, double width, int count);

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The series `name{labels}`, created on first use. `help` (non-empty when
  // the family is created) is kept from the first call. Throws chessrl::Error,
  // naming the metric, for a name or label name Prometheus does not accept, a
  // counter not ending in _total or another type ending in it, any metric
  // ending in _bucket, _sum or _count, a name already used by another type,
  // or empty help.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // As above; also throws for bounds that are not finite and strictly
  // increasing, for bounds that differ from the family's, and for a label "le".
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                       const Labels& labels = {});

  // Removes the series `name{labels}` (it is no longer exported; the family
  // stays, as does a series of it asked for again, from zero). References to
  // the series become invalid. False when there is no such series.
  bool remove_counter(const std::string& name, const Labels& labels);
  bool remove_gauge(const std::string& name, const Labels& labels);

  // Every family, sorted by name, with # HELP and # TYPE lines; the series of
  // a family sorted by their labels.
  std::string serialize() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Adds chessrl_build_info{version="<project version>"} = 1.
void add_build_info(Registry& registry);

}  // namespace chessrl::metrics
