// `chessrl bench fanout`'s follower run: --followers runtime::ModelFollowers
// (the real registry client and policy, each on a connection of its own, a
// loader that keeps no bytes), spread round-robin over --replicas
// chessrl-replay processes over one redis-server, while a publisher sends
// --versions random blobs of --model-bytes to the first replica every
// --interval. Per follower and version it records when it first heard of the
// version (on_announced), when it held it (the loader ran: the bytes arrived
// whole and passed their CRC) and each failed download's code; per version,
// Redis's output bytes; over the run, replay's peak RSS and CPU. The tables,
// or with --json one JSON document of the same figures (seconds; never: null).
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/fanout.h"
#include "bench/load_support.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model.h"
#include "chessrl/runtime/model_follower.h"

namespace chessrl::tool::fanout {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr double kNotifyBound = 2;  // seconds from publish to every follower knowing
constexpr double kBaseMiB = 256;    // replay RSS allowed beside its cache's bound
constexpr double kHoldMarks[] = {2, 5, 10, 30, 60};
constexpr long kMinFreeMiB = 2048;  // the run stops when the machine has less left

// One follower's record (seconds since the bench started), written from its threads.
struct FollowerRecord {
  std::mutex mutex;
  std::vector<double> announced;  // [version]: first heard of it or a newer one
  std::vector<double> held;       // [version]: the loader had it (or a newer one)
  std::vector<std::map<grpc::StatusCode, int>> failures;  // [version]: failed downloads by code
  explicit FollowerRecord(int versions)
      : announced(std::size_t(versions) + 1, kNever),
        held(std::size_t(versions) + 1, kNever),
        failures(std::size_t(versions) + 1) {}
  // Marks every version up to `version` not marked yet.
  static void mark(std::vector<double>& times, std::uint64_t version, double at) {
    for (std::size_t v = std::min<std::size_t>(version, times.size() - 1); v >= 1; --v) {
      if (times[v] != kNever) break;
      times[v] = at;
    }
  }
};

struct VersionFigures {
  double published = 0;  // when publish() returned
  double publish_seconds = 0;
  double window = 0;           // from `published` to the next publish (or the run's end)
  std::vector<double> notify;  // delays of the followers notified within the window
  int never_notified = 0;
  int late_notified = 0;     // notified, but after kNotifyBound
  std::vector<double> hold;  // delay per follower (kNever: not within the window)
  int unavailable_max = 0, unavailable_total = 0;
  int failures_max = 0;  // failed downloads of one follower, any code
  std::map<grpc::StatusCode, int> other_failures;
  double redis_bytes = 0;  // INFO output over the window less the idle baseline
};

struct RunFigures {
  double bloop = 0;  // bytes/s
  double bound = 0;  // seconds within which 99% must hold a version
  std::vector<VersionFigures> versions;
  std::vector<long> replay_hwm_kb;
  std::vector<double> replay_cpu_share;
  double redis_cpu_share = 0, bench_cpu_share = 0;
  long bench_hwm_kb = 0;
  int bench_threads = 0;
  double baseline_bytes_per_s = 0;
  std::string load_before, load_after;
};

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

int own_threads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return 0;
}

// The smallest t with at least `fraction` of `delays` <= t; kNever when not reached.
double time_for(std::vector<double> delays, double fraction) {
  if (delays.empty()) return kNever;
  std::sort(delays.begin(), delays.end());
  const auto need = static_cast<std::size_t>(std::ceil(fraction * double(delays.size())));
  return delays[std::max<std::size_t>(need, 1) - 1];
}

double share_within(const std::vector<double>& delays, double seconds) {
  if (delays.empty()) return 0;
  const auto n =
      std::count_if(delays.begin(), delays.end(), [&](double d) { return d <= seconds; });
  return double(n) / double(delays.size());
}

std::string seconds_text(double s) { return s == kNever ? "never" : format("%.2f s", s); }

