// Metrics in Prometheus's model: named families of counters and gauges, one
// time series per label set, rendered in the text exposition format (0.0.4).
// Names follow shared/DESIGN.md: prefix chessrl_, base units, counters end in
// _total. Series are created once and then updated lock-free; the Registry
// and every Counter/Gauge are thread-safe. References stay valid for the
// Registry's lifetime.
#pragma once

#include <atomic>
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

class Registry {
 public:
  // The series `name{labels}`, created on first use. `help` is kept from the
  // first call. Throws chessrl::Error for a name or label name Prometheus does
  // not accept, or a name already used by the other type.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});

  // Every family, sorted by name, with # HELP and # TYPE lines.
  std::string serialize() const;

 private:
  struct Family {
    std::string help;
    bool is_counter = true;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
  };
  Family& family(const std::string& name, const std::string& help, bool is_counter,
                 const Labels& labels);
  mutable std::mutex mutex_;
  std::map<std::string, Family> families_;
};

// Adds chessrl_build_info{version="<project version>"} = 1.
void add_build_info(Registry& registry);

}  // namespace chessrl::metrics
