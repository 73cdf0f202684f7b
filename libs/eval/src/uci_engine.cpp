#include "chessrl/eval/uci_engine.h"

#include <signal.h>

#include <atomic>
#include <charconv>
#include <optional>
#include <sstream>

#include "chessrl/chess/notation.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/mcts/random.h"

namespace chessrl::eval {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Only [a-zA-Z0-9_.-]: safe as a metric label and a file name.
std::string sanitize(const std::string& text) {
  std::string out;
  for (char c : text)
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '.' || c == '-')
      out += c;
  return out;
}

std::string base_name(const std::string& program) {
  const auto slash = program.find_last_of('/');
  return slash == std::string::npos ? program : program.substr(slash + 1);
}

// "stockfish-SkillLevel0-movetime50": the program, its options and its limit.
std::string default_name(const UciEngineOptions& o) {
  std::string name = sanitize(base_name(o.program));
  for (const auto& [key, value] : o.options) name += "-" + sanitize(key + value);
  if (o.nodes > 0)
    name += "-nodes" + std::to_string(o.nodes);
  else if (o.depth > 0)
    name += "-depth" + std::to_string(o.depth);
  else
    name += "-movetime" + std::to_string(o.movetime_ms);
  return name;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

class UciEnginePlayer final : public Player {
 public:
  explicit UciEnginePlayer(UciEngineOptions options)
      : options_(std::move(options)),
        name_(options_.name.empty() ? default_name(options_) : options_.name) {}

  ~UciEnginePlayer() override {
    if (proc_) proc_->write_line("quit");  // the Subprocess reaps it (or kills it after 1 s)
  }

  std::string name() const override { return name_; }

  // Starts the process and completes the handshake.
  Result<void> start() {
    stop_engine();
    std::vector<std::string> argv{options_.program};
    argv.insert(argv.end(), options_.arguments.begin(), options_.arguments.end());
    auto proc = Subprocess::start(argv);
    if (!proc) return fail("cannot start engine " + name_ + ": " + proc.error());
    proc_.emplace(std::move(proc).value());
    if (!proc_->write_line("uci")) return died("before 'uci' was sent");
    if (auto r = read_until("uciok", Clock::now() + options_.start_timeout, "'uci'"); !r) return r;
    for (const auto& [key, value] : options_.options)
      if (!proc_->write_line("setoption name " + key + " value " + value))
        return died("during setoption");
    return sync();
  }

  Result<void> new_game() override {
    if (proc_ && proc_->write_line("ucinewgame") && sync()) return {};
    return start();  // not running, or not answering: a fresh process
  }

  Result<chess::Move> choose(const GameState& state) override {
    if (!proc_) return fail("engine " + name_ + " is not running (it failed earlier)");
    std::string position = "position " + (state.start_fen.empty() ? std::string("startpos")
                                                                  : "fen " + state.start_fen);
    if (!state.moves.empty()) {
      position += " moves";
      for (const chess::Move m : state.moves) position += " " + chess::to_uci(m);
    }
    std::string go;
    milliseconds budget = 4 * options_.move_grace;  // nodes and depth have no time bound
    if (options_.nodes > 0) {
      go = "go nodes " + std::to_string(options_.nodes);
    } else if (options_.depth > 0) {
      go = "go depth " + std::to_string(options_.depth);
    } else {
      go = "go movetime " + std::to_string(options_.movetime_ms);
      budget = milliseconds(options_.movetime_ms) + options_.move_grace;
    }
    if (!proc_->write_line(position) || !proc_->write_line(go)) return died("when sent a position");
    std::string line;
    if (auto r = read_until("bestmove", Clock::now() + budget, "'" + go + "'", &line); !r)
      return fail(r.error());
    std::istringstream words(line);
    std::string keyword, text;
    words >> keyword >> text;
    if (text.empty() || text == "(none)" || text == "0000")
      return fail("engine " + name_ + " answered 'bestmove " + text +
                  "' with legal moves left in " + state.position.fen());
    auto move = chess::parse_uci(state.position, text);
    if (!move)
      return fail("engine " + name_ + " answered illegal move '" + text + "' in " +
                  state.position.fen() + ": " + move.error());
    return move;
  }

 private:
  // Sends isready and waits for readyok.
  Result<void> sync() {
    if (!proc_->write_line("isready")) return died("before 'isready' was sent");
    return read_until("readyok", Clock::now() + options_.start_timeout, "'isready'");
  }

  // Reads lines until one whose first word is `keyword` (stored in *line).
  // A silent engine is killed at the deadline; one that closes its output has
  // exited. Either way the process is gone and the error says which.
  Result<void> read_until(const std::string& keyword, Clock::time_point deadline,
                          const std::string& request, std::string* line = nullptr) {
    const auto start = Clock::now();
    while (true) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      std::optional<std::string> got;
      if (left.count() > 0) got = proc_->read_line(left);
      if (!got) {
        // read_line ends early only at end of output; a few ms of slack
        // absorb poll's rounding at the deadline.
        if (left.count() > 0 && Clock::now() + milliseconds(5) < deadline)
          return died("after " + request);
        const auto waited = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
        stop_engine(/*kill=*/true);
        return fail("engine " + name_ + " did not answer " + request + " within " +
                    std::to_string(waited.count()) + " ms");
      }
      if (got->compare(0, keyword.size(), keyword) == 0 &&
          (got->size() == keyword.size() || (*got)[keyword.size()] == ' ')) {
        if (line) *line = *got;
        return {};
      }
    }
  }

  Failure died(const std::string& when) {
    stop_engine(/*kill=*/true);
    return fail("engine " + name_ + " exited " + when);
  }

  // Ends the process at once: SIGKILL, then the Subprocess reaps it.
  void stop_engine(bool kill = false) {
    if (!proc_) return;
    if (kill && proc_->pid() > 0) ::kill(proc_->pid(), SIGKILL);
    proc_.reset();
  }

  UciEngineOptions options_;
  std::string name_;
  std::optional<Subprocess> proc_;
};

