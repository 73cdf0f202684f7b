// What `chessrl bench load --rate` (bench/load_fanin.cpp) found, gathered
// after the run, and its two forms: the markdown table with the OK/FAILED
// line, or (--json) one JSON document of the same figures. Built only with
// the services (CHESSRL_SERVICES).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/load_fanin.h"

namespace chessrl::tool {

struct FanInReport {
  double run_seconds = 0;
  // --overload: the measured full speed, what was acknowledged during the
  // overload, the half load offered after it (games/s), the producers' shed
  // count then, the backlog's drain time (< 0: not within --recover-limit),
  // replay's RSS then.
  double capacity = 0, overload_throughput = 0, half_load = 0;
  std::uint64_t shed_at_overload_end = 0;
  double recovered_after = -1, overload_rss_peak_mib = 0;
  // The producers' view (their GamePusher counters, summed).
  std::uint64_t generated = 0, pushed = 0, shed = 0, store_failed = 0, retry_duplicates = 0;
  std::uint64_t rejected = 0, dropped = 0, unexpected_duplicates = 0, unresolved = 0;
  std::vector<double> push_latencies_ms;             // sorted in place when reported
  std::map<std::string, std::uint64_t> refusals;     // failed push calls by label
  std::map<std::string, std::string> first_refusal;  // the server's words, by label
  std::uint64_t sample_calls = 0, sample_failures = 0;
  // Replay's own counts (its /metrics at the end).
  double rate_limited = 0, busy_refused = 0;
  // Redis's view against the acknowledged ids.
  std::uint64_t lost = 0, window_duplicates = 0, stored_twice = 0;
  std::uint64_t missing_positions = 0, missing_markers = 0, unacknowledged = 0;
  std::vector<std::uint64_t> shard_positions;
  std::vector<std::string> shard_used_memory;  // used_memory_human
  // The service seen from outside.
  long peak_rss_kb = -1, max_threads = 0, max_descriptors = 0;
  std::size_t metrics_bytes = 0, metrics_series = 0;
  double scrape_ms_median = 0, scrape_ms_max = 0;
  std::string scrape_error;
  std::size_t producer_labels = 0, producer_labels_other = 0;
  std::string replay_exit;
  std::uint64_t log_lines = 0;
  std::vector<std::string> first_logs;

  // No acknowledged game lost or stored twice, none rejected, dropped or unresolved.
  bool ok() const;
  // Every shard within 3% of the mean positions (true with one shard).
  bool balanced() const;
};

// Prints the table and the OK/FAILED (and, with shards, balance) lines.
void print_fanin_report(const FanInOptions& o, FanInReport& r);
// The same figures (latencies in ms, rates in games/s, memory in MiB).
nlohmann::json fanin_report_json(const FanInOptions& o, FanInReport& r);

}  // namespace chessrl::tool
