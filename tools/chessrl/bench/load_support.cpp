#include "bench/load_support.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/util.h"
#include "chessrl/core/error.h"
#include "chessrl/core/subprocess.h"

namespace chessrl::tool {
namespace {

// Walks window entries [ARGV[2], ARGV[3]] inside Redis: {positions missing,
// markers missing, positions named, ids...}.
constexpr const char* kCheckScript = R"lua(
local prefix = ARGV[1]
local window = redis.call('LRANGE', prefix .. ':window', tonumber(ARGV[2]), tonumber(ARGV[3]))
local missing_positions, missing_markers, positions = 0, 0, 0
local out = {0, 0, 0}
for _, entry in ipairs(window) do
  local seq, count, id = string.match(entry, '^(%d+) (%d+) (.+)$')
  positions = positions + tonumber(count)
  for s = tonumber(seq), tonumber(seq) + tonumber(count) - 1 do
    if redis.call('EXISTS', prefix .. ':pos:' .. s) == 0 then missing_positions = missing_positions + 1 end
  end
  if redis.call('EXISTS', prefix .. ':game:' .. id) == 0 then missing_markers = missing_markers + 1 end
  out[#out + 1] = id
end
out[1], out[2], out[3] = missing_positions, missing_markers, positions
return out
)lua";
constexpr std::size_t kHeader = 3;

}  // namespace

WindowScan scan_window(const harness::RedisServer& redis) {
  constexpr long kSlice = 2000;
  WindowScan scan;
  for (long first = 0;; first += kSlice) {
    const std::string text = redis.cli({"EVAL", kCheckScript, "0", "chessrl", std::to_string(first),
                                        std::to_string(first + kSlice - 1)});
    std::istringstream lines(text);
    std::string line;
    std::vector<std::string> slice;
    while (std::getline(lines, line)) slice.push_back(line);
    if (slice.size() < kHeader) {
      throw Error("bench load: the window check script did not answer (port " +
                  std::to_string(redis.port()) + "); redis.log ends:\n" +
                  log_tail(redis.dir() + "/redis.log", 15));
    }
    scan.missing_positions += std::stoull(slice[0]);
    scan.missing_markers += std::stoull(slice[1]);
    scan.positions += std::stoull(slice[2]);
    scan.ids.insert(scan.ids.end(), slice.begin() + kHeader, slice.end());
    if (static_cast<long>(slice.size() - kHeader) < kSlice) break;
  }
  return scan;
}

std::unique_ptr<Process> restart_redis(const harness::RedisServer& redis,
                                     std::chrono::seconds patience) {
  auto program = find_program("redis-server");
  if (!program) throw Error("bench load: redis-server not found");
  ProcessSpec spec;
  spec.argv = {*program, redis.dir() + "/redis.conf"};
  spec.output_path = redis.dir() + "/restart.log";
  spec.null_stdin = true;
  auto child = std::make_unique<Process>(Process::start(spec).value_or_throw());
  const auto deadline = Clock::now() + patience;
  std::string answer;
  while (Clock::now() < deadline) {
    if (child->exited())
      throw Error("bench load: redis-server exited at restart (" + child->status() + "):\n" +
                  log_tail(spec.output_path, 10));
    try {
      answer = redis.cli({"PING"});
      if (answer == "PONG") return child;
    } catch (const Error& e) {
      answer = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw Error("bench load: redis-server did not answer PING within " +
              std::to_string(patience.count()) + " s of its restart (last answer: " + answer + ")");
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string error_code(const std::string& error) {
  const auto colon = error.find(": ");
  if (colon == std::string::npos) return error.substr(0, 40);
  const auto end = error.find(':', colon + 2);
  return error.substr(colon + 2, end == std::string::npos ? std::string::npos : end - colon - 2);
}

}  // namespace chessrl::tool
