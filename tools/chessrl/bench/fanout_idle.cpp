// `chessrl bench fanout --idle-watchers N`: N bare WatchModels streams held
// open on one chessrl-replay (a hundred per connection, read through one
// completion queue, so the bench itself costs next to nothing), one small
// version published before they open and none while they are measured:
// replay's CPU share of a core over --idle-seconds (utime + stime from
// /proc) and the Redis calls a second it makes meanwhile (INFO commandstats).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench/fanout.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::tool::fanout {
namespace {

constexpr int kStreamsPerConnection = 100;
constexpr double kCpuBound = 0.05;  // of a core

struct Stream {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientAsyncReader<v1::ModelInfo>> reader;
  v1::ModelInfo info;
  grpc::Status status;
  std::atomic<bool> finished{false};
  std::atomic<int> messages{0};
};

enum Op : std::uintptr_t { kStart = 0, kRead = 1, kFinish = 2 };

void* tag(Stream* s, Op op) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(s) | op);
}

// Drives every stream's reads until the queue shuts down.
void pump(grpc::CompletionQueue& queue) {
  void* got = nullptr;
  bool ok = false;
  while (queue.Next(&got, &ok)) {
    const auto bits = reinterpret_cast<std::uintptr_t>(got);
    Stream* s = reinterpret_cast<Stream*>(bits & ~std::uintptr_t{3});
    switch (static_cast<Op>(bits & 3)) {
      case kStart:
      case kRead:
        if (ok) {
          if ((bits & 3) == kRead) ++s->messages;
          s->reader->Read(&s->info, tag(s, kRead));
        } else {
          s->reader->Finish(&s->status, tag(s, kFinish));
        }
        break;
      case kFinish:
        s->finished = true;
        break;
    }
  }
}

}  // namespace