VersionFigures figures_for(std::vector<std::unique_ptr<FollowerRecord>>& records, int version,
                           double published, double window_end) {
  VersionFigures f;
  f.published = published;
  f.window = window_end - published;
  for (auto& r : records) {
    std::lock_guard lock(r->mutex);
    const auto v = std::size_t(version);
    const double heard = r->announced[v];
    if (heard > window_end) {
      ++f.never_notified;
    } else {
      const double delay = std::max(0.0, heard - published);
      f.notify.push_back(delay);
      if (delay > kNotifyBound) ++f.late_notified;
    }
    f.hold.push_back(r->held[v] <= window_end ? std::max(0.0, r->held[v] - published) : kNever);
    int unavailable = 0, failed = 0;
    for (const auto& [code, n] : r->failures[v]) {
      failed += n;
      if (code == grpc::StatusCode::UNAVAILABLE)
        unavailable += n;
      else
        f.other_failures[code] += n;
    }
    f.unavailable_max = std::max(f.unavailable_max, unavailable);
    f.failures_max = std::max(f.failures_max, failed);
    f.unavailable_total += unavailable;
  }
  return f;
}

std::string code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    default:
      return "code " + std::to_string(int(code));
  }
}

std::string failures_text(const std::map<grpc::StatusCode, int>& failures) {
  std::string s;
  for (const auto& [code, n] : failures)
    s += (s.empty() ? "" : ", ") + code_name(code) + " " + std::to_string(n);
  return s.empty() ? "0" : s;
}

std::string hold_marks_text(const VersionFigures& f) {
  std::string s;
  for (double mark : kHoldMarks)
    s += (s.empty() ? "" : " / ") + format("%.0f", 100 * share_within(f.hold, mark));
  return s;
}

void print_progress(std::FILE* out, int version, const VersionFigures& f, int replicas) {
  std::vector<double> notify = f.notify;
  std::fprintf(
      out,
      "v%d: notified p50 %s / p99 %s / max %s s, %d never; holding at 2/5/10/30/60 s: %s %%, "
      "99%% at %s, 100%% at %s; UNAVAILABLE %d (at most %d per follower); other failures %s; "
      "Redis out %s per replay\n",
      version, format("%.2f", percentile(notify, 0.5)).c_str(),
      format("%.2f", percentile(notify, 0.99)).c_str(),
      format("%.2f", percentile(notify, 1.0)).c_str(), f.never_notified, hold_marks_text(f).c_str(),
      seconds_text(time_for(f.hold, 0.99)).c_str(), seconds_text(time_for(f.hold, 1.0)).c_str(),
      f.unavailable_total, f.unavailable_max, failures_text(f.other_failures).c_str(),
      human_bytes(f.redis_bytes / replicas).c_str());
  std::fflush(out);
}

// --json: a time in seconds, kNever as null.
nlohmann::json seconds_json(double s) { return s == kNever ? nlohmann::json() : nlohmann::json(s); }

nlohmann::json failures_json(const std::map<grpc::StatusCode, int>& failures) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [code, n] : failures) out[code_name(code)] = n;
  return out;
}

