#include "final_scrape.h"

#include <cstdio>
#include <string>

namespace chessrl::selfplay_service {

namespace {

// "15 s", "0.25 s".
std::string seconds_text(double seconds) {
  char text[32];
  if (seconds == static_cast<double>(static_cast<long long>(seconds))) {
    std::snprintf(text, sizeof text, "%lld s", static_cast<long long>(seconds));
  } else {
    std::snprintf(text, sizeof text, "%.2f s", seconds);
  }
  return text;
}

}  // namespace

FinalScrape wait_for_final_scrape(const metrics::Exposer* exposer, std::size_t lost,
                                  std::chrono::milliseconds wait, const LogFunction& log) {
  if (lost == 0) return FinalScrape::kNothingLost;
  if (wait.count() <= 0) return FinalScrape::kOff;
  if (exposer == nullptr) {
    log(std::to_string(lost) + " games lost; metrics are off: no scrape to wait for");
    return FinalScrape::kOff;
  }
  // After the count: every scrape begun from here on holds it.
  const std::uint64_t point = exposer->scrape_point();
  const double limit = std::chrono::duration<double>(wait).count();
  log(std::to_string(lost) + " games lost: waiting up to " + seconds_text(limit) +
      " for a scrape of /metrics to read chessrl_selfplay_games_lost_total (--final-scrape-wait)");
  const auto start = std::chrono::steady_clock::now();
  if (exposer->wait_for_scrape(point, wait)) {
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log("lost counts scraped after " + seconds_text(took));
    return FinalScrape::kScraped;
  }
  log("no scrape within " + seconds_text(limit) + ": the lost count may never reach Prometheus");
  return FinalScrape::kNoScrape;
}

}  // namespace chessrl::selfplay_service