int run_fanout_idle(const FanoutOptions& o) {
  raise_file_limit(std::uint64_t(o.idle_watchers) / kStreamsPerConnection * 4 + 1024);
  std::fprintf(
      o.json ? stderr : stdout,
      "chessrl bench fanout --idle-watchers: %d WatchModels streams (%d a connection) held open "
      "on one chessrl-replay (%s) for %.0f s, nothing published meanwhile\n",
      o.idle_watchers, kStreamsPerConnection,
      o.replay_binary.empty() ? "built beside chessrl" : o.replay_binary.c_str(), o.idle_seconds);
  std::fflush(o.json ? stderr : stdout);
  ProgressLine progress;
  Fleet fleet = start_redis(o);
  start_replicas(fleet, 1, o);
  const std::string address = fleet.addresses()[0];
  {
    rpc::ClientOptions options;
    options.address = address;
    rpc::ModelRegistryClient publisher(options);
    v1::ModelInfo info;
    info.set_version(1);
    info.set_step(1);
    if (auto r = publisher.publish(info, random_blob(4096, 1)); !r.ok())
      throw Error("bench fanout: publishing the one version: " + r.error());
  }

  grpc::CompletionQueue queue;
  std::thread pumper([&] { pump(queue); });
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::ModelRegistry::Stub>> stubs;
  std::vector<std::unique_ptr<Stream>> streams;
  rpc::ClientOptions channel_options;
  channel_options.address = address;
  channel_options.poll_interval = std::chrono::milliseconds(0);
  for (int i = 0; i < o.idle_watchers; ++i) {
    if (i % kStreamsPerConnection == 0) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
      channels.push_back(rpc::make_channel(channel_options, args));
      stubs.push_back(v1::ModelRegistry::NewStub(channels.back()));
    }
    auto s = std::make_unique<Stream>();
    v1::WatchModelsRequest request;
    s->reader = stubs.back()->PrepareAsyncWatchModels(&s->context, request, &queue);
    s->reader->StartCall(tag(s.get(), kStart));
    streams.push_back(std::move(s));
  }
  // Open: every stream has had its first message (the latest version) or its refusal.
  const auto settle_start = Clock::now();
  auto settled = [&] {
    int n = 0;
    for (const auto& s : streams) n += (s->messages.load() > 0 || s->finished.load()) ? 1 : 0;
    return n;
  };
  int answered = 0;
  while ((answered = settled()) < o.idle_watchers && seconds_since(settle_start) < 60) {
    progress.show("streams answered: %d / %d", answered, o.idle_watchers);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // replay's start-of-stream work done

  const int pid = fleet.replicas[0].child->pid();
  const double cpu_from = process_cpu_seconds(pid), own_from = own_cpu_seconds();
  std::map<std::string, double> calls_from, calls_to;
  const double redis_from = redis_calls(*fleet.redis, &calls_from);
  const auto start = Clock::now();
  while (seconds_since(start) < o.idle_seconds) {
    progress.show("idle: %.0f / %.0f s", seconds_since(start), o.idle_seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double elapsed = seconds_since(start);
  // Less the INFO calls of this measurement (one at each end).
  const double redis_rate = (redis_calls(*fleet.redis, &calls_to) - redis_from - 1) / elapsed;
  const double cpu_share = (process_cpu_seconds(pid) - cpu_from) / elapsed;
  const double own_share = (own_cpu_seconds() - own_from) / elapsed;
  const long hwm = rss_kb(pid, true);
  progress.clear();

  int open = 0;
  std::map<std::string, int> refused;
  for (const auto& s : streams) {
    if (!s->finished.load()) {
      ++open;
    } else {
      ++refused[std::to_string(int(s->status.error_code())) + " " + s->status.error_message()];
    }
  }
  for (const auto& s : streams) s->context.TryCancel();
  for (const auto& s : streams)
    while (!s->finished.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  queue.Shutdown();
  pumper.join();
  fleet.replicas[0].child->stop(std::chrono::seconds(10));

  std::string calls_text;
  for (const auto& [command, n] : calls_to) {
    const double d = n - (calls_from.contains(command) ? calls_from.at(command) : 0);
    if (d > 0) calls_text += (calls_text.empty() ? "" : ", ") + command + " " + format("%.0f", d);
  }
  const bool all_open = open == o.idle_watchers, cpu_ok = cpu_share <= kCpuBound;
  if (o.json) {
    nlohmann::json refusals = nlohmann::json::object();
    for (const auto& [why, n] : refused) refusals[why] = n;
    nlohmann::json calls = nlohmann::json::object();
    for (const auto& [command, n] : calls_to) {
      const double d = n - (calls_from.contains(command) ? calls_from.at(command) : 0);
      if (d > 0) calls[command] = d;
    }
    const nlohmann::json doc = {
        {"bench", "fanout"},
        {"mode", "idle"},
        {"streams_asked", o.idle_watchers},
        {"streams_open", open},
        {"refused", refusals},
        {"seconds", elapsed},
        {"replay_cpu_share", cpu_share},
        {"replay_peak_rss_mib", double(hwm) / 1024},
        {"redis_calls_per_second", redis_rate},
        {"redis_calls_by_command", calls},
        {"this_bench_cpu_share", own_share},
        {"criteria",
         {{{"pass", all_open}, {"what", "every watch stream held open"}},
          {{"pass", cpu_ok}, {"what", "replay uses at most 5% of a core with them idle"}}}},
        {"ok", all_open && cpu_ok}};
    print_json_document(doc.dump(2));
    return all_open && cpu_ok ? 0 : 1;
  }
  std::printf("\n| measure | value |\n| --- | ---: |\n");
  std::printf("| streams open / asked | %d / %d |\n", open, o.idle_watchers);
  for (const auto& [why, n] : refused) std::printf("| refused: %s | %d |\n", why.c_str(), n);
  std::printf("| replay CPU share of a core over %.0f s | %.2f %% |\n", elapsed, 100 * cpu_share);
  std::printf("| replay peak RSS (VmHWM) | %.0f MiB |\n", double(hwm) / 1024);
  std::printf("| Redis calls a second from replay (calls in the window by command) | %.2f (%s) |\n",
              redis_rate, calls_text.empty() ? "none" : calls_text.c_str());
  std::printf("| this bench's CPU share of a core | %.2f %% |\n", 100 * own_share);
  std::printf("\n%s: every one of the %d watch streams held open (%d)\n",
              open == o.idle_watchers ? "PASS" : "FAIL", o.idle_watchers, open);
  std::printf("%s: replay uses at most 5%% of a core with them idle (%.2f %%)\n",
              cpu_share <= kCpuBound ? "PASS" : "FAIL", 100 * cpu_share);
  return open == o.idle_watchers && cpu_share <= kCpuBound ? 0 : 1;
}

}  // namespace chessrl::tool::fanout
