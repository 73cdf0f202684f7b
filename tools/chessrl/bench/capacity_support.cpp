// `chessrl bench capacity`'s helpers: pinned redis-servers, INFO counters, pushes.
#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/capacity.h"
#include "chessrl/core/error.h"

namespace chessrl::tool::capacity {
namespace {

double number_field(const std::map<std::string, std::string>& info, const std::string& key) {
  const auto it = info.find(key);
  if (it == info.end()) throw Error("bench capacity: INFO has no " + key);
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    throw Error("bench capacity: INFO " + key + " is not a number: " + it->second);
  }
}

// usec=<n> of a commandstats value ("calls=3,usec=120,usec_per_call=40.00,...").
double usec_of(const std::map<std::string, std::string>& info, const std::string& command) {
  const auto it = info.find("cmdstat_" + command);
  if (it == info.end()) return 0;  // not called yet
  const auto at = it->second.find("usec=");
  if (at == std::string::npos)
    throw Error("bench capacity: INFO cmdstat_" + command + " has no usec");
  return std::stod(it->second.substr(at + 5));
}

cpu_set_t cpu_set_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpus.empty()) {
    for (int c = 0; c < cpu_count(); ++c) CPU_SET(c, &set);
  } else {
    for (int c : cpus) CPU_SET(c, &set);
  }
  return set;
}

}  // namespace

int cpu_count() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void pin_process(int pid, int cpu) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (!dir) throw Error("bench capacity: cannot list " + tasks + ": " + std::strerror(errno));
  const cpu_set_t set = cpu_set_of({cpu});
  int pinned = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int tid = std::atoi(entry->d_name);
    if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
      const std::string why = std::strerror(errno);
      closedir(dir);
      throw Error("bench capacity: cannot pin thread " + std::to_string(tid) + " of process " +
                  std::to_string(pid) + " to CPU " + std::to_string(cpu) + ": " + why);
    }
    ++pinned;
  }
  closedir(dir);
  if (pinned == 0)
    throw Error("bench capacity: process " + std::to_string(pid) + " has no threads");
}

void pin_this_thread(const std::vector<int>& cpus) {
  const cpu_set_t set = cpu_set_of(cpus);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    throw Error(std::string("bench capacity: sched_setaffinity: ") + std::strerror(errno));
}

std::map<std::string, std::string> parse_info(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    out[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return out;
}

PinnedRedis start_pinned_redis(const std::string& appendfsync, int cpu,
                               const std::vector<std::string>& extra_config) {
  harness::RedisServer::Options options;
  options.password = "chessrl-bench";
  options.appendfsync = appendfsync;
  options.extra_config = extra_config;
  PinnedRedis out;
  out.server = harness::RedisServer::start(options);
  out.pid =
      static_cast<int>(number_field(parse_info(out.server->cli({"INFO", "server"})), "process_id"));
  out.cpu = cpu;
  if (cpu >= 0) pin_process(out.pid, cpu);
  return out;
}

RedisCounters read_counters(const harness::RedisServer& server) {
  const auto info = parse_info(server.cli({"INFO", "all"}));
  RedisCounters c;
  c.main_thread_cpu_us = 1e6 * (number_field(info, "used_cpu_user_main_thread") +
                                number_field(info, "used_cpu_sys_main_thread"));
  c.evalsha_usec = usec_of(info, "evalsha");
  c.aof_bytes = number_field(info, "aof_current_size");
  c.aof_rewrites = number_field(info, "aof_rewrites");
  c.used_memory = number_field(info, "used_memory");
  c.used_memory_dataset = number_field(info, "used_memory_dataset");
  c.clients_memory = number_field(info, "mem_clients_normal");
  c.latest_fork_usec = number_field(info, "latest_fork_usec");
  return c;
}

replay::RedisOptions store_options(const harness::RedisServer& server, std::uint64_t window,
                                   int connections) {
  replay::RedisOptions options;
  options.port = server.port();
  options.password = server.password();
  options.key_prefix = "cap";
  options.window_positions = window;
  options.connections = connections;
  options.command_timeout = std::chrono::seconds(30);
  return options;
}

std::uint64_t push_games(replay::ReplayStore& store, const Corpus& corpus, std::uint64_t count,
                         int batch, int threads, const std::string& prefix,
                         const std::atomic<bool>* stop) {
  std::atomic<std::uint64_t> next{0};
  std::atomic<std::uint64_t> positions{0};
  std::vector<std::string> errors(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::vector<replay::StoredGame> games;
      while (!stop || !stop->load(std::memory_order_relaxed)) {
        const std::uint64_t first = next.fetch_add(std::uint64_t(batch));
        if (first >= count) return;
        const std::uint64_t n = std::min<std::uint64_t>(std::uint64_t(batch), count - first);
        games.resize(n);
        for (std::uint64_t i = 0; i < n; ++i) {
          // The positions are copied once per slot and reused; only the id changes.
          if (games[i].positions.empty())
            games[i] = corpus.games[(first + i) % corpus.games.size()];
          games[i].id = prefix + std::to_string(first + i);
        }
        auto results = store.push(games);
        if (!results.ok()) {
          errors[std::size_t(t)] = results.error();
          return;
        }
        std::uint64_t stored = 0;
        for (std::uint64_t i = 0; i < n; ++i) {
          if ((*results)[i].status != replay::PushStatus::kStored) {
            errors[std::size_t(t)] =
                "game " + games[i].id + " was not stored: " + (*results)[i].error;
            return;
          }
          stored += games[i].positions.size();
        }
        positions += stored;
      }
    });
  for (auto& w : workers) w.join();
  for (const auto& e : errors)
    if (!e.empty()) throw Error("bench capacity: push: " + e);
  return positions.load();
}

}  // namespace chessrl::tool::capacity
