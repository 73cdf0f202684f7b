#include "bench/load_fanin.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bench/load_fanin_report.h"
#include "bench/load_support.h"
#include "bench/replay_shared.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/metrics/http_client.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/rpc/clients.h"
#include "game_pusher.h"

namespace chessrl::tool {
namespace {

using selfplay_service::GamePusher;
using selfplay_service::GamePusherOptions;
using selfplay_service::GamePusherStats;

// What one producer's push calls saw: latencies of answered calls, the ids
// answered STORED or DUPLICATE, failed calls by code and reason.
struct PushRecord {
  std::mutex mutex;
  std::vector<double> latencies_ms;
  std::vector<std::string> stored;
  std::vector<std::string> duplicate;
  std::map<std::string, std::uint64_t> refusals;
  std::map<std::string, std::string> first_refusal;  // the server's words, by label
};

// "RESOURCE_EXHAUSTED rate_limited": the code, and the flag the server's
// message names when it is one of the admission limits.
std::string refusal_label(const std::string& error) {
  std::string label = error_code(error);
  if (error.find("--producer-rate") != std::string::npos) return label + " rate_limited";
  if (error.find("--max-push-calls") != std::string::npos) return label + " busy_calls";
  if (error.find("--max-push-bytes") != std::string::npos) return label + " busy_bytes";
  return label;
}

// As self-play's replay_push(): one channel, one attempt per call (the
// GamePusher retries), recording what came back.
selfplay_service::PushFunction recorded_push(const std::string& address, PushRecord& record) {
  rpc::ClientOptions options;
  options.address = address;
  // Its own connection, as a pod in its own process has: gRPC otherwise
  // shares one among the channels of a process with the same target and arguments.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto channel = rpc::make_channel(options, args);
  return [options, channel, &record](
             const v1::PushGamesRequest& request,
             selfplay_service::Clock::time_point deadline) -> rpc::RpcResult<v1::PushGamesReply> {
    rpc::ClientOptions call = options;
    if (deadline != selfplay_service::Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - selfplay_service::Clock::now());
      if (left.count() <= 0)
        return rpc::RpcFailure{"no time left to push", grpc::StatusCode::DEADLINE_EXCEEDED};
      call.deadline = std::min(call.deadline, left);
    }
    const auto start = Clock::now();
    auto reply = rpc::ReplayClient(call, channel).push_games(request);
    const double ms = seconds_since(start) * 1000;
    std::lock_guard lock(record.mutex);
    if (!reply.ok()) {
      const std::string label = refusal_label(reply.error());
      if (++record.refusals[label] == 1) record.first_refusal[label] = reply.error();
      return reply;
    }
    record.latencies_ms.push_back(ms);
    for (int i = 0; i < reply->results_size() && i < request.games_size(); ++i) {
      const auto status = reply->results(i).status();
      if (status == v1::STORED) record.stored.push_back(request.games(i).id());
      if (status == v1::DUPLICATE) record.duplicate.push_back(request.games(i).id());
    }
    return reply;
  };
}

struct Producer {
  PushRecord record;
  metrics::Registry registry;  // its pusher's counters, as in a pod
  std::unique_ptr<GamePusher> pusher;
  std::uint64_t generated = 0;
  double credit = 0;  // games owed by the rate, fractional
};

// The service as seen from outside, sampled through the run.
struct ServiceWatch {
  long peak_rss_kb = -1;  // VmHWM at the end
  long max_threads = 0;
  long max_descriptors = 0;
  std::size_t metrics_bytes = 0;
  std::size_t metrics_series = 0;
  double scrape_ms_max = 0;
  std::vector<double> scrape_ms;
  std::string last_metrics;
  std::string scrape_error;
};

long descriptors_of(int pid) {
  std::error_code error;
  long n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", error), end;
       !error && it != end; it.increment(error))
    ++n;
  return n;
}

long threads_of(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stol(line.substr(8));
  return -1;
}

void scrape(int port, ServiceWatch& watch) {
  const auto start = Clock::now();
  auto reply = metrics::http_get("127.0.0.1", port, "/metrics", std::chrono::seconds(10));
  const double ms = seconds_since(start) * 1000;
  if (!reply.ok() || reply->status != 200) {
    watch.scrape_error = reply.ok() ? "HTTP " + std::to_string(reply->status) : reply.error();
    return;
  }
  watch.scrape_ms.push_back(ms);
  watch.scrape_ms_max = std::max(watch.scrape_ms_max, ms);
  watch.metrics_bytes = reply->body.size();
  std::istringstream lines(reply->body);
  std::string line;
  std::size_t series = 0;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] != '#') ++series;
  watch.metrics_series = series;
  watch.last_metrics = std::move(reply->body);
}

