#include "chessrl/uci/uci_engine.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <istream>
#include <optional>
#include <ostream>
#include <utility>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"
#include "chessrl/core/error.h"
#include "uci_text.h"

namespace chessrl::uci {

using namespace text;  // NOLINT(google-build-using-namespace): this file's own helpers

namespace {

using Clock = std::chrono::steady_clock;
using chess::Move;

// Root visits are 32-bit counters; a search never asks for more than this.
constexpr std::uint64_t kMaxVisits = std::uint64_t(1) << 31;
constexpr int kMaxThreads = 1024;
constexpr int kMaxNodesOption = 1'000'000'000;
constexpr int kMaxMinibatch = 256;
constexpr auto kInfoInterval = std::chrono::seconds(1);

}  // namespace

void UciEngine::LineWriter::write(std::string_view line) {
  std::lock_guard lock(mutex_);
  out_ << line << '\n';
  out_.flush();
}

UciEngine::UciEngine(UciEngineOptions options, std::ostream& out)
    : options_(std::move(options)),
      writer_(out),
      model_(options_.model),
      threads_(std::clamp(options_.threads, 0, kMaxThreads)),
      nodes_(std::clamp(options_.nodes, 1, kMaxNodesOption)),
      minibatch_(std::clamp(options_.minibatch, 1, kMaxMinibatch)),
      params_(options_.search),
      base_fen_(chess::kStartFen) {}

UciEngine::~UciEngine() {
  try {
    finish_search(true);
  } catch (...) {
    // Nothing sensible to do while destroying.
  }
}

bool UciEngine::searching() const { return running_.load(); }

void UciEngine::wait() {
  if (thread_.joinable()) thread_.join();
}

void UciEngine::info_string(std::string_view text) {
  writer_.write("info string " + printable(text));
}

bool UciEngine::handle(std::string_view line) {
  if (quit_) return false;
  try {
    const std::vector<std::string_view> tokens = split(line);
    if (tokens.empty()) return true;
    // UCI: unknown tokens are skipped and the rest of the line is parsed.
    std::size_t i = 0;
    while (i < tokens.size() && !is_command(tokens[i])) ++i;
    if (i == tokens.size()) {
      info_string("unknown command " + text::quoted(tokens[0]));
      return true;
    }
    if (i > 0)
      info_string("ignoring unknown " + text::quoted(join(tokens, 0, i)) + " before a command");
    const std::vector<std::string_view> args(tokens.begin() + std::ptrdiff_t(i) + 1, tokens.end());
    dispatch(tokens[i], args, line);
  } catch (const std::exception& e) {
    info_string(std::string("error: ") + e.what());
  } catch (...) {
    info_string("error: unknown exception");
  }
  return !quit_;
}

void UciEngine::run(std::istream& in) {
  std::string line;
  while (std::getline(in, line))
    if (!handle(line)) return;
  finish_search(true);
}

void UciEngine::dispatch(std::string_view command, const std::vector<std::string_view>& args,
                         std::string_view line) {
  if (command == "uci") {
    cmd_uci();
  } else if (command == "isready") {
    cmd_isready();
  } else if (command == "setoption") {
    cmd_setoption(args, line);
  } else if (command == "ucinewgame") {
    finish_search(true);
    tree_valid_ = false;
  } else if (command == "position") {
    finish_search(true);
    cmd_position(args);
  } else if (command == "go") {
    cmd_go(args);
  } else if (command == "stop") {
    finish_search(true);
  } else if (command == "quit") {
    finish_search(true);
    quit_ = true;
  } else if (command == "ponderhit") {
    info_string("ponderhit ignored: pondering is not supported");
  }
  // debug and register: accepted, nothing to do.
}

void UciEngine::cmd_uci() {
  writer_.write("id name " + options_.name);
  writer_.write("id author " + options_.author);
  writer_.write("option name Threads type spin default " +
                std::to_string(std::clamp(options_.threads, 0, kMaxThreads)) + " min 0 max " +
                std::to_string(kMaxThreads));
  writer_.write("option name Model type string default " +
                (options_.model.empty() ? std::string("<empty>") : options_.model));
  writer_.write("option name Nodes type spin default " +
                std::to_string(std::clamp(options_.nodes, 1, kMaxNodesOption)) + " min 1 max " +
                std::to_string(kMaxNodesOption));
  writer_.write("option name MinibatchSize type spin default " +
                std::to_string(std::clamp(options_.minibatch, 1, kMaxMinibatch)) + " min 1 max " +
                std::to_string(kMaxMinibatch));
  writer_.write("option name CPuct type string default " + format_float(options_.search.cpuct));
  writer_.write("option name UCI_ShowWDL type check default true");
  writer_.write("uciok");
}

void UciEngine::cmd_isready() {
  // A running search keeps its network; the reply must come at once.
  if (!running_) {
    finish_search(false);
    ensure_backend();
  }
  writer_.write("readyok");
}

void UciEngine::cmd_setoption(const std::vector<std::string_view>& args, std::string_view line) {
  if (args.empty() || !iequals(args[0], "name")) {
    info_string("setoption needs 'name <option> [value <value>]'");
    return;
  }
  std::size_t value_at = 1;
  while (value_at < args.size() && !iequals(args[value_at], "value")) ++value_at;
  const std::string name = join(args, 1, value_at);
  if (name.empty()) {
    info_string("setoption needs an option name");
    return;
  }
  // The value is the rest of the line as written (a path may hold spaces).
  std::string value;
  if (value_at + 1 < args.size()) {
    const std::size_t from = std::size_t(args[value_at + 1].data() - line.data());
    std::string_view rest = line.substr(from);
    while (!rest.empty() && is_space(rest.back())) rest.remove_suffix(1);
    value = std::string(rest);
  }
  const std::string key = lower(name);

  auto bad_int = [&](int lo, int hi) {
    info_string("option " + name + ": " + text::quoted(value) + " is not an integer in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  auto int_in = [&](int lo, int hi) -> std::optional<int> {
    auto v = parse_int<int>(value);
    if (!v || *v < lo || *v > hi) {
      bad_int(lo, hi);
      return std::nullopt;
    }
    return v;
  };

  if (key == "threads") {
    if (auto v = int_in(0, kMaxThreads)) {
      if (*v != threads_) load_failed_ = false;
      threads_ = *v;
    }
  } else if (key == "model") {
    std::string model = value == "<empty>" ? std::string() : value;
    if (model != model_) load_failed_ = false;
    model_ = std::move(model);
  } else if (key == "nodes") {
    if (auto v = int_in(1, kMaxNodesOption)) nodes_ = *v;
  } else if (key == "minibatchsize") {
    if (auto v = int_in(1, kMaxMinibatch)) minibatch_ = *v;
  } else if (key == "cpuct") {
    auto v = parse_float(value);
    mcts::SearchParams params = params_;
    if (v) params.cpuct = *v;
    if (!v || !params.validate()) {
      info_string("option CPuct: " + text::quoted(value) + " is not a number > 0");
      return;
    }
    params_ = params;
  } else if (key == "uci_showwdl") {
    if (iequals(value, "true")) {
      show_wdl_ = true;
    } else if (iequals(value, "false")) {
      show_wdl_ = false;
    } else {
      info_string("option UCI_ShowWDL: " + text::quoted(value) + " is not true or false");
    }
  } else {
    info_string("unknown option " + text::quoted(name));
  }
}

void UciEngine::cmd_position(const std::vector<std::string_view>& args) {
  if (args.empty()) {
    info_string("position needs 'startpos' or 'fen <FEN>'; position unchanged");
    return;
  }
  std::string fen;
  std::size_t i = 1;
  if (iequals(args[0], "startpos")) {
    fen = chess::kStartFen;
  } else if (iequals(args[0], "fen")) {
    while (i < args.size() && !iequals(args[i], "moves")) ++i;
    if (i == 1) {
      info_string("position fen needs a FEN; position unchanged");
      return;
    }
    fen = join(args, 1, i);
  } else {
    info_string("position needs 'startpos' or 'fen <FEN>', got " + text::quoted(args[0]) +
                "; position unchanged");
    return;
  }
  auto parsed = chess::Position::from_fen(fen);
  if (!parsed) {
    info_string("bad FEN " + text::quoted(fen) + ": " + parsed.error() + "; position unchanged");
    return;
  }
  chess::Position pos = std::move(parsed).value();
  const std::string base = pos.fen();
  if (i < args.size() && !iequals(args[i], "moves")) {
    info_string("position: expected 'moves', got " + text::quoted(args[i]) +
                "; position unchanged");
    return;
  }
  std::vector<Move> moves;
  for (std::size_t k = i + 1; k < args.size(); ++k) {
    auto m = chess::parse_uci(pos, args[k]);
    if (!m) {
      info_string("bad move " + text::quoted(args[k]) + " (move " + std::to_string(k - i) +
                  " of the list): " + m.error() + "; position unchanged");
      return;
    }
    pos.make_move(*m);
    moves.push_back(*m);
  }
  base_fen_ = base;
  moves_ = std::move(moves);
  position_ = std::move(pos);
}

void UciEngine::cmd_go(const std::vector<std::string_view>& args) {
  const auto start = Clock::now();
  if (running_) {
    info_string("go ignored: a search is running (send stop first)");
    return;
  }
  finish_search(false);

  std::optional<std::int64_t> wtime, btime, winc, binc, movestogo, movetime, nodes;
  bool infinite = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string key = lower(args[i]);
    if (key == "infinite") {
      infinite = true;
      continue;
    }
    if (key == "ponder") {
      info_string("go ponder: pondering is not supported; searching normally");
      continue;
    }
    if (key == "searchmoves") {
      info_string("go searchmoves is not supported; searching all moves");
      while (i + 1 < args.size() && chess::parse_uci(position_, args[i + 1])) ++i;
      continue;
    }
    std::optional<std::int64_t>* slot = nullptr;
    if (key == "wtime") slot = &wtime;
    if (key == "btime") slot = &btime;
    if (key == "winc") slot = &winc;
    if (key == "binc") slot = &binc;
    if (key == "movestogo") slot = &movestogo;
    if (key == "movetime") slot = &movetime;
    if (key == "nodes") slot = &nodes;
    const bool ignored = key == "depth" || key == "mate";
    if (!slot && !ignored) {
      info_string("go: unknown parameter " + text::quoted(args[i]) + "; go ignored");
      return;
    }
    std::optional<std::int64_t> v;
    if (i + 1 < args.size()) v = parse_int<std::int64_t>(args[i + 1]);
    if (!v) {
      info_string("go: " + key + " needs an integer" +
                  (i + 1 < args.size() ? ", got " + text::quoted(args[i + 1]) : std::string()) +
                  "; go ignored");
      return;
    }
    ++i;
    if ((key == "nodes" || key == "movetime" || key == "movestogo") && *v < 0) {
      info_string("go: " + key + " must not be negative; go ignored");
      return;
    }
    if (ignored) {
      info_string("go " + key + " is not supported; the search is limited by nodes and time");
    } else {
      *slot = v;
    }
  }

  if (const chess::GameResult result = chess::game_result(position_); result.is_over()) {
    info_string("the game is over: " + result.to_string());
    writer_.write("bestmove 0000");
    return;
  }
  if (!ensure_backend()) {
    info_string("no network to search with");
    writer_.write("bestmove 0000");
    return;
  }

  SearchPlan plan;
  plan.start = start;
  plan.infinite = infinite;
  plan.leaves_per_round = minibatch_;
  plan.show_wdl = show_wdl_;
  bool timed = false;
  if (movetime) {
    plan.time = std::chrono::milliseconds(std::max<std::int64_t>(*movetime, 1));
    timed = true;
  }
  const bool white = position_.side_to_move() == chess::kWhite;
  if (const auto& clock = white ? wtime : btime) {
    const std::int64_t remaining = std::max<std::int64_t>(*clock, 0);
    const std::int64_t inc = std::max<std::int64_t>((white ? winc : binc).value_or(0), 0);
    const std::int64_t moves_left = std::max<std::int64_t>(movestogo.value_or(30), 1);
    std::int64_t budget = remaining / moves_left + inc * 3 / 4;
    budget = std::min(budget, remaining / 2 - 50);  // keep a safety margin
    budget = std::max<std::int64_t>(budget, 10);
    const auto t = std::chrono::milliseconds(budget);
    plan.time = timed ? std::min<Clock::duration>(plan.time, t) : t;
    timed = true;
  }
  if (nodes)
    plan.visits = std::clamp<std::uint64_t>(std::uint64_t(*nodes), 1, kMaxVisits);
  else if (!timed && !infinite)
    plan.visits = std::uint64_t(nodes_);
  else
    plan.visits = kMaxVisits;
  if (infinite) {
    plan.visits = kMaxVisits;
    plan.time = Clock::duration::zero();
  }

  prepare_tree();
  halt_ = false;
  {
    std::lock_guard lock(stop_mutex_);
    stop_requested_ = false;
  }
  running_ = true;
  try {
    thread_ = std::thread(&UciEngine::search_main, this, plan);
  } catch (...) {
    running_ = false;
    throw;
  }
}

bool UciEngine::ensure_backend() {
  if (evaluator_ && model_ == loaded_model_ && threads_ == loaded_threads_) return true;
  if (load_failed_) return evaluator_ != nullptr;
  try {
    if (!options_.backend_factory) throw Error("the engine has no backend factory");
    std::shared_ptr<nn::InferenceBackend> backend = options_.backend_factory(model_, threads_);
    if (!backend) throw Error("the backend factory made no network");
    nn::BatchEvaluatorOptions eval_options;
    eval_options.max_batch = kMaxMinibatch;
    eval_options.batch_timeout = std::chrono::microseconds(0);  // one caller: never wait
    eval_options.workers = 1;
    eval_options.cache_size = options_.cache_size;
    auto evaluator = std::make_unique<nn::BatchEvaluator>(backend, eval_options);
    evaluator_ = std::move(evaluator);
    backend_ = std::move(backend);
    loaded_model_ = model_;
    loaded_threads_ = threads_;
    tree_valid_ = false;  // its values came from another network
    info_string("network: " + backend_->describe() +
                (model_.empty() ? std::string() : " from " + model_));
    return true;
  } catch (const std::exception& e) {
    std::string text = "cannot load the network (Model " +
                       (model_.empty() ? std::string("<empty>") : text::quoted(model_)) +
                       ", Threads " + std::to_string(threads_) + "): " + e.what();
    if (evaluator_) {
      text += "; keeping the previous network";
      model_ = loaded_model_;
      threads_ = loaded_threads_;
    } else {
      load_failed_ = true;
    }
    info_string(text);
    return evaluator_ != nullptr;
  }
}

void UciEngine::prepare_tree() {
  if (!search_ || search_->params().cpuct != params_.cpuct) {
    search_ = std::make_unique<mcts::Search>(params_);
    tree_valid_ = false;
  }
  const bool extends = tree_valid_ && tree_base_fen_ == base_fen_ &&
                       tree_moves_.size() <= moves_.size() &&
                       std::equal(tree_moves_.begin(), tree_moves_.end(), moves_.begin());
  if (extends) {
    for (std::size_t k = tree_moves_.size(); k < moves_.size(); ++k) search_->advance(moves_[k]);
  } else {
    search_->reset(position_);
  }
  tree_base_fen_ = base_fen_;
  tree_moves_ = moves_;
  tree_valid_ = true;
}

void UciEngine::search_main(SearchPlan plan) {
  std::uint64_t playouts = 0;
  try {
    mcts::SearchLimits limits;
    limits.visits = plan.visits;
    limits.stop = &halt_;
    limits.leaves_per_round = plan.leaves_per_round;
    if (plan.time != Clock::duration::zero()) {
      // The clock started when go arrived (a network may have loaded since).
      limits.time = std::max<Clock::duration>(plan.time - (Clock::now() - plan.start),
                                              std::chrono::milliseconds(1));
    }
    auto last_info = Clock::now();
    const auto on_round = [&](const mcts::SearchProgress& progress) {
      playouts = progress.playouts;
      // A proven root has nothing left to learn.
      if (search_->root().proven()) halt_ = true;
      if (const auto now = Clock::now(); now - last_info >= kInfoInterval) {
        print_info(plan, playouts);
        last_info = now;
      }
    };
    playouts = mcts::run_search(*search_, *evaluator_, limits, on_round).playouts;
    if (plan.infinite) {
      std::unique_lock lock(stop_mutex_);
      stop_cv_.wait(lock, [&] { return stop_requested_; });
    }
    if (search_->root_expanded()) print_info(plan, playouts);
  } catch (const std::exception& e) {
    tree_valid_ = false;  // requests may be left in flight; read after the join
    info_string(std::string("search failed: ") + e.what());
  }
  Move best = search_->best_move();
  if (best.is_none()) {
    const chess::MoveList moves = chess::legal_moves(position_);
    if (!moves.empty()) best = moves[0];
  }
  writer_.write("bestmove " + chess::to_uci(best));
  running_ = false;
}

void UciEngine::print_info(const SearchPlan& plan, std::uint64_t playouts) {
  const mcts::Search& s = *search_;
  const auto elapsed = Clock::now() - plan.start;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
  const double seconds = std::chrono::duration<double>(elapsed).count();
  const TreeShape shape = tree_shape(s.root());
  const int depth = std::max(1, shape.mean_depth_rounded_up);
  const int seldepth = std::max(depth, shape.max_depth);
  const auto nps = seconds > 0 ? std::uint64_t(double(playouts) / seconds) : std::uint64_t(0);

  std::string score;
  const Move best = s.best_move();
  std::optional<mcts::ChildInfo> best_child;
  for (const mcts::ChildInfo& c : s.children())
    if (c.move == best) best_child = c;
  if (best_child && best_child->proof == mcts::Proof::kWin) {
    score = "mate " + std::to_string((best_child->proof_plies + 2) / 2);
  } else if (s.root().proof == mcts::Proof::kWin) {
    score = "mate -" + std::to_string(std::max(1, (int(s.root().proof_plies) + 1) / 2));
  } else {
    const double q = s.root().proven() ? -s.root().proven_value() : -s.root().q;
    score = "cp " + std::to_string(centipawns(q));
  }

  std::string line = "info depth " + std::to_string(depth) + " seldepth " +
                     std::to_string(seldepth) + " nodes " + std::to_string(s.root_visits()) +
                     " nps " + std::to_string(nps) + " time " + std::to_string(ms) + " score " +
                     score;
  if (plan.show_wdl) {
    const nn::Wdl wdl = s.root_wdl();
    const long w = std::clamp(std::lround(double(wdl.win) * 1000), 0L, 1000L);
    const long l = std::clamp(std::lround(double(wdl.loss) * 1000), 0L, 1000L - w);
    line +=
        " wdl " + std::to_string(w) + " " + std::to_string(1000 - w - l) + " " + std::to_string(l);
  }
  const std::vector<Move> pv = s.principal_variation();
  if (!pv.empty()) {
    line += " pv";
    for (Move m : pv) line += " " + chess::to_uci(m);
  }
  writer_.write(line);
}

void UciEngine::finish_search(bool stop) {
  if (!thread_.joinable()) return;
  if (stop) {
    halt_ = true;
    {
      std::lock_guard lock(stop_mutex_);
      stop_requested_ = true;
    }
    stop_cv_.notify_all();
  }
  thread_.join();
}

}  // namespace chessrl::uci
