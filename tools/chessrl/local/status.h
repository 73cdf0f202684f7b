// What `chessrl local` shows: each child's /metrics scraped over HTTP and
// parsed, and the one-line status made from them.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/metrics/http_client.h"

namespace chessrl::tool {

using metrics::HttpReply;
// GET http://127.0.0.1:<port><path> (metrics::http_get); fails naming the URL
// when nothing answers within `timeout`.
Result<HttpReply> http_get(int port, const std::string& path, std::chrono::milliseconds timeout);

// Samples of the Prometheus text format: "name{a=\"x\",b=\"y\"}" (labels as
// written) -> value. Comment and malformed lines are skipped.
using Samples = std::map<std::string, double>;
Samples parse_samples(const std::string& text);
// The sample `name` with exactly these labels ("" for none), e.g.
// sample(s, "chessrl_trainer_loss", "head=\"total\"").
std::optional<double> sample(const Samples& samples, const std::string& name,
                             const std::string& labels = "");
// The sum over every label set of `name`.
double sum_samples(const Samples& samples, const std::string& name);

// The scraped metrics of every child at one moment, by child name.
struct Scrape {
  std::chrono::steady_clock::time_point when;
  std::map<std::string, Samples> by_child;
};

// Turns scrapes into the status line; keeps a minute of history for rates.
class StatusLine {
 public:
  void add(Scrape scrape);
  // e.g. "12:04 | games 1,234 (2,950/h, 8% decisive) | window 45,600 | step 1,200 loss 3.41 (p 2.71 v 0.70)
  // | model v6 (selfplay v6, best v5) | elo random +120 ±80, greedy -50 ±90
  // | ladder stockfish-skill0 (1/2) score 0.06"
  std::string format(std::chrono::seconds elapsed) const;
  double games() const;
  double games_per_hour() const;
  // Share of the games finished over the last minute that were won by either
  // side (chessrl_selfplay_game_results_total); nullopt before any finished.
  std::optional<double> decisive_share() const;
  // How the self-play games of this run ended, from the last scrape, e.g.
  // "1,200 self-play games: 9% decisive; move limit 70%, threefold repetition
  // 21%, checkmate 8%, ..." (reasons with games, most first); "" before any.
  std::string games_summary() const;
  // The evaluator's Stockfish ladder from the last scrape: the rung in play,
  // which of how many, and the latest score against it, e.g.
  // "stockfish-skill0 (1/2) score 0.06" ("no result yet" before its first
  // match); "" without a ladder (chessrl_eval_ladder_rung 0 or absent).
  std::string ladder() const;

 private:
  std::deque<Scrape> history_;
};

// "1,234,567".
std::string with_commas(double value);

}  // namespace chessrl::tool
