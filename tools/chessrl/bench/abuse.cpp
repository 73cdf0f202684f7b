// `chessrl bench abuse`: what a hostile or broken client does to the replay
// service, measured (docs/security.md, "Load and abuse"). Each scenario runs
// chessrl-replay over a private redis-server, attacks it as a client could,
// and prints the figures that say whether the service stayed bounded:
//   empty-games  games without positions (a draw at the move limit before any
//                target), pushed 256 a call: Redis's memory and keys before
//                and after, and what the window holds.
//   big-push     clients with no token sending large PushGames at once (a
//                token is checked once the message is in): the service's
//                peak RSS, and whether it still serves its own clients.
//   downloads    clients downloading one large model version at once (GetModel
//                holds the model while it sends it): the service's peak RSS,
//                and how many downloads were served or told to retry.
//   slow-http    clients that open the metrics port and send half a request,
//                renewed as the server drops them: how many /healthz requests
//                answer within 2 s on the metrics port, and on the probe port
//                (--probe-listen, where the chart sends the kubelet's probes).
// Exits 1 when a scenario's bound is broken (Redis grew by more than 1 MiB
// for position-less games; fewer than all probes on the probe port answered
// within 2 s; downloads raising replay's RSS by 256 MiB or more). With --json,
// one JSON document of the same figures instead (a key per scenario run, as
// empty_games, each with its "bound_held"; "ok"), the exit status the same.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/replay_shared.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "commands.h"

namespace chessrl::tool {
namespace {

struct AbuseOptions {
  std::string scenario = "all";
  int games = 51200;                     // empty-games: how many
  int slow_clients = 16;                 // slow-http: connections holding the metrics port
  int probes = 5;                        // slow-http: /healthz requests timed
  int pushers = 6;                       // big-push: concurrent clients
  int push_mib = 59;                     // big-push: size of each PushGames
  int rounds = 3;                        // big-push: pushes per client
  bool with_token = false;               // big-push: the clients hold the self-play token
  int downloaders = 8;                   // downloads: concurrent GetModel clients
  int model_mib = 60;                    // downloads: size of the model version
  std::vector<std::string> replay_args;  // more chessrl-replay options
  std::string bin_dir;
  bool json = false;  // one JSON document on stdout instead of the report
};

constexpr double kMiB = 1 << 20;

// A TCP connection to 127.0.0.1:port, or -1.
int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// GET `path`; the seconds until the status line came back, or -1 when none
// came within `limit` seconds.
double timed_get(int port, const std::string& path, double limit) {
  const auto start = Clock::now();
  const int fd = connect_loopback(port);
  if (fd < 0) return -1;
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n";
  double answered = -1;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size())) {
    std::string reply;
    while (reply.find("\r\n") == std::string::npos) {
      const double left = limit - seconds_since(start);
      if (left <= 0) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, int(left * 1000) + 1) != 1) break;
      char buf[256];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, std::size_t(n));
    }
    if (reply.rfind("HTTP/1.1 ", 0) == 0 && seconds_since(start) <= limit)
      answered = seconds_since(start);
  }
  ::close(fd);
  return answered;
}

std::int64_t used_memory(const harness::RedisServer& redis) {
  const std::string v = redis_memory_field(redis, "used_memory");
  return v == "?" ? -1 : std::stoll(v);
}

