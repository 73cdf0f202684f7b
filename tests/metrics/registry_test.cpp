#include "chessrl/metrics/registry.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/metrics/exposer.h"

namespace chessrl::metrics {
namespace {

// One HTTP/1.0 GET on 127.0.0.1:port; the whole response (status line,
// headers, body), or what arrived within 10 s.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval limit{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (::write(fd, request.data(), request.size()) < 0) return "write failed";
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) response.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return response;
}

// `n` connections to 127.0.0.1:port, each having sent half a request (the way
// an attacker holds a server's threads); fewer when one cannot connect.
std::vector<int> half_requests(int port, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const char half[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\n";
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::write(fd, half, sizeof half - 1) <= 0) {
      ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

// Slow clients (half a request each, the way an attacker holds a server's
// threads) must not keep /healthz, the liveness probe, from answering: with
// civetweb's 2 threads and 30 s request timeout, 16 of them did (0 of 5 probes
// answered within 2 s in `chessrl bench abuse --scenario slow-http`).
TEST(Exposer, HealthzAnswersWhileSlowClientsHoldConnections) {
  Registry registry;
  Exposer exposer(registry, "127.0.0.1:0");
  const std::vector<int> slow = half_requests(exposer.port(), 16);
  ASSERT_EQ(slow.size(), 16u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all accepted
  for (int probe = 0; probe < 3; ++probe) {
    const auto start = std::chrono::steady_clock::now();
    const std::string response = http_get(exposer.port(), "/healthz");
    EXPECT_NE(response.find("200 OK"), std::string::npos) << response;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2))
        << "probe " << probe;
  }
  for (int fd : slow) ::close(fd);
}

TEST(Registry, SerializesCountersAndGaugesInTextFormat) {
  Registry registry;
  registry.counter("chessrl_games_total", "Games played").inc(3);
  registry.counter("chessrl_rejected_total", "Rejects", {{"reason", "bad_fen"}}).inc();
  registry.counter("chessrl_rejected_total", "Rejects", {{"reason", "illegal_move"}}).inc(2);
  registry.gauge("chessrl_window", "Window size").set(1.5);
  const std::string text = registry.serialize();
  EXPECT_NE(text.find("# HELP chessrl_games_total Games played\n# TYPE chessrl_games_total "
                      "counter\nchessrl_games_total 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("chessrl_rejected_total{reason=\"bad_fen\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("chessrl_rejected_total{reason=\"illegal_move\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE chessrl_window gauge\nchessrl_window 1.5\n"), std::string::npos);
  // Families are sorted by name and each HELP/TYPE appears once.
  EXPECT_LT(text.find("chessrl_games_total"), text.find("chessrl_rejected_total"));
  EXPECT_EQ(text.find("# TYPE chessrl_rejected_total"),
            text.rfind("# TYPE chessrl_rejected_total"));
}

// prometheus-cpp collects counters before gauges, each in the order they were
// registered, and a family's series in hash order; the output is sorted anyway.
TEST(Registry, SortsFamiliesByNameAndSeriesByLabels) {
  Registry registry;
  registry.counter("chessrl_z_total", "z").inc();
  for (const char* reason : {"m", "c", "x", "a", "q"}) {
    registry.counter("chessrl_r_total", "r", {{"reason", reason}}).inc();
  }
  registry.gauge("chessrl_a", "a").set(1);
  const std::string text = registry.serialize();
  EXPECT_LT(text.find("# TYPE chessrl_a "), text.find("# TYPE chessrl_r_total "));
  EXPECT_LT(text.find("# TYPE chessrl_r_total "), text.find("# TYPE chessrl_z_total "));
  EXPECT_NE(text.find("chessrl_r_total{reason=\"a\"} 1\n"
                      "chessrl_r_total{reason=\"c\"} 1\n"
                      "chessrl_r_total{reason=\"m\"} 1\n"
                      "chessrl_r_total{reason=\"q\"} 1\n"
                      "chessrl_r_total{reason=\"x\"} 1\n"),
            std::string::npos)
      << text;
}

// The text format escapes backslashes and newlines in help (prometheus-cpp
// writes help as it is given, so the registry escapes it).
TEST(Registry, EscapesHelp) {
  Registry registry;
  registry.gauge("chessrl_g", "back \\ slash\nnew \"line\"").set(1);
  EXPECT_NE(registry.serialize().find("# HELP chessrl_g back \\\\ slash\\nnew \"line\"\n"
                                      "# TYPE chessrl_g gauge\n"),
            std::string::npos)
      << registry.serialize();
}

TEST(Registry, SameSeriesIsTheSameObject) {
  Registry registry;
  Counter& a = registry.counter("chessrl_x_total", "x", {{"k", "v"}});
  Counter& b = registry.counter("chessrl_x_total", "x", {{"k", "v"}});
  EXPECT_EQ(&a, &b);
  a.inc();
  EXPECT_EQ(b.value(), 1.0);
  a.inc(-5);  // counters never go down
  // nor turn into NaN (prometheus-cpp would add it)
  a.inc(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(b.value(), 1.0);
}

TEST(Registry, EscapesLabelValues) {
  Registry registry;
  registry.gauge("chessrl_g", "g", {{"opponent", "a\"b\\c\nd"}}).set(1);
  EXPECT_NE(registry.serialize().find("chessrl_g{opponent=\"a\\\"b\\\\c\\nd\"} 1"),
            std::string::npos)
      << registry.serialize();
}

TEST(Registry, RefusesBadNamesAndTypeClashes) {
  Registry registry;
  EXPECT_THROW(registry.counter("9lives", "x"), Error);
  EXPECT_THROW(registry.counter("has space", "x"), Error);
  EXPECT_THROW(registry.counter("chessrl_ok_total", "x", {{"bad-label", "v"}}), Error);
  registry.counter("chessrl_c_total", "x");
  EXPECT_THROW(registry.gauge("chessrl_c_total", "x"), Error);
  // The errors name the metric (prometheus-cpp's own say "Invalid metric name").
  try {
    registry.counter("has space_total", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'has space_total'"), std::string::npos) << e.what();
  }
  try {
    registry.counter("chessrl_ok_total", "x", {{"bad-label", "v"}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bad-label' on chessrl_ok_total"), std::string::npos)
        << e.what();
  }
}

TEST(Registry, RemovedSeriesAreNoLongerExportedAndComeBackFromZero) {
  Registry registry;
  registry.counter("chessrl_pods_total", "pods", {{"pod", "a"}}).inc(3);
  registry.counter("chessrl_pods_total", "pods", {{"pod", "b"}}).inc(5);
  registry.gauge("chessrl_pod_up", "up", {{"pod", "a"}}).set(1);
  EXPECT_TRUE(registry.remove_counter("chessrl_pods_total", {{"pod", "a"}}));
  EXPECT_TRUE(registry.remove_gauge("chessrl_pod_up", {{"pod", "a"}}));
  EXPECT_FALSE(registry.remove_counter("chessrl_pods_total", {{"pod", "a"}}));  // gone already
  EXPECT_FALSE(registry.remove_counter("chessrl_pods_total", {{"pod", "c"}}));  // never there
  EXPECT_FALSE(registry.remove_gauge("chessrl_nothing", {}));
  std::string text = registry.serialize();
  EXPECT_EQ(text.find("pod=\"a\""), std::string::npos) << text;
  EXPECT_NE(text.find("chessrl_pods_total{pod=\"b\"} 5"), std::string::npos) << text;
  // Asked for again: a new series from zero.
  EXPECT_EQ(registry.counter("chessrl_pods_total", "pods", {{"pod", "a"}}).value(), 0.0);
  text = registry.serialize();
  EXPECT_NE(text.find("chessrl_pods_total{pod=\"a\"} 0"), std::string::npos) << text;
}

TEST(Registry, CountsFromManyThreads) {
  Registry registry;
  Counter& counter = registry.counter("chessrl_n_total", "n");
  Gauge& gauge = registry.gauge("chessrl_g", "g");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        counter.inc();
        gauge.add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.value(), 40000.0);
  EXPECT_EQ(gauge.value(), 40000.0);
}

TEST(Registry, BuildInfo) {
  Registry registry;
  add_build_info(registry);
  EXPECT_NE(registry.serialize().find("chessrl_build_info{version=\""), std::string::npos);
}

TEST(Exposer, ServesMetricsAndHealth) {
  Registry registry;
  registry.counter("chessrl_games_total", "Games").inc(7);
  std::string problem;
  Exposer exposer(registry, "127.0.0.1:0", [&] { return problem; });
  ASSERT_GT(exposer.port(), 0);
  const std::string metrics = http_get(exposer.port(), "/metrics");
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("chessrl_games_total 7"), std::string::npos);
  EXPECT_EQ(http_get(exposer.port(), "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  problem = "store unreachable";
  const std::string unhealthy = http_get(exposer.port(), "/healthz");
  EXPECT_EQ(unhealthy.rfind("HTTP/1.1 503", 0), 0u) << unhealthy;
  EXPECT_NE(unhealthy.find("store unreachable"), std::string::npos);
  EXPECT_EQ(http_get(exposer.port(), "/nothing").find("HTTP/1.1 200"), std::string::npos);
}

TEST(Exposer, PortInUseIsAClearError) {
  Registry registry;
  Exposer first(registry, "127.0.0.1:0");
  try {
    Exposer second(registry, "127.0.0.1:" + std::to_string(first.port()));
    FAIL() << "a second server bound the same port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos);
  }
}

// The probe address (--probe-listen): /healthz and /livez alone, on threads of
// their own, so that 64 slow clients holding every thread of the metrics port
// (32) delay no probe there.
TEST(Exposer, TheProbePortServesProbesAloneWhileSlowClientsHoldTheMetricsPort) {
  Registry registry;
  std::string problem;
  Exposer exposer(
      registry, "127.0.0.1:0", [&] { return problem; }, "127.0.0.1:0");
  ASSERT_GT(exposer.probe_port(), 0);
  ASSERT_NE(exposer.probe_port(), exposer.port());
  EXPECT_EQ(http_get(exposer.probe_port(), "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(http_get(exposer.probe_port(), "/livez").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(http_get(exposer.probe_port(), "/metrics").find("HTTP/1.1 200"), std::string::npos);
  const std::vector<int> slow = half_requests(exposer.port(), 64);
  ASSERT_EQ(slow.size(), 64u);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  problem = "no progress for 901 s";
  for (int probe = 0; probe < 3; ++probe) {
    const auto start = std::chrono::steady_clock::now();
    const std::string response = http_get(exposer.probe_port(), "/healthz");
    EXPECT_EQ(response.rfind("HTTP/1.1 503", 0), 0u) << response;
    EXPECT_NE(response.find("no progress for 901 s"), std::string::npos) << response;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2))
        << "probe " << probe;
  }
  for (int fd : slow) ::close(fd);
}

// scrapes() counts GET /metrics responses alone; scrape_point() the
// requests begun.
TEST(Exposer, CountsTheMetricsResponsesItServes) {
  Registry registry;
  Exposer exposer(registry, "127.0.0.1:0");
  EXPECT_EQ(exposer.scrapes(), 0u);
  EXPECT_EQ(exposer.scrape_point(), 0u);
  EXPECT_EQ(http_get(exposer.port(), "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(http_get(exposer.port(), "/nothing").find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(exposer.scrapes(), 0u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(http_get(exposer.port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
  }
  EXPECT_EQ(exposer.scrapes(), 3u);
  EXPECT_EQ(exposer.scrape_point(), 3u);
}

// A value set before the point is in the scrape the wait reports; a scrape
// served before the point does not end the wait.
TEST(Exposer, WaitsForAScrapeBegunAfterThePoint) {
  Registry registry;
  Counter& lost = registry.counter("chessrl_lost_total", "Lost");
  Exposer exposer(registry, "127.0.0.1:0");
  EXPECT_NE(http_get(exposer.port(), "/metrics").find("chessrl_lost_total 0"), std::string::npos);
  lost.inc(3);
  const std::uint64_t point = exposer.scrape_point();
  EXPECT_FALSE(exposer.wait_for_scrape(point, std::chrono::milliseconds(100)))
      << "the scrape before the point ended the wait";
  EXPECT_FALSE(exposer.wait_for_scrape(point, std::chrono::milliseconds(0)));

  std::string response;
  std::thread scraper([&] { response = http_get(exposer.port(), "/metrics"); });
  EXPECT_TRUE(exposer.wait_for_scrape(point, std::chrono::seconds(30)));
  scraper.join();
  EXPECT_NE(response.find("chessrl_lost_total 3"), std::string::npos) << response;
  EXPECT_EQ(exposer.scrapes(), 2u);
  // Served, so a wait from an earlier point ends at once; from now on it needs another.
  EXPECT_TRUE(exposer.wait_for_scrape(point, std::chrono::milliseconds(0)));
  EXPECT_FALSE(exposer.wait_for_scrape(exposer.scrape_point(), std::chrono::milliseconds(0)));
}

TEST(Exposer, NoProbePortWithoutAnAddressOrWithOff) {
  Registry registry;
  EXPECT_EQ(Exposer(registry, "127.0.0.1:0").probe_port(), 0);
  EXPECT_EQ(Exposer(registry, "127.0.0.1:0", {}, "off").probe_port(), 0);
}

}  // namespace
}  // namespace chessrl::metrics