Result<long long> parse_positive(const std::string& spec, const std::string& key,
                                 const std::string& value) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v <= 0)
    return fail("anchor '" + spec + "': " + key + "=" + value + " is not a positive integer");
  return v;
}

Result<UciEngineOptions> parse_uci_spec(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream in(spec.substr(4));
  for (std::string part; std::getline(in, part, ';');) parts.push_back(part);
  if (parts.empty() || trim(parts[0]).empty())
    return fail("anchor '" + spec + "': no program after 'uci:'");
  UciEngineOptions o;
  o.program = trim(parts[0]);
  int limits = 0;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    if (trim(part).empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string::npos)
      return fail("anchor '" + spec + "': '" + part + "' is not KEY=VALUE");
    const std::string key = trim(part.substr(0, eq)), value = trim(part.substr(eq + 1));
    if (key.empty()) return fail("anchor '" + spec + "': '" + part + "' has no key");
    if (key == "nodes" || key == "depth" || key == "movetime") {
      auto v = parse_positive(spec, key, value);
      if (!v) return fail(v.error());
      ++limits;
      if (key == "nodes") o.nodes = *v;
      if (key == "depth") {
        if (*v > 1000) return fail("anchor '" + spec + "': depth=" + value + " is above 1000");
        o.depth = int(*v);
      }
      if (key == "movetime") {
        if (*v > 3600000)
          return fail("anchor '" + spec + "': movetime=" + value + " is above an hour");
        o.movetime_ms = int(*v);
      }
    } else if (key == "name") {
      if (sanitize(value).empty())
        return fail("anchor '" + spec + "': name='" + value + "' has no [a-zA-Z0-9_.-] characters");
      o.name = value;
    } else {
      o.options.emplace_back(key, value);
    }
  }
  if (limits > 1)
    return fail("anchor '" + spec + "': give at most one of nodes, depth and movetime");
  return o;
}

}  // namespace

Result<std::unique_ptr<Player>> make_uci_player(const UciEngineOptions& options) {
  if (options.nodes <= 0 && options.depth <= 0 && options.movetime_ms <= 0)
    return fail("engine " + options.program + ": no search limit (nodes, depth or movetime)");
  auto player = std::make_unique<UciEnginePlayer>(options);
  if (auto started = player->start(); !started) return fail(started.error());
  return std::unique_ptr<Player>(std::move(player));
}

Result<PlayerFactory> parse_anchor(const std::string& spec, std::uint64_t seed) {
  // Each player made gets its own seed, derived from `seed` and a count.
  auto made = std::make_shared<std::atomic<std::uint64_t>>(0);
  auto next_seed = [seed, made] { return mcts::mix64(seed ^ mcts::mix64((*made)++)); };
  if (spec == "random")
    return PlayerFactory([next_seed]() -> Result<std::unique_ptr<Player>> {
      return make_random_player(next_seed());
    });
  if (spec == "greedy")
    return PlayerFactory([next_seed]() -> Result<std::unique_ptr<Player>> {
      return make_greedy_player(next_seed());
    });
  if (spec.rfind("uci:", 0) == 0) {
    auto options = parse_uci_spec(spec);
    if (!options) return fail(options.error());
    return PlayerFactory([o = std::move(options).value()] { return make_uci_player(o); });
  }
  return fail("anchor '" + spec + "': expected random, greedy or uci:PROGRAM[;KEY=VALUE]...");
}

std::string anchor_label(const std::string& spec) {
  if (spec == "random" || spec == "greedy") return spec;
  if (spec.rfind("uci:", 0) == 0) {
    if (auto o = parse_uci_spec(spec))
      return sanitize(o->name.empty() ? default_name(*o) : o->name);
  }
  const std::string label = sanitize(spec);
  return label.empty() ? "unknown" : label;
}

}  // namespace chessrl::eval