// Each scenario fills `out` with its figures (MiB, seconds) and prints them
// unless --json; true when its bound held.
bool run_empty_games(const AbuseOptions& o, nlohmann::json& out) {
  auto redis = start_bench_redis("chessrl-bench-abuse", "everysec");
  ReplayChild replay =
      start_replay_child(*redis, o.bin_dir, {"--window-positions", "100000"}, false, "bench abuse");
  rpc::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(replay.port);
  options.deadline = std::chrono::seconds(30);
  rpc::ReplayClient client(options);
  const std::int64_t before = used_memory(*redis);
  const std::string keys_before = redis->cli({"DBSIZE"});
  ProgressLine progress;
  std::uint64_t stored = 0;
  const auto start = Clock::now();
  for (int sent = 0; sent < o.games;) {
    v1::PushGamesRequest request;
    for (int i = 0; i < 256 && sent < o.games; ++i, ++sent) {
      v1::Game* g = request.add_games();
      g->set_id("abuse-empty-" + std::to_string(sent));
      g->set_producer("abuse");
      g->set_outcome(v1::DRAW);
      g->set_termination(v1::MOVE_LIMIT);
    }
    auto reply = client.push_games(request);
    if (!reply.ok()) throw Error("bench abuse: PushGames: " + reply.error());
    for (const auto& r : reply->results()) stored += r.status() == v1::STORED;
    progress.show("empty-games: %d of %d pushed", sent, o.games);
  }
  progress.clear();
  const double seconds = seconds_since(start);
  const std::int64_t after = used_memory(*redis);
  auto stats = client.stats();
  if (!stats.ok()) throw Error("bench abuse: Stats: " + stats.error());
  const double grew_mib = double(after - before) / kMiB;
  const std::string keys_after = redis->cli({"DBSIZE"});
  const bool held = grew_mib <= 1.0;
  out = {{"games", o.games},
         {"seconds", seconds},
         {"stored", stored},
         {"redis_used_memory_mib",
          {{"before", double(before) / kMiB}, {"after", double(after) / kMiB}, {"grew", grew_mib}}},
         {"redis_keys",
          {{"before", std::atoll(keys_before.c_str())}, {"after", std::atoll(keys_after.c_str())}}},
         {"window_games", stats->window_games()},
         {"games_counted", stats->games_stored_total()},
         {"bound_held", held}};
  if (!o.json) {
    std::printf("empty-games: %d position-less games pushed in %.1f s (256 a call)\n", o.games,
                seconds);
    std::printf("  acknowledged as stored        %llu\n", static_cast<unsigned long long>(stored));
    std::printf("  Redis used_memory             %.2f MiB -> %.2f MiB (%+.2f MiB)\n",
                double(before) / kMiB, double(after) / kMiB, grew_mib);
    std::printf("  Redis keys (DBSIZE)           %s -> %s\n", keys_before.c_str(),
                keys_after.c_str());
    std::printf("  window games / games counted  %llu / %llu\n\n",
                static_cast<unsigned long long>(stats->window_games()),
                static_cast<unsigned long long>(stats->games_stored_total()));
  }
  replay.child->stop(std::chrono::seconds(10));
  return held;
}

// The peak of a process's VmRSS, sampled every 20 ms from construction to stop().
class PeakRss {
 public:
  PeakRss(int pid, long start_kb)
      : peak_kb_(start_kb), thread_([this, pid] {
          while (!done_.load()) {
            peak_kb_ = std::max(peak_kb_, rss_kb(pid));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
        }) {}
  ~PeakRss() { stop(); }
  long stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_kb_;
  }

 private:
  std::atomic<bool> done_{false};
  long peak_kb_;
  std::thread thread_;
};

// Replay's memory over a scenario, in MiB, as the JSON documents give it: its
// VmRSS before, the peak sampled during, and VmHWM (the kernel's own peak) after.
nlohmann::json rss_mib(long before_kb, long peak_kb, long hwm_kb) {
  return {{"before", double(before_kb) / 1024},
          {"peak_sampled", double(peak_kb) / 1024},
          {"vmhwm", double(hwm_kb) / 1024}};
}