// Sum of the series of `family` whose labels contain `match` (e.g.
// `reason="rate_limited"`), from a Prometheus text page.
double metric_sum(const std::string& page, const std::string& family, const std::string& match) {
  std::istringstream lines(page);
  std::string line;
  double sum = 0;
  while (std::getline(lines, line)) {
    if (line.rfind(family, 0) != 0) continue;
    const char next = line.size() > family.size() ? line[family.size()] : ' ';
    if (next != '{' && next != ' ') continue;
    if (!match.empty() && line.find(match) == std::string::npos) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// Distinct values of `label` in `family`'s series.
std::set<std::string> label_values(const std::string& page, const std::string& family,
                                   const std::string& label) {
  std::set<std::string> values;
  std::istringstream lines(page);
  std::string line;
  const std::string key = label + "=\"";
  while (std::getline(lines, line)) {
    if (line.rfind(family + "{", 0) != 0) continue;
    const auto at = line.find(key);
    if (at == std::string::npos) continue;
    const auto from = at + key.size();
    values.insert(line.substr(from, line.find('"', from) - from));
  }
  return values;
}

// Raises the open-file limit to what `producers` channels on both sides need
// (each connection is a descriptor here and one in chessrl-replay, which
// inherits the limit).
void raise_file_limit(int producers) {
  const rlim_t wanted = static_cast<rlim_t>(producers) * 4 + 1024;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted)
    throw Error("bench load: " + std::to_string(producers) + " producers need " +
                std::to_string(wanted) + " open files; the hard limit is " +
                std::to_string(limit.rlim_max) + " (raise it: ulimit -Hn " +
                std::to_string(wanted) + ", as root)");
  limit.rlim_cur = wanted;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error("bench load: could not raise the open-file limit to " + std::to_string(wanted));
}

std::string num(double v, const char* format = "%.0f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

int run_fanin_bench(const FanInOptions& o) {
  raise_file_limit(o.producers);
  const std::vector<v1::Game> pool = synthetic_game_pool(o.plies, o.target_fraction, "bench-load");
  double pool_bytes = 0;
  for (const auto& g : pool) pool_bytes += static_cast<double>(g.ByteSizeLong());
  std::fprintf(
      o.json ? stderr : stdout,
      "chessrl bench load: %d producers (self-play's GamePusher: %d-game buffer, %d-game pushes, "
      "one channel and producer name each) at %s, %d samplers, %.0f s; chessrl-replay over %d "
      "redis-server%s (appendfsync always); games of %.0f bytes on average\n",
      o.producers, o.buffer_games, o.push_batch,
      o.overload > 0
          ? ("first their full speed, then " + num(o.overload, "%.1f") + "x it, then half of it")
                .c_str()
          : (num(o.rate, "%.3f") + " games/s each").c_str(),
      o.samplers, o.seconds, o.shards, o.shards == 1 ? "" : "s", pool_bytes / 256);
  std::fflush(o.json ? stderr : stdout);

  std::vector<std::unique_ptr<harness::RedisServer>> shards;
  for (int i = 0; i < o.shards; ++i)
    shards.push_back(start_bench_redis("chessrl-bench-load", "always"));
  std::vector<std::string> extra = {"--window-positions", "68719476736"};  // nothing evicted
  if (o.shards > 1) {
    std::string addresses;
    for (const auto& s : shards)
      addresses +=
          (addresses.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    extra.insert(extra.end(), {"--redis-shards", addresses});
  }
  ReplayChild replay = start_replay_child(*shards[0], o.bin_dir, extra, true, "bench load");
  const int pid = replay.child->pid();
  const std::string address = "127.0.0.1:" + std::to_string(replay.port);

  std::vector<std::unique_ptr<Producer>> producers;
  std::atomic<std::uint64_t> log_lines{0};
  std::mutex log_mutex;
  std::vector<std::string> first_logs;
  GamePusherOptions pusher_options;
  pusher_options.buffer_games = static_cast<std::size_t>(o.buffer_games);
  pusher_options.batch_games = static_cast<std::size_t>(o.push_batch);
  if (auto valid = pusher_options.validate(); !valid.ok())
    throw Error("bench load: " + valid.error());
  for (int p = 0; p < o.producers; ++p) {
    auto producer = std::make_unique<Producer>();
    producer->pusher = std::make_unique<GamePusher>(
        recorded_push(address, producer->record), pusher_options, producer->registry,
        [&, p](const std::string& line) {
          if (log_lines.fetch_add(1) >= 5) return;
          std::lock_guard lock(log_mutex);
          first_logs.push_back("producer " + std::to_string(p) + ": " + line);
        });
    producers.push_back(std::move(producer));
  }

  // The generator: every 20 ms each producer is owed rate * 20 ms games (from a
  // random phase); a negative rate keeps every buffer at two pushes' worth (full speed).
  std::atomic<double> rate{o.overload > 0 ? -1.0 : o.rate};
  std::atomic<bool> stop_generating{false};
  std::thread generator([&] {
    std::mt19937_64 random(1);
    std::uniform_real_distribution<double> phase(0, 1);
    for (auto& p : producers) p->credit = phase(random);
    auto last = Clock::now();
    while (!stop_generating.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const auto now = Clock::now();
      const double dt = std::chrono::duration<double>(now - last).count();
      last = now;
      const double r = rate.load();
      for (std::size_t i = 0; i < producers.size(); ++i) {
        Producer& p = *producers[i];
        std::size_t owed = 0;
        if (r < 0) {
          const std::size_t full = 2 * static_cast<std::size_t>(o.push_batch);
          const std::size_t held = p.pusher->buffered();
          owed = held < full ? full - held : 0;
        } else {
          p.credit += r * dt;
          owed = static_cast<std::size_t>(p.credit);
          p.credit -= static_cast<double>(owed);
        }
        for (std::size_t k = 0; k < owed; ++k) {
          v1::Game game = pool[(i * 7919 + p.generated) % pool.size()];
          game.set_id("fanin-" + std::to_string(i) + "-" + std::to_string(p.generated++));
          game.set_producer("fanin-" + std::to_string(i));
          p.pusher->add(std::move(game));
        }
      }
    }
  });
  std::atomic<bool> stop_sampling{false};
  std::vector<std::thread> samplers;
  std::atomic<std::uint64_t> sample_calls{0}, sample_failures{0};
  for (int s = 0; s < o.samplers; ++s)
    samplers.emplace_back([&] {
      rpc::ClientOptions options;
      options.address = address;
      rpc::ReplayClient client(options);
      while (!stop_sampling.load()) {
        if (client.sample(static_cast<std::uint32_t>(o.sample_count)).ok()) {
          ++sample_calls;
        } else {
          ++sample_failures;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
    });

  const auto totals = [&] {
    GamePusherStats sum;
    for (auto& p : producers) {
      const auto s = p->pusher->stats();
      sum.added += s.added;
      sum.stored += s.stored;
      sum.duplicates += s.duplicates;
      sum.unexpected_duplicates += s.unexpected_duplicates;
      sum.rejected += s.rejected;
      sum.dropped += s.dropped;
      sum.shed += s.shed;
      sum.store_failed += s.store_failed;
      sum.failures += s.failures;
      sum.buffered += s.buffered;
    }
    return sum;
  };
  ServiceWatch watch;
  ProgressLine progress;
  const auto start = Clock::now();
  Clock::time_point last_scrape{}, last_note = Clock::now();
  std::string phase = o.overload > 0 ? "full speed" : "steady";
  const auto wait_until = [&](auto done) {
    while (!done()) {
      if (Clock::now() - last_scrape > std::chrono::seconds(10)) {
        scrape(replay.metrics_port, watch);
        watch.max_threads = std::max(watch.max_threads, threads_of(pid));
        watch.max_descriptors = std::max(watch.max_descriptors, descriptors_of(pid));
        last_scrape = Clock::now();
      }
      const auto t = totals();
      if (!::isatty(STDERR_FILENO) && Clock::now() - last_note > std::chrono::seconds(30)) {
        std::fprintf(
            stderr,
            "bench load (%s): %.0f s, %llu games made, %llu pushed, %zu buffered, %llu shed\n",
            phase.c_str(), seconds_since(start), (unsigned long long)t.added,
            (unsigned long long)t.pushed(), t.buffered, (unsigned long long)t.shed);
        last_note = Clock::now();
      }
      progress.show(
          "bench load (%s): %.0f s, %llu games made, %llu pushed, %zu buffered, %llu shed",
          phase.c_str(), seconds_since(start), (unsigned long long)t.added,
          (unsigned long long)t.pushed(), t.buffered, (unsigned long long)t.shed);
      if (replay.child->exited())
        throw Error("bench load: chessrl-replay exited during the run (" + replay.child->status() +
                    "):\n" + log_tail(replay.log_path, 20));
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  };
  const auto after = [&](double s) { return [&, s] { return seconds_since(start) >= s; }; };

  std::unique_ptr<Process> restarted;
  double capacity = 0, recovered_after = -1, overload_rss_peak_mib = 0;
  double overload_throughput = 0, half_load = 0;
  std::uint64_t shed_at_overload_end = 0;
  double run_seconds = 0;
  std::uint64_t generated_in_run = 0;
  try {
    if (o.overload > 0) {
      // Full speed: what the service takes, from the second half of the phase
      // (the first has 1,000 connections made and buffers filled).
      wait_until(after(o.measure_seconds / 2));
      const auto pushed_before = totals().pushed();
      const auto from = Clock::now();
      wait_until(after(o.measure_seconds));
      capacity = static_cast<double>(totals().pushed() - pushed_before) / seconds_since(from);
      phase = "overload";
      rate = o.overload * capacity / o.producers;
      const auto overload_start = Clock::now();
      const auto pushed_at_overload = totals().pushed();
      wait_until(after(o.measure_seconds + o.seconds));
      overload_throughput = static_cast<double>(totals().pushed() - pushed_at_overload) /
                            seconds_since(overload_start);
      shed_at_overload_end = totals().shed;
      overload_rss_peak_mib = static_cast<double>(rss_kb(pid, true)) / 1024;
      phase = "half load";
      // Half of what the service takes: of the lower of the two measures (on
      // a shared machine the overload's own generator takes from it).
      const double half = 0.5 * std::min(capacity, overload_throughput);
      half_load = half;
      rate = half / o.producers;
      const auto dropped = Clock::now();
      // Drained: what is buffered is no more than two seconds of the load.
      wait_until([&] {
        return totals().buffered <= static_cast<std::size_t>(2 * half) + o.producers ||
               seconds_since(dropped) > o.recover_limit;
      });
      if (seconds_since(dropped) <= o.recover_limit) recovered_after = seconds_since(dropped);
    } else {
      if (o.kill_shard_at >= 0) {
        wait_until(after(o.kill_shard_at));
        phase = "shard down";
        shards.back()->kill();
        std::this_thread::sleep_for(std::chrono::duration<double>(o.restart_after));
        restarted = restart_redis(*shards.back(), std::chrono::seconds(120));
        phase = "steady";
      }
      wait_until(after(o.seconds));
    }
    run_seconds = seconds_since(start);
    rate = 0;
    generated_in_run = totals().added;
    phase = "draining";
    const auto drain_start = Clock::now();
    wait_until(
        [&] { return totals().buffered == 0 || seconds_since(drain_start) > o.drain_seconds; });
  } catch (...) {
    stop_generating = true;
    generator.join();
    stop_sampling = true;
    for (auto& t : samplers) t.join();
    for (auto& p : producers) p->pusher->flush(std::chrono::milliseconds(1));
    throw;
  }
  stop_generating = true;
  generator.join();
  stop_sampling = true;
  for (auto& t : samplers) t.join();
  progress.clear();
  scrape(replay.metrics_port, watch);
  watch.max_threads = std::max(watch.max_threads, threads_of(pid));
  watch.peak_rss_kb = rss_kb(pid, true);

  // The producers' view.
  std::uint64_t unresolved = 0;
  for (auto& p : producers) unresolved += p->pusher->flush(std::chrono::milliseconds(1));
  const GamePusherStats t = totals();
  std::vector<double> latencies;
  std::map<std::string, std::uint64_t> refusals;
  std::map<std::string, std::string> first_refusal;
  std::unordered_map<std::string, int> acked;
  std::uint64_t stored_twice = 0;
  for (auto& p : producers) {
    std::lock_guard lock(p->record.mutex);
    latencies.insert(latencies.end(), p->record.latencies_ms.begin(), p->record.latencies_ms.end());
    for (const auto& [k, n] : p->record.refusals) refusals[k] += n;
    for (const auto& [k, text] : p->record.first_refusal) first_refusal.try_emplace(k, text);
    for (const auto& id : p->record.stored)
      if (++acked[id] == 2) ++stored_twice;
    for (const auto& id : p->record.duplicate) acked.try_emplace(id, 0);
  }

  // Redis's view, shard by shard.
  std::unordered_map<std::string, int> in_windows;
  std::vector<std::uint64_t> shard_positions;
  std::uint64_t missing_positions = 0, missing_markers = 0;
  for (const auto& s : shards) {
    WindowScan scan = scan_window(*s);
    shard_positions.push_back(scan.positions);
    missing_positions += scan.missing_positions;
    missing_markers += scan.missing_markers;
    for (auto& id : scan.ids) ++in_windows[id];
  }
  std::uint64_t lost = 0, window_duplicates = 0, unacknowledged = 0;
  for (const auto& [id, n] : acked)
    if (!in_windows.contains(id)) ++lost;
  for (const auto& [id, n] : in_windows) {
    if (n > 1) ++window_duplicates;
    if (!acked.contains(id)) ++unacknowledged;
  }
  replay.child->stop(std::chrono::seconds(10));
  // Each channel's poller stops within its 100 ms slice: 1,000 of them one
  // after the other would take 100 s.
  {
    std::vector<std::thread> closers;
    const std::size_t per = 16;
    for (std::size_t first = 0; first < producers.size(); first += per)
      closers.emplace_back([&, first] {
        for (std::size_t i = first; i < std::min(first + per, producers.size()); ++i)
          producers[i]->pusher.reset();
      });
    for (auto& c : closers) c.join();
  }

  // The report.
  FanInReport r;
  r.run_seconds = run_seconds;
  r.capacity = capacity;
  r.overload_throughput = overload_throughput;
  r.half_load = half_load;
  r.shed_at_overload_end = shed_at_overload_end;
  r.recovered_after = recovered_after;
  r.overload_rss_peak_mib = overload_rss_peak_mib;
  r.generated = generated_in_run;
  r.pushed = t.pushed();
  r.shed = t.shed;
  r.store_failed = t.store_failed;
  r.retry_duplicates = t.duplicates;
  r.rejected = t.rejected;
  r.dropped = t.dropped;
  r.unexpected_duplicates = t.unexpected_duplicates;
  r.unresolved = unresolved;
  r.push_latencies_ms = std::move(latencies);
  r.refusals = std::move(refusals);
  r.first_refusal = std::move(first_refusal);
  r.sample_calls = sample_calls;
  r.sample_failures = sample_failures;
  r.rate_limited = metric_sum(watch.last_metrics, "chessrl_replay_games_refused_total",
                              "reason=\"rate_limited\"");
  r.busy_refused = metric_sum(watch.last_metrics, "chessrl_replay_pushes_refused_total", "");
  r.lost = lost;
  r.window_duplicates = window_duplicates;
  r.stored_twice = stored_twice;
  r.missing_positions = missing_positions;
  r.missing_markers = missing_markers;
  r.unacknowledged = unacknowledged;
  r.shard_positions = shard_positions;
  for (const auto& s : shards)
    r.shard_used_memory.push_back(redis_memory_field(*s, "used_memory_human"));
  r.peak_rss_kb = watch.peak_rss_kb;
  r.max_threads = watch.max_threads;
  r.max_descriptors = watch.max_descriptors;
  r.metrics_bytes = watch.metrics_bytes;
  r.metrics_series = watch.metrics_series;
  r.scrape_ms_median = watch.scrape_ms.empty() ? 0 : median(watch.scrape_ms);
  r.scrape_ms_max = watch.scrape_ms_max;
  r.scrape_error = watch.scrape_error;
  const auto names =
      label_values(watch.last_metrics, "chessrl_replay_producer_games_total", "producer");
  r.producer_labels = names.size();
  r.producer_labels_other = names.count("(other)");
  r.replay_exit = replay.child->status();
  r.log_lines = log_lines.load();
  r.first_logs = first_logs;
  if (o.json) {
    print_json_document(fanin_report_json(o, r).dump(2));
  } else {
    print_fanin_report(o, r);
  }
  const bool ok = r.ok();
  return ok ? 0 : 1;
}

}  // namespace chessrl::tool