int print_report(const FanoutOptions& o, const Fleet& fleet, RunFigures& run) {
  const double s = double(o.model_bytes);
  nlohmann::json doc = {{"bench", "fanout"},
                        {"mode", "followers"},
                        {"followers", o.followers},
                        {"replicas", o.replicas},
                        {"versions_published", o.versions},
                        {"interval_s", o.interval},
                        {"model_bytes", o.model_bytes},
                        {"bloop_downloads", o.bloop_downloads},
                        {"bloop_bytes_per_second", run.bloop},
                        {"hold_bound_s", run.bound},
                        {"redis_idle_bytes_per_second", run.baseline_bytes_per_s},
                        {"versions", nlohmann::json::array()}};
  if (!o.json) {
    std::printf(
        "\n| version | notified p50 / p99 / max (s) | never notified | holding at 2 / 5 / "
        "10 / 30 / 60 s (%%) | 99%% / 100%% hold | UNAVAILABLE total (max per "
        "follower) | other failures | failures per follower, most | Redis out per replay |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n");
  }
  double worst_notify = 0, worst_99 = 0, worst_redis = 0;
  int never = 0, late = 0, not_all = 0, worst_unavailable = 0;
  for (std::size_t i = 0; i < run.versions.size(); ++i) {
    VersionFigures& f = run.versions[i];
    std::vector<double> notify = f.notify;
    const double p99 = time_for(f.hold, 0.99), all = time_for(f.hold, 1.0);
    nlohmann::json holding = nlohmann::json::object();
    for (double mark : kHoldMarks) holding[format("%.0f", mark)] = share_within(f.hold, mark);
    doc["versions"].push_back({{"version", i + 1},
                               {"publish_s", f.publish_seconds},
                               {"window_s", f.window},
                               {"notified_p50_s", percentile(notify, 0.5)},
                               {"notified_p99_s", percentile(notify, 0.99)},
                               {"notified_max_s", percentile(notify, 1.0)},
                               {"never_notified", f.never_notified},
                               {"late_notified", f.late_notified},
                               {"holding_within_s", holding},
                               {"hold_99_s", seconds_json(p99)},
                               {"hold_100_s", seconds_json(all)},
                               {"unavailable_total", f.unavailable_total},
                               {"unavailable_max", f.unavailable_max},
                               {"other_failures", failures_json(f.other_failures)},
                               {"failures_max", f.failures_max},
                               {"redis_bytes_per_replay", f.redis_bytes / o.replicas}});
    if (!o.json)
      std::printf("| %zu | %.2f / %.2f / %.2f | %d | %s | %s / %s | %d (%d) | %s | %d | %s |\n",
                  i + 1, percentile(notify, 0.5), percentile(notify, 0.99), percentile(notify, 1.0),
                  f.never_notified, hold_marks_text(f).c_str(), seconds_text(p99).c_str(),
                  seconds_text(all).c_str(), f.unavailable_total, f.unavailable_max,
                  failures_text(f.other_failures).c_str(), f.failures_max,
                  human_bytes(f.redis_bytes / o.replicas).c_str());
    worst_notify = std::max(worst_notify, percentile(notify, 1.0));
    never += f.never_notified;
    late += f.late_notified;
    worst_99 = std::max(worst_99, p99);
    not_all += int(std::count(f.hold.begin(), f.hold.end(), kNever));
    worst_unavailable = std::max(worst_unavailable, f.unavailable_max);
    worst_redis = std::max(worst_redis, f.redis_bytes / o.replicas);
  }
  long worst_hwm = 0;
  for (std::size_t i = 0; i < fleet.replicas.size(); ++i) {
    worst_hwm = std::max(worst_hwm, run.replay_hwm_kb[i]);
    doc["replay"].push_back({{"replica", i},
                             {"peak_rss_mib", double(run.replay_hwm_kb[i]) / 1024},
                             {"cpu_share", run.replay_cpu_share[i]}});
  }
  doc["redis_cpu_share"] = run.redis_cpu_share;
  doc["this_bench"] = {{"cpu_share", run.bench_cpu_share},
                       {"threads", run.bench_threads},
                       {"peak_rss_mib", double(run.bench_hwm_kb) / 1024}};
  doc["load_average"] = {{"start", run.load_before}, {"end", run.load_after}};
  doc["replay_cache_bound_bytes"] =
      fleet.cache_flag.empty() ? nlohmann::json() : nlohmann::json(fleet.cache_bound);
  if (!o.json) {
    std::printf("\n| measure | value |\n| --- | ---: |\n");
    std::printf("| followers x replicas x versions | %d x %d x %d, every %.0f s |\n", o.followers,
                o.replicas, o.versions, o.interval);
    std::printf("| model size S | %s |\n", human_bytes(s).c_str());
    std::printf("| B_loop (%d sequential GetModel, one replay) | %s/s |\n", o.bloop_downloads,
                human_bytes(run.bloop).c_str());
    std::printf("| hold bound max(10 s, 1.5 x N x S / B_loop) | %.1f s |\n", run.bound);
    std::printf("| Redis output while idle (subtracted) | %s/s |\n",
                human_bytes(run.baseline_bytes_per_s).c_str());
    for (std::size_t i = 0; i < fleet.replicas.size(); ++i)
      std::printf("| replay %zu peak RSS (VmHWM) / CPU share of a core | %.0f MiB / %.1f %% |\n", i,
                  double(run.replay_hwm_kb[i]) / 1024, 100 * run.replay_cpu_share[i]);
    std::printf("| redis-server CPU share of a core | %.1f %% |\n", 100 * run.redis_cpu_share);
    std::printf(
        "| this bench: CPU share of a core / threads / peak RSS | %.1f %% / %d / %.0f MiB |\n",
        100 * run.bench_cpu_share, run.bench_threads, double(run.bench_hwm_kb) / 1024);
    std::printf("| load average at start / end | %s / %s |\n", run.load_before.c_str(),
                run.load_after.c_str());
    std::printf(
        "| replay cache bound | %s |\n",
        fleet.cache_flag.empty()
            ? "none (no --model-cache flag)"
            : (human_bytes(double(fleet.cache_bound)) + " from " + fleet.cache_flag).c_str());
  }

  const double rss_limit_mib = kBaseMiB + double(fleet.cache_bound) / (1 << 20);
  struct Criterion {
    bool ok;
    std::string text;
  };
  const std::vector<Criterion> criteria = {
      {never == 0 && late == 0, "every follower notified within 2 s of each publish (slowest " +
                                    format("%.2f", worst_notify) + " s; " + std::to_string(late) +
                                    " later, " + std::to_string(never) + " never)"},
      {worst_99 <= run.bound, "99% hold each version within " + format("%.1f", run.bound) +
                                  " s (slowest: " + seconds_text(worst_99) + ")"},
      {not_all == 0, "100% hold each version before the next publish (" + std::to_string(not_all) +
                         " follower-versions missed)"},
      {worst_redis <= 2 * s, "Redis serves at most 2 x S = " + human_bytes(2 * s) +
                                 " per version per replay (most: " + human_bytes(worst_redis) +
                                 ")"},
      {worst_unavailable <= 1, "at most one UNAVAILABLE per follower per version (most: " +
                                   std::to_string(worst_unavailable) + ")"},
      {double(worst_hwm) / 1024 <= rss_limit_mib,
       "replay peak RSS <= 256 MiB + cache bound = " + format("%.0f", rss_limit_mib) +
           " MiB (most: " + format("%.0f", double(worst_hwm) / 1024) + " MiB)"},
  };
  if (!o.json) std::printf("\n");
  bool ok = true;
  for (const auto& c : criteria) {
    if (!o.json) std::printf("%s: %s\n", c.ok ? "PASS" : "FAIL", c.text.c_str());
    doc["criteria"].push_back({{"pass", c.ok}, {"what", c.text}});
    ok = ok && c.ok;
  }
  doc["ok"] = ok;
  if (o.json) print_json_document(doc.dump(2));
  return ok ? 0 : 1;
}

}  // namespace