bool run_big_push(const AbuseOptions& o, nlohmann::json& out) {
  auto redis = start_bench_redis("chessrl-bench-abuse", "everysec");
  const std::string token = "abuse-selfplay-token-0123456789";
  ReplayChild replay = start_replay_child(*redis, o.bin_dir, o.replay_args, false, "bench abuse",
                                          {{"CHESSRL_TOKEN_SELFPLAY", token},
                                           {"CHESSRL_TOKEN_TRAINER", token + "-trainer"},
                                           {"CHESSRL_TOKEN_EVALUATOR", token + "-evaluator"}},
                                          token);
  const long rss_before = rss_kb(replay.child->pid());
  // One request of about push_mib MiB: games whose move lists are long runs of
  // the same (parseable) number; it is never valid, but it must be read first.
  v1::PushGamesRequest request;
  const std::size_t target = std::size_t(o.push_mib) << 20;
  for (int i = 0; request.ByteSizeLong() < target; ++i) {
    v1::Game* g = request.add_games();
    g->set_id("abuse-big-" + std::to_string(i));
    for (int m = 0; m < 50000; ++m) g->add_moves(0x0FFFFFFFu);
  }
  const double request_mib = double(request.ByteSizeLong()) / kMiB;
  std::atomic<int> refused{0}, other{0};
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> pushers;
  PeakRss sampler(replay.child->pid(), rss_before);
  const auto start = Clock::now();
  for (int p = 0; p < o.pushers; ++p)
    pushers.emplace_back([&] {
      rpc::ClientOptions options;
      if (o.with_token) options.security.token = token;
      options.address = "127.0.0.1:" + std::to_string(replay.port);
      options.deadline = std::chrono::seconds(60);
      options.max_message_bytes = 1 << 30;
      rpc::ReplayClient client(options);
      for (int r = 0; r < o.rounds; ++r) {
        auto reply = client.push_games(request);
        if (!reply.ok() && (reply.code() == grpc::StatusCode::UNAUTHENTICATED ||
                            reply.code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                            (o.with_token && reply.code() == grpc::StatusCode::UNAVAILABLE))) {
          ++refused;
        } else {
          ++other;
        }
        if (!reply.ok()) {
          std::lock_guard lock(mu);
          if (first_error.empty()) first_error = reply.error().substr(0, 160);
        }
      }
    });
  for (auto& t : pushers) t.join();
  const double seconds = seconds_since(start);
  const long peak_kb = sampler.stop();
  // The service still serves its own clients.
  rpc::ClientOptions own;
  own.address = "127.0.0.1:" + std::to_string(replay.port);
  own.security.token = token;
  own.deadline = std::chrono::seconds(5);
  const bool serving = rpc::ReplayClient(own).stats().ok();
  const long hwm = rss_kb(replay.child->pid(), true);
  const bool held = serving && other.load() == 0 && (hwm - rss_before) < 256 * 1024;
  out = {{"clients", o.pushers},
         {"with_token", o.with_token},
         {"pushes", o.pushers * o.rounds},
         {"push_mib", request_mib},
         {"seconds", seconds},
         {"refused", refused.load()},
         {"other", other.load()},
         {"first_error", first_error},
         {"replay_rss_mib", rss_mib(rss_before, peak_kb, hwm)},
         {"still_serving", serving},
         {"bound_held", held}};
  if (!o.json) {
    std::printf("big-push: %d clients %s, %d PushGames of %.0f MiB each, in %.1f s\n", o.pushers,
                o.with_token ? "with the self-play token" : "without a token", o.pushers * o.rounds,
                request_mib, seconds);
    std::printf("  refused (UNAUTHENTICATED, RESOURCE_EXHAUSTED%s)  %d, other %d (first: %s)\n",
                o.with_token ? ", UNAVAILABLE" : "", refused.load(), other.load(),
                first_error.c_str());
    std::printf(
        "  chessrl-replay RSS            %.0f MiB before, peak %.0f MiB (sampled), VmHWM %.0f "
        "MiB\n",
        double(rss_before) / 1024, double(peak_kb) / 1024, double(hwm) / 1024);
    std::printf("  still serving its clients     %s\n\n", serving ? "yes" : "NO");
  }
  replay.child->stop(std::chrono::seconds(10));
  return held;
}

