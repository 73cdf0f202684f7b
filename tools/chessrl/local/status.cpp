#include "local/status.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace chessrl::tool {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The children whose name starts with `prefix` ("selfplay" for selfplay-0, ...).
std::vector<const Samples*> children(const Scrape& s, const std::string& prefix) {
  std::vector<const Samples*> out;
  for (const auto& [name, samples] : s.by_child)
    if (starts_with(name, prefix)) out.push_back(&samples);
  return out;
}

double total(const Scrape& s, const std::string& prefix, const std::string& name) {
  double sum = 0;
  for (const Samples* samples : children(s, prefix)) sum += sum_samples(*samples, name);
  return sum;
}

std::optional<double> first(const Scrape& s, const std::string& child, const std::string& name,
                            const std::string& labels = "") {
  auto it = s.by_child.find(child);
  if (it == s.by_child.end()) return std::nullopt;
  return sample(it->second, name, labels);
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string signed_elo(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f", v);
  return buf;
}

}  // namespace

Result<HttpReply> http_get(int port, const std::string& path, std::chrono::milliseconds timeout) {
  return metrics::http_get("127.0.0.1", port, path, timeout);
}

Samples parse_samples(const std::string& text) {
  Samples out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    // The value follows the last space outside the labels' braces.
    const auto close = line.rfind('}');
    const auto space = line.find(' ', close == std::string::npos ? 0 : close);
    if (space == std::string::npos) continue;
    const std::string key = line.substr(0, space);
    char* end = nullptr;
    const std::string value_text = line.substr(space + 1);
    const double value = std::strtod(value_text.c_str(), &end);
    if (end == value_text.c_str()) continue;
    out[key] = value;
  }
  return out;
}

std::optional<double> sample(const Samples& samples, const std::string& name,
                             const std::string& labels) {
  const auto it = samples.find(labels.empty() ? name : name + "{" + labels + "}");
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

double sum_samples(const Samples& samples, const std::string& name) {
  double sum = 0;
  for (auto it = samples.lower_bound(name); it != samples.end(); ++it) {
    const std::string& key = it->first;
    if (key.compare(0, name.size(), name) != 0) break;
    if (key.size() == name.size() || key[name.size()] == '{') sum += it->second;
  }
  return sum;
}

std::string with_commas(double value) {
  const long long v = std::llround(value);
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

void StatusLine::add(Scrape scrape) {
  history_.push_back(std::move(scrape));
  while (history_.size() > 2 &&
         history_.back().when - history_.front().when > std::chrono::seconds(60))
    history_.pop_front();
}

double StatusLine::games() const {
  return history_.empty() ? 0 : total(history_.back(), "selfplay", "chessrl_selfplay_games_total");
}

double StatusLine::games_per_hour() const {
  if (history_.size() < 2) return 0;
  const Scrape& a = history_.front();
  const Scrape& b = history_.back();
  const double seconds = std::chrono::duration<double>(b.when - a.when).count();
  if (seconds <= 0) return 0;
  const double games = total(b, "selfplay", "chessrl_selfplay_games_total") -
                       total(a, "selfplay", "chessrl_selfplay_games_total");
  return games > 0 ? games * 3600 / seconds : 0;
}

std::optional<double> StatusLine::decisive_share() const {
  if (history_.empty()) return std::nullopt;
  const auto finished = [](const Scrape& s, bool draws_only) {
    double sum = 0;
    for (const Samples* samples : children(s, "selfplay")) {
      sum += draws_only ? sample(*samples, "chessrl_selfplay_game_results_total",
                                 "result=\"draw\"").value_or(0)
                        : sum_samples(*samples, "chessrl_selfplay_game_results_total");
    }
    return sum;
  };
  const Scrape& b = history_.back();
  const Scrape* a = history_.size() >= 2 ? &history_.front() : nullptr;
  const double games = finished(b, false) - (a ? finished(*a, false) : 0);
  const double draws = finished(b, true) - (a ? finished(*a, true) : 0);
  if (games <= 0) return std::nullopt;
  return (games - draws) / games;
}

std::string StatusLine::games_summary() const {
  if (history_.empty()) return "";
  const std::string prefix = "chessrl_selfplay_game_terminations_total{reason=\"";
  std::map<std::string, double> by_reason;
  double games = 0, draws = 0;
  for (const Samples* samples : children(history_.back(), "selfplay")) {
    for (auto it = samples->lower_bound(prefix); it != samples->end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) != 0) break;
      std::string reason = it->first.substr(prefix.size(), it->first.size() - prefix.size() - 2);
      for (char& c : reason)
        if (c == '_') c = ' ';
      by_reason[reason] += it->second;
      games += it->second;
    }
    draws += sample(*samples, "chessrl_selfplay_game_results_total", "result=\"draw\"").value_or(0);
  }
  if (games <= 0) return "";
  std::vector<std::pair<double, std::string>> sorted;
  for (const auto& [reason, n] : by_reason)
    if (n > 0) sorted.emplace_back(n, reason);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out = with_commas(games) + " self-play games: " +
                    fixed(100 * (games - draws) / games, 0) + "% decisive;";
  for (std::size_t i = 0; i < sorted.size(); ++i)
    out += std::string(i ? ", " : " ") + sorted[i].second + " " +
           fixed(100 * sorted[i].first / games, 0) + "%";
  return out;
}