int run_fanout(const FanoutOptions& o) {
  // Each follower: a connection here and one in its replay process, and ~4 threads.
  raise_file_limit(std::uint64_t(o.followers) * 4 + 1024);
  // The followers stand for pods, each with a heap of its own; in one process
  // glibc would keep every freed model-sized buffer of its arenas (its mmap
  // threshold rises to the largest block freed), up to 15 GiB here for 1,000
  // followers of 14 MB. Blocks of 1 MiB and more go back to the system when freed.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const auto t0 = Clock::now();
  auto now = [&] { return seconds_since(t0); };
  RunFigures run;
  run.load_before = loadavg();
  std::FILE* const lines = o.json ? stderr : stdout;  // what is said as it runs
  std::fprintf(
      lines,
      "chessrl bench fanout: %d followers (runtime::ModelFollower, a connection each, a loader "
      "that keeps no bytes) over %d chessrl-replay (%s) over one redis-server; %d versions of "
      "%s every %.0f s published to the first replica\n",
      o.followers, o.replicas,
      o.replay_binary.empty() ? "built beside chessrl" : o.replay_binary.c_str(), o.versions,
      human_bytes(double(o.model_bytes)).c_str(), o.interval);
  std::fflush(lines);
  ProgressLine progress;
  Fleet fleet = start_redis(o);
  progress.show("measuring B_loop (%d sequential downloads)", o.bloop_downloads);
  run.bloop = measure_bloop(fleet, o);
  run.bound = std::max(10.0, 1.5 * o.followers * double(o.model_bytes) / run.bloop);
  std::fprintf(lines, "B_loop %s/s: the 99%% hold bound is %.1f s\n",
               human_bytes(run.bloop).c_str(), run.bound);
  start_replicas(fleet, o.replicas, o);
  const std::vector<std::string> addresses = fleet.addresses();

  std::vector<std::unique_ptr<FollowerRecord>> records;
  std::vector<std::unique_ptr<runtime::ModelFollower>> followers;
  for (int i = 0; i < o.followers; ++i) {
    records.push_back(std::make_unique<FollowerRecord>(o.versions));
    FollowerRecord* record = records.back().get();
    runtime::ModelFollowerOptions f;
    f.registry.address = addresses[std::size_t(i) % addresses.size()];
    // As self-play sets it: one attempt per call (the follower owns the retry).
    f.registry.deadline = std::chrono::seconds(10);
    f.registry.attempts = 1;
    // A channel argument of its own, so this follower gets a connection of its
    // own as a pod does (gRPC shares one among a process's channels with the
    // same target and arguments); no DNS name is resolved here, so it changes nothing else.
    f.registry.dns_min_reresolution = std::chrono::milliseconds(1000 + i);
    f.loader = [record, now](const std::string&, std::uint64_t version) {
      {
        std::lock_guard lock(record->mutex);
        FollowerRecord::mark(record->held, version, now());
      }
      runtime::ModelLoad load;
      load.model = runtime::uniform_model();
      load.model->version = version;
      return load;
    };
    f.on_announced = [record, now](std::uint64_t version) {
      std::lock_guard lock(record->mutex);
      FollowerRecord::mark(record->announced, version, now());
    };
    f.on_download_failed = [record](std::uint64_t version, grpc::StatusCode code) {
      std::lock_guard lock(record->mutex);
      if (version < record->failures.size()) ++record->failures[version][code];
    };
    followers.push_back(std::make_unique<runtime::ModelFollower>(std::move(f)));
    if (i % 50 == 49) progress.show("followers started: %d / %d", i + 1, o.followers);
  }
  // As self-play does between games: take what is ready, so the next version is fetched.
  std::atomic<bool> stop_taking{false};
  std::thread taker([&] {
    while (!stop_taking.load()) {
      for (auto& f : followers)
        if (f->ready().load()) f->take();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  // Smaller blocks freed by the downloads' threads stay in glibc's heaps; given
  // back every few seconds, or 1,000 followers of 14 MB would hold gigabytes
  // more each version (a pod, with one download at a time, does not).
  std::thread trimmer([&] {
    while (!stop_taking.load()) {
      ::malloc_trim(0);
      for (int i = 0; i < 20 && !stop_taking.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto stop_followers = [&] {
    stop_taking = true;
    taker.join();
    trimmer.join();
    for (auto& f : followers) f->request_stop();  // all wind down at once
    followers.clear();
  };

  try {
    const double settle = o.settle > 0 ? o.settle : std::max(3.0, o.followers / 250.0);
    for (double until = now() + settle; now() < until;) {
      progress.show("followers settling: %.0f / %.0f s", now() - (until - settle), settle);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // What Redis sends while nothing is published (replay's pollers), subtracted per version.
    progress.show("measuring Redis's idle output (5 s)");
    const double base_from = redis_output_bytes(*fleet.redis), base_at = now();
    std::this_thread::sleep_for(std::chrono::seconds(5));
    run.baseline_bytes_per_s =
        std::max(0.0, (redis_output_bytes(*fleet.redis) - base_from) / (now() - base_at));

    rpc::ClientOptions publisher_options;
    publisher_options.address = addresses[0];
    publisher_options.deadline = std::chrono::seconds(120);
    rpc::ModelRegistryClient publisher(publisher_options);
    std::vector<double> cpu_from;
    for (const auto& r : fleet.replicas) cpu_from.push_back(process_cpu_seconds(r.child->pid()));
    const double redis_cpu_from = process_cpu_seconds(fleet.redis_pid);
    const double own_cpu_from = own_cpu_seconds();
    const double first = now();
    std::vector<double> started(std::size_t(o.versions) + 1), published(started);
    std::vector<double> out_bytes(std::size_t(o.versions) + 2);
    std::string blob = random_blob(o.model_bytes, 1);
    for (int v = 1; v <= o.versions + 1; ++v) {
      const double at = first + (v - 1) * o.interval;
      while (now() < at) {
        progress.show("v%d in %.0f s", v, at - now());
        // The followers' buffers grow with each version (gRPC's, 1,000
        // connections in one process): stop before the kernel kills something.
        if (const long left = mem_available_mib(); left >= 0 && left < kMinFreeMiB)
          throw Error("bench fanout: the machine has " + std::to_string(left) +
                      " MiB of memory left (this process holds " +
                      std::to_string(rss_kb(::getpid()) / 1024) + " MiB); stopped before v" +
                      std::to_string(v) + ": run fewer --versions or --followers");
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      out_bytes[std::size_t(v)] = redis_output_bytes(*fleet.redis);
      if (v > 1) {  // the previous version's window has ended
        VersionFigures f = figures_for(records, v - 1, published[std::size_t(v - 1)], now());
        f.publish_seconds = published[std::size_t(v - 1)] - started[std::size_t(v - 1)];
        f.redis_bytes =
            std::max(0.0, out_bytes[std::size_t(v)] - out_bytes[std::size_t(v - 1)] -
                              run.baseline_bytes_per_s * (now() - started[std::size_t(v - 1)]));
        progress.clear();
        print_progress(lines, v - 1, f, o.replicas);
        run.versions.push_back(std::move(f));
      }
      if (v > o.versions) break;
      v1::ModelInfo info;
      info.set_version(std::uint64_t(v));
      info.set_step(std::uint64_t(v) * 1000);
      started[std::size_t(v)] = now();
      auto reply = publisher.publish(info, blob);
      if (!reply.ok())
        throw Error("bench fanout: publishing v" + std::to_string(v) + ": " + reply.error());
      published[std::size_t(v)] = now();
      if (v < o.versions) blob = random_blob(o.model_bytes, std::uint64_t(v) + 1);
    }
    const double elapsed = now() - first;
    for (std::size_t i = 0; i < fleet.replicas.size(); ++i) {
      const int pid = fleet.replicas[i].child->pid();
      run.replay_cpu_share.push_back((process_cpu_seconds(pid) - cpu_from[i]) / elapsed);
      run.replay_hwm_kb.push_back(rss_kb(pid, true));
    }
    run.redis_cpu_share = (process_cpu_seconds(fleet.redis_pid) - redis_cpu_from) / elapsed;
    run.bench_cpu_share = (own_cpu_seconds() - own_cpu_from) / elapsed;
    run.bench_threads = own_threads();
    run.bench_hwm_kb = rss_kb(::getpid(), true);
    run.load_after = loadavg();
  } catch (...) {
    progress.clear();
    stop_followers();
    throw;
  }
  progress.clear();
  stop_followers();
  for (auto& r : fleet.replicas) r.child->stop(std::chrono::seconds(10));
  return print_report(o, fleet, run);
}

}  // namespace chessrl::tool::fanout