bool run_downloads(const AbuseOptions& o, nlohmann::json& out) {
  auto redis = start_bench_redis("chessrl-bench-abuse", "everysec");
  const std::string token = "abuse-trainer-token-0123456789";
  ReplayChild replay = start_replay_child(*redis, o.bin_dir, o.replay_args, false, "bench abuse",
                                          {{"CHESSRL_TOKEN_SELFPLAY", token + "-selfplay"},
                                           {"CHESSRL_TOKEN_TRAINER", token},
                                           {"CHESSRL_TOKEN_EVALUATOR", token + "-evaluator"}},
                                          token);
  rpc::ClientOptions options;
  options.security.token = token;
  options.address = "127.0.0.1:" + std::to_string(replay.port);
  options.deadline = std::chrono::seconds(120);
  options.max_message_bytes = 1 << 30;
  // A model version of model_mib MiB (its bytes need not parse: the registry
  // checks size and CRC only).
  std::string blob(std::size_t(o.model_mib) << 20, '\0');
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (char& c : blob) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  v1::ModelInfo info;
  info.set_version(1);
  info.set_size_bytes(blob.size());
  info.set_crc32(rpc::blob_crc32(blob));
  {
    rpc::ModelRegistryClient publisher(options);
    auto published = publisher.publish(info, blob);
    if (!published.ok()) throw Error("bench abuse: downloads: publish: " + published.error());
  }
  blob = std::string();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the publish's memory settles
  const long rss_before = rss_kb(replay.child->pid());
  std::atomic<int> served{0}, busy{0}, other{0};
  std::string first_error;
  std::mutex mu;
  PeakRss sampler(replay.child->pid(), rss_before);
  const auto start = Clock::now();
  std::vector<std::thread> downloaders;
  for (int d = 0; d < o.downloaders; ++d)
    downloaders.emplace_back([&] {
      rpc::ModelRegistryClient client(options);
      for (int r = 0; r < o.rounds; ++r) {
        auto got = client.get(1);
        if (got.ok() && got->second.size() == info.size_bytes()) {
          ++served;
        } else if (!got.ok() && got.code() == grpc::StatusCode::UNAVAILABLE) {
          ++busy;
        } else {
          ++other;
          std::lock_guard lock(mu);
          if (first_error.empty())
            first_error = got.ok() ? "a short model" : got.error().substr(0, 160);
        }
      }
    });
  for (auto& t : downloaders) t.join();
  const double seconds = seconds_since(start);
  const long peak_kb = sampler.stop();
  const long hwm = rss_kb(replay.child->pid(), true);
  const bool held = served.load() > 0 && other.load() == 0 && (peak_kb - rss_before) < 256 * 1024;
  out = {{"clients", o.downloaders},
         {"rounds", o.rounds},
         {"model_mib", o.model_mib},
         {"seconds", seconds},
         {"served", served.load()},
         {"told_to_retry", busy.load()},
         {"other", other.load()},
         {"first_error", first_error},
         // VmHWM includes the publish.
         {"replay_rss_mib", rss_mib(rss_before, peak_kb, hwm)},
         {"bound_held", held}};
  if (!o.json) {
    std::printf("downloads: %d clients, %d GetModel each of one %d MiB version, at once (%.1f s)\n",
                o.downloaders, o.rounds, o.model_mib, seconds);
    std::printf("  served / told to retry (UNAVAILABLE) / other   %d / %d / %d%s%s\n",
                served.load(), busy.load(), other.load(), first_error.empty() ? "" : ": ",
                first_error.c_str());
    std::printf(
        "  chessrl-replay RSS            %.0f MiB before, peak %.0f MiB (sampled), VmHWM %.0f "
        "MiB (the publish included)\n\n",
        double(rss_before) / 1024, double(peak_kb) / 1024, double(hwm) / 1024);
  }
  replay.child->stop(std::chrono::seconds(10));
  return held;
}

