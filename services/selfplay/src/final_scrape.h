// The last thing chessrl-selfplay does when a stop lost games: a count only
// reaches Prometheus if a scrape reads it, and the process exits right after
// its flush. So, when the flush left games unpushed (counted in
// chessrl_selfplay_games_lost_total), it waits up to --final-scrape-wait for
// one scrape of /metrics begun after the count, and logs whether one came.
#pragma once

#include <chrono>
#include <cstddef>

#include "chessrl/metrics/exposer.h"
#include "game_pusher.h"

namespace chessrl::selfplay_service {

enum class FinalScrape {
  kNothingLost,  // no games lost: no wait
  kOff,          // games lost, but --final-scrape-wait 0 or no metrics address
  kScraped,      // a scrape read the lost count
  kNoScrape,     // none came within the wait
};

// Call after GamePusher::flush() (which counted the `lost` games). `exposer`
// may be null (metrics off). Never waits when `lost` is 0 or `wait` is zero.
FinalScrape wait_for_final_scrape(const metrics::Exposer* exposer, std::size_t lost,
                                  std::chrono::milliseconds wait, const LogFunction& log);

}  // namespace chessrl::selfplay_service