std::string StatusLine::ladder() const {
  if (history_.empty()) return "";
  const auto it = history_.back().by_child.find("evaluator");
  if (it == history_.back().by_child.end()) return "";
  const Samples& e = it->second;
  const double rung = sample(e, "chessrl_eval_ladder_rung").value_or(0);
  if (rung < 1) return "";
  // chessrl_eval_ladder_in_play{opponent="<label>"}: 1 for the rung in play.
  const std::string prefix = "chessrl_eval_ladder_in_play{opponent=\"";
  std::string label;
  int rungs = 0;
  for (auto s = e.lower_bound(prefix); s != e.end(); ++s) {
    if (s->first.compare(0, prefix.size(), prefix) != 0) break;
    ++rungs;
    if (s->second > 0) label = s->first.substr(prefix.size(), s->first.size() - prefix.size() - 2);
  }
  if (label.empty()) return "";
  std::string out = label + " (" + fixed(rung, 0) + "/" + std::to_string(rungs) + ")";
  if (auto score = sample(e, "chessrl_eval_score", "opponent=\"" + label + "\""))
    return out + " score " + fixed(*score, 2);
  return out + " no result yet";
}

std::string StatusLine::format(std::chrono::seconds elapsed) const {
  const long long s = elapsed.count();
  char clock[32];
  std::snprintf(clock, sizeof clock, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  std::string line = clock;
  if (history_.empty()) return line + " | starting";
  const Scrape& now = history_.back();

  line += " | games " + with_commas(games()) + " (" + with_commas(games_per_hour()) + "/h";
  if (auto decisive = decisive_share()) line += ", " + fixed(100 * *decisive, 0) + "% decisive";
  line += ")";
  if (auto window = first(now, "replay", "chessrl_replay_positions"))
    line += " | window " + with_commas(*window) + " pos";

  if (auto step = first(now, "trainer-0", "chessrl_trainer_step")) {
    line += " | step " + with_commas(*step);
    auto loss = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"total\"");
    auto policy = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"policy\"");
    auto value = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"value\"");
    auto material = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"material\"");
    // The training-only heads a network may have (-reply, -mlh): shown when exported.
    auto reply = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"reply\"");
    auto moves_left = first(now, "trainer-0", "chessrl_trainer_loss", "head=\"moves_left\"");
    if (loss && *step > 0)
      line += " loss " + fixed(*loss, 2) + " (p " + fixed(policy.value_or(0), 2) + " v " +
              fixed(value.value_or(0), 2) +
              (material ? " m " + fixed(*material, 2) : std::string()) +
              (reply ? " r " + fixed(*reply, 2) : std::string()) +
              (moves_left ? " ml " + fixed(*moves_left, 2) : std::string()) + ")";
    if (first(now, "trainer-0", "chessrl_trainer_paused").value_or(0) > 0) line += " paused";
  }

  const double model = first(now, "trainer-0", "chessrl_model_version").value_or(0);
  double playing = -1;
  for (const Samples* sp : children(now, "selfplay"))
    if (auto v = sample(*sp, "chessrl_model_version")) playing = playing < 0 ? *v : std::min(playing, *v);
  line += " | model v" + with_commas(model);
  if (playing >= 0) line += " (selfplay v" + with_commas(playing);
  if (auto best = first(now, "evaluator", "chessrl_eval_best_version"); best && *best > 0)
    line += std::string(playing >= 0 ? ", " : " (") + "best v" + with_commas(*best);
  if (playing >= 0 || first(now, "evaluator", "chessrl_eval_best_version").value_or(0) > 0)
    line += ")";

  // Elo against each anchor the evaluator reports, e.g. opponent="random".
  auto it = now.by_child.find("evaluator");
  std::string elo;
  if (it != now.by_child.end()) {
    const std::string prefix = "chessrl_eval_elo{opponent=\"";
    for (auto s2 = it->second.lower_bound(prefix); s2 != it->second.end(); ++s2) {
      if (s2->first.compare(0, prefix.size(), prefix) != 0) break;
      const std::string opponent = s2->first.substr(prefix.size(), s2->first.size() - prefix.size() - 2);
      if (opponent == "best") continue;
      const std::string labels = "opponent=\"" + opponent + "\"";
      auto lower = sample(it->second, "chessrl_eval_elo_lower", labels);
      auto upper = sample(it->second, "chessrl_eval_elo_upper", labels);
      elo += (elo.empty() ? "" : ", ") + opponent + " " + signed_elo(s2->second);
      if (lower && upper) elo += " ±" + fixed((*upper - *lower) / 2, 0);
    }
  }
  line += " | elo " + (elo.empty() ? std::string("(no result yet)") : elo);
  if (const std::string rung = ladder(); !rung.empty()) line += " | ladder " + rung;
  return line;
}

}  // namespace chessrl::tool
