#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {
namespace {

// The message of the chessrl::Error that `fn` throws ("" if none).
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Histogram, SerializesCumulativeBucketsSumAndCount) {
  Registry registry;
  Histogram& h = registry.histogram("chessrl_batch_size", "Positions per forward pass",
                                    {1, 2.5, 10}, {{"worker", "0"}});
  for (double v : {0.5, 1.0, 2.0, 3.0, 10.0, 11.0, 100.0}) h.observe(v);
  const std::string text = registry.serialize();
  // prometheus-cpp's order: _count, _sum, then the buckets.
  EXPECT_NE(text.find("# HELP chessrl_batch_size Positions per forward pass\n"
                      "# TYPE chessrl_batch_size histogram\n"
                      "chessrl_batch_size_count{worker=\"0\"} 7\n"
                      "chessrl_batch_size_sum{worker=\"0\"} 127.5\n"
                      "chessrl_batch_size_bucket{worker=\"0\",le=\"1\"} 2\n"
                      "chessrl_batch_size_bucket{worker=\"0\",le=\"2.5\"} 3\n"
                      "chessrl_batch_size_bucket{worker=\"0\",le=\"10\"} 5\n"
                      "chessrl_batch_size_bucket{worker=\"0\",le=\"+Inf\"} 7\n"),
            std::string::npos)
      << text;
}

TEST(Histogram, BoundsAreWrittenInTheirShortestForm) {
  Registry registry;
  registry.histogram("chessrl_latency_seconds", "Latency", {1e-05, 0.1, 0.2}).observe(0.15);
  const std::string text = registry.serialize();
  EXPECT_NE(text.find("chessrl_latency_seconds_bucket{le=\"1e-05\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("chessrl_latency_seconds_bucket{le=\"0.1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("chessrl_latency_seconds_bucket{le=\"0.2\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("chessrl_latency_seconds_sum 0.15\n"), std::string::npos);
  EXPECT_NE(text.find("chessrl_latency_seconds_count 1\n"), std::string::npos);
}

TEST(Histogram, SnapshotAndNaN) {
  Registry registry;
  Histogram& h = registry.histogram("chessrl_nan", "NaN", {1, 2});
  h.observe(1);
  h.observe(1.5);
  h.observe(std::numeric_limits<double>::quiet_NaN());  // ignored
  h.observe(5);
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.sum, 7.5);
  EXPECT_NE(registry.serialize().find("chessrl_nan_sum 7.5\n"), std::string::npos);
}

TEST(Histogram, ObservesFromManyThreads) {
  Registry registry;
  Histogram& h = registry.histogram("chessrl_h", "h", linear_buckets(0, 1, 4));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 20000; ++i) h.observe(double(t) + 0.5);
    });
  }
  for (auto& t : threads) t.join();
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.count, 80000u);
  EXPECT_DOUBLE_EQ(s.sum, 20000 * (0.5 + 1.5 + 2.5 + 3.5));
  // Bounds 0,1,2,3: each thread's values land in one bucket.
  EXPECT_EQ(s.cumulative, (std::vector<std::uint64_t>{0, 20000, 40000, 60000, 80000}));
}

TEST(Histogram, BucketHelpers) {
  EXPECT_EQ(exponential_buckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_EQ(linear_buckets(0, 0.5, 3), (std::vector<double>{0, 0.5, 1}));
  EXPECT_NE(error_of([] { exponential_buckets(0, 2, 3); }).find("start"), std::string::npos);
  EXPECT_NE(error_of([] { exponential_buckets(1, 1, 3); }).find("factor"), std::string::npos);
  EXPECT_NE(error_of([] { linear_buckets(0, -1, 3); }).find("width"), std::string::npos);
  EXPECT_NE(error_of([] { linear_buckets(0, 1, 0); }).find("count"), std::string::npos);
}

TEST(Histogram, RefusesBadBoundsByName) {
  Registry registry;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(error_of([&] {
              registry.histogram("chessrl_a", "a", {1, 1});
            }).find("chessrl_a: bucket bounds must be strictly increasing"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.histogram("chessrl_b", "b", {2, 1});
            }).find("strictly increasing"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.histogram("chessrl_c", "c", {1, inf});
            }).find("chessrl_c: bucket bounds must be finite"),
            std::string::npos);
  registry.histogram("chessrl_d", "d", {1, 2}, {{"k", "x"}});
  registry.histogram("chessrl_d", "d", {1, 2}, {{"k", "y"}});  // same bounds: fine
  EXPECT_NE(error_of([&] {
              registry.histogram("chessrl_d", "d", {1, 3}, {{"k", "z"}});
            }).find("chessrl_d is already registered with other bucket bounds"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.histogram("chessrl_e", "e", {1}, {{"le", "1"}});
            }).find("chessrl_e may not have a label 'le'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.gauge("chessrl_d", "d");
            }).find("chessrl_d is already registered as a histogram"),
            std::string::npos);
  // A histogram's own series names are taken.
  EXPECT_NE(error_of([&] { registry.gauge("chessrl_d_count", "x"); }).find("ends in _count"),
            std::string::npos);
}

TEST(Registry, EnforcesPromtoolsNamingRules) {
  Registry registry;
  EXPECT_NE(error_of([&] {
              registry.counter("chessrl_games", "g");
            }).find("counter chessrl_games must end in _total"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.gauge("chessrl_games_total", "g");
            }).find("chessrl_games_total ends in _total, which only counters may"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.histogram("chessrl_x_total", "x", {1}); }).find("_total"),
            std::string::npos);
  EXPECT_NE(error_of([&] { registry.gauge("chessrl_games_sum", "g"); }).find("ends in _sum"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              registry.gauge("chessrl_silent", "");
            }).find("chessrl_silent needs help text"),
            std::string::npos);
  registry.gauge("chessrl_loud", "has help", {{"k", "1"}});
  EXPECT_EQ(error_of([&] { registry.gauge("chessrl_loud", "", {{"k", "2"}}); }), "");
  EXPECT_NE(registry.serialize().find("# HELP chessrl_loud has help\n"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::metrics
