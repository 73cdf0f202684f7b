// `chessrl bench selfplay-stop`'s figures: one stop as it was timed, and how a
// scenario's runs are reported (a table row, or --json). The scenarios
// themselves run in selfplay_stop.cpp.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace chessrl::tool::selfplay_stop {

// One stop, timed from SIGTERM (seconds; NaN: the line never came).
struct StopRun {
  long buffered = 0;  // games buffered at SIGTERM ("pushing the N buffered games")
  // Full runs: the buffer when full (its gauge when the first game was shed), and the
  // tries it took to stop self-play with it still full (buffered == full).
  long full = -1;
  int tries = 1;
  long pushed = -1;  // pushed in all ("done:" line)
  long lost = -1;    // "could not be pushed"
  long abandoned = -1;
  double mean_plies = NAN;          // of the games played before SIGTERM
  double positions_per_game = NAN;  // stored by replay (training positions)
  // "pushing the N buffered games": play torn down, the flush begins (none when empty).
  double to_stopping = NAN, to_pushing = NAN, to_done = NAN, to_exit = NAN;
  std::string exit_status;
  bool clean_exit = false;  // exit status 0
};

// What a stop should have been: exit status 0 and every game pushed (the
// "done:" line says 0 could not be pushed). "" when it was; else why not.
inline std::string stop_problem(const StopRun& r) {
  if (!r.clean_exit) return "chessrl-selfplay's " + r.exit_status + ", not exit status 0";
  if (r.lost < 0) return "no \"done:\" line in chessrl-selfplay's log";
  if (r.lost > 0) return std::to_string(r.lost) + " games lost";
  return "";
}

// A run's table line.
void print_run(const char* scenario, int index, const StopRun& r);
// A scenario's row of medians in the summary table.
void print_summary(const char* scenario, const std::vector<StopRun>& runs);
// --json: a scenario's runs with their medians (NaN: null).
nlohmann::json scenario_json(const std::vector<StopRun>& runs);

}  // namespace chessrl::tool::selfplay_stop
