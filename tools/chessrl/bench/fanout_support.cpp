// `chessrl bench fanout`'s processes and what it reads of them.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "bench/capacity.h"
#include "bench/fanout.h"
#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::tool::fanout {
namespace {

// The model cache's bound from a flag named --model-cache-* with a byte
// (-bytes) or MiB (-mb, -mib) value: from `args` when given there, else the
// default its --help shows. {0, ""} when the binary has no such flag.
std::pair<std::uint64_t, std::string> cache_bound(const std::string& binary,
                                                  const std::vector<std::string>& args) {
  const std::regex name_re("^--(model-cache[a-z-]*)$");
  auto scale = [](const std::string& flag) -> std::uint64_t {
    if (flag.ends_with("-mb") || flag.ends_with("-mib")) return std::uint64_t{1} << 20;
    return 1;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[i + 1];
    }
    std::smatch m;
    if (std::regex_match(arg, m, name_re)) {
      try {
        return {std::stoull(value) * scale(m[1].str()), arg + " " + value + " (given)"};
      } catch (const std::exception&) {
        throw Error("bench fanout: " + arg + " in --replay-arg is not a number: " + value);
      }
    }
  }
  std::string help;
  if (auto child = Subprocess::start({binary, "--help"}); child.ok())
    while (auto line = child->read_line(std::chrono::seconds(10))) help += *line + "\n";
  const std::regex help_re("--(model-cache[a-z-]*)[^=\\n]*=([0-9]+)");
  std::smatch m;
  if (std::regex_search(help, m, help_re))
    return {std::stoull(m[2].str()) * scale(m[1].str()),
            "--" + m[1].str() + " " + m[2].str() + " (its default)"};
  return {0, ""};
}

}  // namespace

std::vector<std::string> Fleet::addresses() const {
  std::vector<std::string> out;
  for (const auto& r : replicas) out.push_back("127.0.0.1:" + std::to_string(r.port));
  return out;
}

Fleet start_redis(const FanoutOptions& options) {
  Fleet fleet;
  fleet.binary = options.replay_binary.empty()
                     ? harness::find_service_binary("chessrl-replay", "").value_or_throw()
                     : options.replay_binary;
  if (::access(fleet.binary.c_str(), X_OK) != 0)
    throw Error("bench fanout: --replay-binary " + fleet.binary + " is not an executable file");
  std::tie(fleet.cache_bound, fleet.cache_flag) = cache_bound(fleet.binary, options.replay_args);
  fleet.redis = start_bench_redis("chessrl-bench-fanout", "everysec");
  fleet.redis_pid =
      std::stoi(capacity::parse_info(fleet.redis->cli({"INFO", "server"})).at("process_id"));
  return fleet;
}

void start_replicas(Fleet& fleet, int count, const FanoutOptions& options,
                    const std::vector<std::string>& extra) {
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> args = extra;
    args.insert(args.end(), options.replay_args.begin(), options.replay_args.end());
    const std::string log =
        fleet.redis->dir() + "/replay-" + std::to_string(fleet.replicas.size()) + ".log";
    fleet.replicas.push_back(
        start_replay_program({fleet.binary, log}, *fleet.redis, args, false, "bench fanout"));
  }
}

double measure_bloop(const Fleet& fleet, const FanoutOptions& options) {
  const std::string log = fleet.redis->dir() + "/replay-bloop.log";
  std::vector<std::string> args = {"--key-prefix", "chessrl-bloop"};
  args.insert(args.end(), options.replay_args.begin(), options.replay_args.end());
  ReplayChild replay =
      start_replay_program({fleet.binary, log}, *fleet.redis, args, false, "bench fanout");
  rpc::ClientOptions client_options;
  client_options.address = "127.0.0.1:" + std::to_string(replay.port);
  client_options.deadline = std::chrono::seconds(120);
  rpc::ModelRegistryClient client(client_options);
  v1::ModelInfo info;
  info.set_version(1);
  info.set_step(1);
  const std::string blob = random_blob(options.model_bytes, 99);
  if (auto published = client.publish(info, blob); !published.ok())
    throw Error("bench fanout: publishing the B_loop blob: " + published.error());
  const auto start = Clock::now();
  for (int i = 0; i < options.bloop_downloads; ++i) {
    auto got = client.get(1);
    if (!got.ok()) throw Error("bench fanout: B_loop download: " + got.error());
    if (got->second.size() != blob.size())
      throw Error("bench fanout: B_loop download returned " + std::to_string(got->second.size()) +
                  " bytes, not " + std::to_string(blob.size()));
  }
  const double seconds = seconds_since(start);
  replay.child->stop(std::chrono::seconds(10));
  return static_cast<double>(options.model_bytes) * options.bloop_downloads / seconds;
}

std::string random_blob(std::uint64_t bytes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(bytes, '\0');
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(out.data() + i, &word, 8);
  }
  for (; i < out.size(); ++i) out[i] = static_cast<char>(rng());
  return out;
}

double process_cpu_seconds(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  // After ") ": state is field 3; utime and stime are fields 14 and 15.
  for (int n = 3; n <= 15 && (fields >> field); ++n) {
    if (n == 14) utime = std::stod(field);
    if (n == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

std::map<std::string, std::string> redis_info(const harness::RedisServer& redis,
                                              const std::string& section) {
  return capacity::parse_info(redis.cli({"INFO", section}));
}

double redis_output_bytes(const harness::RedisServer& redis) {
  const auto info = redis_info(redis, "stats");
  const auto it = info.find("total_net_output_bytes");
  if (it == info.end()) throw Error("bench fanout: INFO stats has no total_net_output_bytes");
  return std::stod(it->second);
}

double redis_calls(const harness::RedisServer& redis, std::map<std::string, double>* by_command) {
  double total = 0;
  for (const auto& [key, value] : redis_info(redis, "commandstats")) {
    if (!key.starts_with("cmdstat_")) continue;
    const auto at = value.find("calls=");
    if (at == std::string::npos) continue;
    const double calls = std::stod(value.substr(at + 6));
    total += calls;
    if (by_command) (*by_command)[key.substr(8)] = calls;
  }
  return total;
}

long mem_available_mib() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  long kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb / 1024;
  return -1;
}

void raise_file_limit(std::uint64_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < wanted)
    throw Error("bench fanout: this run needs " + std::to_string(wanted) +
                " open files; the hard limit is " + std::to_string(limit.rlim_max) +
                " (raise it: ulimit -Hn " + std::to_string(wanted) + ", as root)");
  limit.rlim_cur = wanted;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0)
    throw Error("bench fanout: could not raise the open-file limit to " + std::to_string(wanted) +
                ": " + std::strerror(errno));
}

std::string human_bytes(double bytes) {
  if (bytes >= 1e9) return format("%.2f GB", bytes / 1e9);
  if (bytes >= 1e6) return format("%.1f MB", bytes / 1e6);
  if (bytes >= 1e3) return format("%.0f kB", bytes / 1e3);
  return format("%.0f B", bytes);
}

std::string format(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace chessrl::tool::fanout