bool run_slow_http(const AbuseOptions& o, nlohmann::json& out) {
  auto redis = start_bench_redis("chessrl-bench-abuse", "everysec");
  ReplayChild replay =
      start_replay_child(*redis, o.bin_dir, {"--probe-listen", "127.0.0.1:0"}, true, "bench abuse");
  if (replay.metrics_port == 0)
    throw Error("bench abuse: chessrl-replay did not say its metrics port");
  const int probe_port = replay.probe_port;
  if (probe_port == 0) throw Error("bench abuse: chessrl-replay did not say its probe port");
  const double baseline = timed_get(replay.metrics_port, "/healthz", 2);
  // The attackers: half a request each, opened again whenever the server drops it.
  std::atomic<bool> stop{false};
  std::atomic<int> opened{0};
  std::vector<std::thread> attackers;
  for (int i = 0; i < o.slow_clients; ++i)
    attackers.emplace_back([&] {
      while (!stop.load()) {
        const int fd = connect_loopback(replay.metrics_port);
        if (fd < 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        ++opened;
        const char half[] = "GET /metrics HTTP/1.1\r\nHost: slow\r\n";
        ::send(fd, half, sizeof half - 1, MSG_NOSIGNAL);
        // Hold it until the server closes it (or the scenario ends).
        while (!stop.load()) {
          pollfd p{fd, POLLIN, 0};
          if (::poll(&p, 1, 100) == 1) {
            char buf[64];
            if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
          }
        }
        ::close(fd);
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(1));  // every attacker connected
  std::vector<double> latencies, probe_latencies;
  int answered = 0, probe_answered = 0;
  for (int i = 0; i < o.probes; ++i) {
    const double t = timed_get(replay.metrics_port, "/healthz", 2);
    if (t >= 0) {
      ++answered;
      latencies.push_back(t);
    }
    const double p = timed_get(probe_port, "/healthz", 2);
    if (p >= 0) {
      ++probe_answered;
      probe_latencies.push_back(p);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  stop = true;
  for (auto& t : attackers) t.join();
  const auto median_ms = [](const std::vector<double>& v) {
    return v.empty() ? nlohmann::json() : nlohmann::json(median(v) * 1000);
  };
  const bool held = probe_answered == o.probes;
  out = {{"clients", o.slow_clients},
         {"probes", o.probes},
         {"healthz_before_ms", baseline < 0 ? nlohmann::json() : nlohmann::json(baseline * 1000)},
         {"metrics_port", {{"answered", answered}, {"median_ms", median_ms(latencies)}}},
         {"probe_port", {{"answered", probe_answered}, {"median_ms", median_ms(probe_latencies)}}},
         {"attack_connections", opened.load()},
         {"bound_held", held}};
  if (!o.json) {
    std::printf("slow-http: %d clients holding half-sent requests on the metrics port\n",
                o.slow_clients);
    std::printf("  /healthz before the attack    %s\n",
                baseline < 0 ? "no answer within 2 s"
                             : (std::to_string(int(baseline * 1000)) + " ms").c_str());
    std::printf("  /healthz under attack         %d of %d answered within 2 s on the metrics port",
                answered, o.probes);
    if (!latencies.empty()) std::printf(" (median %.0f ms)", median(latencies) * 1000);
    std::printf("\n                                %d of %d on the probe port", probe_answered,
                o.probes);
    if (!probe_latencies.empty()) std::printf(" (median %.0f ms)", median(probe_latencies) * 1000);
    std::printf("\n  attack connections opened    %d\n\n", opened.load());
  }
  replay.child->stop(std::chrono::seconds(10));
  return held;
}

}  // namespace

void add_bench_abuse_command(CLI::App& bench) {
  auto o = std::make_shared<AbuseOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "abuse",
      "What a hostile client does to chessrl-replay (over a private redis-server): "
      "position-less games against Redis's memory, large pushes without a token against "
      "its memory, concurrent downloads of a large model against its memory, slow HTTP "
      "clients against /healthz. "
      "Exits 1 when a bound is broken");
  cmd->add_option("--scenario", o->scenario, "empty-games, big-push, downloads, slow-http or all")
      ->check(CLI::IsMember({"empty-games", "big-push", "downloads", "slow-http", "all"}))
      ->capture_default_str();
  cmd->add_option("--games", o->games, "empty-games: position-less games to push")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_option("--slow-clients", o->slow_clients,
                  "slow-http: connections sending half a request")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--probes", o->probes, "slow-http: /healthz requests timed (one a second)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--pushers", o->pushers, "big-push: concurrent clients without a token")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--push-mib", o->push_mib, "big-push: size of each PushGames (MiB)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--downloaders", o->downloaders, "downloads: concurrent GetModel clients")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--model-mib", o->model_mib, "downloads: size of the model version (MiB)")
      ->check(CLI::Range(1, 8192))
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds,
                  "big-push: pushes per client; downloads: GetModel per client")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_flag("--with-token", o->with_token,
                "big-push: the clients hold the self-play token (an insider; the games are "
                "still refused, after being read)");
  cmd->add_option("--replay-arg", o->replay_args, "an option for chessrl-replay (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--bin-dir", o->bin_dir,
                  "where chessrl-replay is (default: beside this program, or the build tree)");
  cmd->add_flag("--json", o->json,
                "Print one JSON document with the figures (a key per scenario, \"ok\") instead "
                "of the report");
  cmd->callback([o] {
    bool ok = true;
    nlohmann::json doc = {{"bench", "abuse"}, {"scenario", o->scenario}};
    const auto run = [&](const char* name, bool (*scenario)(const AbuseOptions&, nlohmann::json&)) {
      if (o->scenario != "all" && o->scenario != name) return;
      std::string key = name;  // empty_games, big_push, downloads, slow_http
      std::replace(key.begin(), key.end(), '-', '_');
      ok = scenario(*o, doc[key]) && ok;
    };
    run("empty-games", run_empty_games);
    run("big-push", run_big_push);
    run("downloads", run_downloads);
    run("slow-http", run_slow_http);
    if (o->json) {
      doc["ok"] = ok;
      print_json_document(doc.dump(2));
    } else {
      std::printf("%s\n", ok ? "OK: every bound held" : "FAILED: a bound was broken (see above)");
    }
    if (!ok) throw Error("bench abuse: a bound was broken");
  });
}

}  // namespace chessrl::tool
