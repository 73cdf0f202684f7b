// `chessrl bench selfplay-stop`'s table and JSON (selfplay_stop_report.h).
#include "bench/selfplay_stop_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/util.h"

namespace chessrl::tool::selfplay_stop {
namespace {

std::string seconds_text(double s) {
  if (std::isnan(s)) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

void print_run(const char* scenario, int index, const StopRun& r) {
  std::string tries;
  if (r.full >= 0 && r.buffered < r.full)
    tries = "; the buffer (" + std::to_string(r.full) + ") was pushed before SIGTERM in each of " +
            std::to_string(r.tries) + " tries: no full flush timed";
  else if (r.tries > 1)
    tries = "; full at SIGTERM on try " + std::to_string(r.tries);
  std::printf(
      "%s run %d: %ld buffered at SIGTERM, %ld abandoned, %ld pushed, %ld lost; "
      "SIGTERM to \"stopping\" %s s, to \"pushing\" %s s, to \"done\" %s s, to exit %s s "
      "(%s)%s\n",
      scenario, index, r.buffered, r.abandoned, r.pushed, r.lost,
      seconds_text(r.to_stopping).c_str(), seconds_text(r.to_pushing).c_str(),
      seconds_text(r.to_done).c_str(), seconds_text(r.to_exit).c_str(), r.exit_status.c_str(),
      tries.c_str());
  std::fflush(stdout);
}

namespace {

// The median of a field over the runs where it is known.
template <class Field>
double median_of(const std::vector<StopRun>& runs, Field field) {
  std::vector<double> v;
  for (const auto& r : runs)
    if (!std::isnan(double(field(r)))) v.push_back(double(field(r)));
  return v.empty() ? NAN : median(v);
}

// A scenario's medians over its runs (seconds; NaN where no run had the figure).
struct StopSummary {
  double flushed, lost, abandoned, mean_plies, positions_per_game;
  double to_stopping, stopping_to_done, flush, done_to_exit, to_exit, to_exit_min, to_exit_max;
  double flush_games_per_second;  // NaN without a flush
};

StopSummary summarize(const std::vector<StopRun>& runs) {
  auto m = [&](auto field) { return median_of(runs, field); };
  StopSummary out{};
  out.flushed = m([](const StopRun& r) { return double(r.buffered); });
  // The flush alone only where every run had one ("pushing": something was buffered).
  const bool every_run_flushed = std::none_of(
      runs.begin(), runs.end(), [](const StopRun& r) { return std::isnan(r.to_pushing); });
  out.flush =
      every_run_flushed ? m([](const StopRun& r) { return r.to_done - r.to_pushing; }) : NAN;
  out.to_exit_min = out.to_exit_max = NAN;
  for (const auto& r : runs) {
    out.to_exit_min =
        std::isnan(out.to_exit_min) ? r.to_exit : std::min(out.to_exit_min, r.to_exit);
    out.to_exit_max =
        std::isnan(out.to_exit_max) ? r.to_exit : std::max(out.to_exit_max, r.to_exit);
  }
  out.flush_games_per_second =
      out.flush > 0 && out.flushed > 0 ? double(static_cast<long>(out.flushed / out.flush)) : NAN;
  out.lost = m([](const StopRun& r) { return double(r.lost); });
  out.abandoned = m([](const StopRun& r) { return double(r.abandoned); });
  out.mean_plies = m([](const StopRun& r) { return r.mean_plies; });
  out.positions_per_game = m([](const StopRun& r) { return r.positions_per_game; });
  out.to_stopping = m([](const StopRun& r) { return r.to_stopping; });
  out.stopping_to_done = m([](const StopRun& r) { return r.to_done - r.to_stopping; });
  out.done_to_exit = m([](const StopRun& r) { return r.to_exit - r.to_done; });
  out.to_exit = m([](const StopRun& r) { return r.to_exit; });
  return out;
}

}  // namespace

void print_summary(const char* scenario, const std::vector<StopRun>& runs) {
  const StopSummary m = summarize(runs);
  const std::string rate = std::isnan(m.flush_games_per_second)
                               ? "-"
                               : std::to_string(static_cast<long>(m.flush_games_per_second));
  std::printf(
      "| %s | %zu | %.0f | %.0f | %.0f | %.1f | %.1f | %s | %s | %s | %s | **%s** (%s–%s) "
      "| %s |\n",
      scenario, runs.size(), m.flushed, m.lost, m.abandoned, m.mean_plies, m.positions_per_game,
      seconds_text(m.to_stopping).c_str(), seconds_text(m.stopping_to_done).c_str(),
      seconds_text(m.flush).c_str(), seconds_text(m.done_to_exit).c_str(),
      seconds_text(m.to_exit).c_str(), seconds_text(m.to_exit_min).c_str(),
      seconds_text(m.to_exit_max).c_str(), rate.c_str());
}

namespace {

// --json: a run (NaN: null).
nlohmann::json run_json(int index, const StopRun& r) {
  nlohmann::json out = {{"run", index},
                        {"buffered", r.buffered},
                        {"abandoned", r.abandoned},
                        {"pushed", r.pushed},
                        {"lost", r.lost},
                        {"to_stopping_s", r.to_stopping},
                        {"to_pushing_s", r.to_pushing},
                        {"to_done_s", r.to_done},
                        {"to_exit_s", r.to_exit},
                        {"mean_plies", r.mean_plies},
                        {"positions_per_game", r.positions_per_game},
                        {"exit_status", r.exit_status},
                        {"clean_exit", r.clean_exit}};
  if (r.full >= 0) {
    out["full"] = r.full;
    out["tries"] = r.tries;
  }
  return out;
}

}  // namespace

nlohmann::json scenario_json(const std::vector<StopRun>& runs) {
  nlohmann::json out = {{"runs", nlohmann::json::array()}};
  for (std::size_t i = 0; i < runs.size(); ++i)
    out["runs"].push_back(run_json(int(i) + 1, runs[i]));
  const StopSummary m = summarize(runs);
  out["median"] = {{"games_flushed", m.flushed},
                   {"lost", m.lost},
                   {"abandoned", m.abandoned},
                   {"plies_per_game", m.mean_plies},
                   {"positions_per_game", m.positions_per_game},
                   {"to_stopping_s", m.to_stopping},
                   {"stopping_to_done_s", m.stopping_to_done},
                   {"flush_s", m.flush},
                   {"done_to_exit_s", m.done_to_exit},
                   {"to_exit_s", m.to_exit},
                   {"to_exit_min_s", m.to_exit_min},
                   {"to_exit_max_s", m.to_exit_max},
                   {"flush_games_per_second", m.flush_games_per_second}};
  return out;
}

}  // namespace chessrl::tool::selfplay_stop
