#include "bench/load_fanin_report.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "bench/load_support.h"

namespace chessrl::tool {
namespace {

std::string num(double v, const char* format = "%.0f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Each shard's positions off the mean, in percent.
std::vector<double> shard_offsets(const FanInReport& r) {
  double mean = 0;
  for (auto n : r.shard_positions) mean += double(n) / double(r.shard_positions.size());
  std::vector<double> out;
  for (auto n : r.shard_positions) out.push_back(mean > 0 ? 100 * (double(n) - mean) / mean : 0);
  return out;
}

}  // namespace

bool FanInReport::ok() const {
  return lost == 0 && window_duplicates == 0 && stored_twice == 0 && unresolved == 0 &&
         missing_positions == 0 && missing_markers == 0 && rejected == 0 &&
         unexpected_duplicates == 0 && dropped == 0;
}

bool FanInReport::balanced() const {
  for (double off : shard_offsets(*this))
    if (std::abs(off) > 3) return false;
  return true;
}

void print_fanin_report(const FanInOptions& o, FanInReport& r) {
  std::printf("\n| measure | value |\n| --- | ---: |\n");
  const auto row = [](const std::string& name, const std::string& value) {
    std::printf("| %s | %s |\n", name.c_str(), value.c_str());
  };
  row("producers x seconds", std::to_string(o.producers) + " x " + num(r.run_seconds, "%.1f"));
  if (o.overload > 0) {
    row("full speed (measured)", num(r.capacity) + " games/s");
    row("acknowledged during the overload", num(r.overload_throughput) + " games/s");
    row("offered: overload, then half",
        num(o.overload * r.capacity) + " then " + num(r.half_load) + " games/s");
    row("shed by the producers at the end of the overload", num(double(r.shed_at_overload_end)));
    row("backlog drained after the load dropped (to 2 s of load)",
        r.recovered_after < 0 ? "NOT within --recover-limit " + num(o.recover_limit) + " s"
                              : num(r.recovered_after, "%.1f") + " s");
    row("replay peak RSS at the end of the overload", num(r.overload_rss_peak_mib) + " MiB");
  } else {
    row("games offered (open loop)", num(o.rate * o.producers, "%.1f") + " games/s");
  }
  if (o.kill_shard_at >= 0)
    row("shard killed", "shard " + std::to_string(o.shards - 1) + " SIGKILLed at " +
                            num(o.kill_shard_at) + " s, restarted " + num(o.restart_after) +
                            " s later");
  row("games generated", num(double(r.generated)));
  row("games acknowledged (stored + retry duplicates)",
      num(double(r.pushed)) + " (" + num(double(r.pushed) / r.run_seconds, "%.1f") + "/s)");
  row("games shed by full buffers", num(double(r.shed)));
  row("games answered FAILED (kept, pushed again) / retries answered DUPLICATE",
      num(double(r.store_failed)) + " / " + num(double(r.retry_duplicates)));
  row("push calls answered", num(double(r.push_latencies_ms.size())));
  const double p50 = percentile(r.push_latencies_ms, 0.5),
               p99 = percentile(r.push_latencies_ms, 0.99),
               pmax = percentile(r.push_latencies_ms, 1.0);
  row("push p50 / p99 / max (ms)",
      num(p50, "%.1f") + " / " + num(p99, "%.1f") + " / " + num(pmax, "%.1f"));
  std::string refused;
  for (const auto& [k, n] : r.refusals)
    refused += (refused.empty() ? "" : ", ") + k + " " + std::to_string(n);
  row("failed push calls by code (retried)", refused.empty() ? "none" : refused);
  row("games refused rate_limited (replay's count)", num(r.rate_limited));
  row("push calls refused busy (replay's count)", num(r.busy_refused));
  row("sample calls (failed)",
      num(double(r.sample_calls)) + " (" + num(double(r.sample_failures)) + ")");
  row("**lost** (acknowledged, in no window)", "**" + num(double(r.lost)) + "**");
  row("**duplicated** (in the windows twice / STORED twice)",
      "**" + num(double(r.window_duplicates)) + " / " + num(double(r.stored_twice)) + "**");
  row("rejected / dropped / unexpected duplicates / unresolved",
      num(double(r.rejected)) + " / " + num(double(r.dropped)) + " / " +
          num(double(r.unexpected_duplicates)) + " / " + num(double(r.unresolved)));
  row("missing position keys / markers",
      num(double(r.missing_positions)) + " / " + num(double(r.missing_markers)));
  row("stored, never acknowledged", num(double(r.unacknowledged)));
  if (o.shards > 1) {
    const std::vector<double> offsets = shard_offsets(r);
    std::string text;
    for (std::size_t i = 0; i < offsets.size(); ++i)
      text += (text.empty() ? "" : ", ") + num(double(r.shard_positions[i])) + " (" +
              num(offsets[i], "%+.1f") + "%)";
    row("positions per shard (off the mean)", text);
  }
  row("replay peak RSS (VmHWM) / threads / open descriptors at most",
      num(double(r.peak_rss_kb) / 1024) + " MiB / " + std::to_string(r.max_threads) + " / " +
          std::to_string(r.max_descriptors));
  row("/metrics bytes / series / scrape p50, max (ms)",
      num(double(r.metrics_bytes)) + " / " + num(double(r.metrics_series)) + " / " +
          num(r.scrape_ms_median, "%.1f") + ", " + num(r.scrape_ms_max, "%.1f"));
  row("producer label values (of them \"(other)\")",
      std::to_string(r.producer_labels) + " (" + std::to_string(r.producer_labels_other) + ")");
  for (std::size_t i = 0; i < r.shard_used_memory.size(); ++i)
    row("Redis " + std::to_string(i) + " used_memory", r.shard_used_memory[i]);
  row("chessrl-replay exit", r.replay_exit);
  if (!r.scrape_error.empty()) std::printf("\nlast /metrics error: %s\n", r.scrape_error.c_str());
  for (const auto& [k, text] : r.first_refusal)
    std::printf("\nfirst failed push (%s): %s", k.c_str(), text.c_str());
  if (!r.first_refusal.empty()) std::printf("\n");
  if (r.log_lines > 0) {
    std::printf("\nproducers logged %llu lines; the first:\n", (unsigned long long)r.log_lines);
    for (const auto& l : r.first_logs) std::printf("  %s\n", l.c_str());
  }
  std::printf("\n%s\n", r.ok()
                            ? "OK: every acknowledged game is in Redis exactly once"
                            : "FAILED: games lost, duplicated, rejected or unresolved (see above)");
  if (o.shards > 1)
    std::printf("%s\n", r.balanced() ? "balance: every shard within 3% of the mean"
                                     : "balance: a shard is more than 3% off the mean");
}

nlohmann::json fanin_report_json(const FanInOptions& o, FanInReport& r) {
  nlohmann::json doc = {{"bench", "load"},
                        {"loop", "open"},
                        {"producers", o.producers},
                        {"samplers", o.samplers},
                        {"buffer_games", o.buffer_games},
                        {"push_batch", o.push_batch},
                        {"shards", o.shards},
                        {"seconds", r.run_seconds},
                        {"games_generated", r.generated},
                        {"games_acknowledged", r.pushed},
                        {"games_acknowledged_per_second", double(r.pushed) / r.run_seconds},
                        {"games_shed", r.shed},
                        {"games_answered_failed", r.store_failed},
                        {"retries_answered_duplicate", r.retry_duplicates},
                        {"push_calls_answered", r.push_latencies_ms.size()},
                        {"push_latency_ms",
                         {{"p50", percentile(r.push_latencies_ms, 0.5)},
                          {"p99", percentile(r.push_latencies_ms, 0.99)},
                          {"max", percentile(r.push_latencies_ms, 1.0)}}},
                        {"failed_push_calls", r.refusals},
                        {"first_failed_push", r.first_refusal},
                        {"games_refused_rate_limited", r.rate_limited},
                        {"push_calls_refused_busy", r.busy_refused},
                        {"sample_calls", r.sample_calls},
                        {"sample_failures", r.sample_failures},
                        {"lost", r.lost},
                        {"window_duplicates", r.window_duplicates},
                        {"stored_twice", r.stored_twice},
                        {"rejected", r.rejected},
                        {"dropped", r.dropped},
                        {"unexpected_duplicates", r.unexpected_duplicates},
                        {"unresolved", r.unresolved},
                        {"missing_position_keys", r.missing_positions},
                        {"missing_markers", r.missing_markers},
                        {"stored_never_acknowledged", r.unacknowledged},
                        {"shard_positions", r.shard_positions},
                        {"redis_used_memory", r.shard_used_memory},
                        {"replay",
                         {{"peak_rss_mib", double(r.peak_rss_kb) / 1024},
                          {"max_threads", r.max_threads},
                          {"max_descriptors", r.max_descriptors},
                          {"metrics_bytes", r.metrics_bytes},
                          {"metrics_series", r.metrics_series},
                          {"scrape_ms_median", r.scrape_ms_median},
                          {"scrape_ms_max", r.scrape_ms_max},
                          {"producer_label_values", r.producer_labels},
                          {"producer_label_other", r.producer_labels_other},
                          {"exit", r.replay_exit}}},
                        {"producer_log_lines", r.log_lines},
                        {"first_producer_logs", r.first_logs},
                        {"ok", r.ok()}};
  if (!r.scrape_error.empty()) doc["replay"]["last_scrape_error"] = r.scrape_error;
  if (o.overload > 0) {
    doc["overload"] = {
        {"multiple", o.overload},
        {"full_speed_games_per_second", r.capacity},
        {"acknowledged_games_per_second", r.overload_throughput},
        {"offered_games_per_second", o.overload * r.capacity},
        {"half_load_games_per_second", r.half_load},
        {"shed_at_end", r.shed_at_overload_end},
        {"drained_after_s",
         r.recovered_after < 0 ? nlohmann::json() : nlohmann::json(r.recovered_after)},
        {"recover_limit_s", o.recover_limit},
        {"replay_rss_mib_at_end", r.overload_rss_peak_mib}};
  } else {
    doc["offered_games_per_second"] = o.rate * o.producers;
  }
  if (o.kill_shard_at >= 0)
    doc["shard_killed"] = {
        {"shard", o.shards - 1}, {"at_s", o.kill_shard_at}, {"down_s", o.restart_after}};
  if (o.shards > 1) {
    doc["shard_off_mean_percent"] = shard_offsets(r);
    doc["balanced"] = r.balanced();
  }
  return doc;
}

}  // namespace chessrl::tool
