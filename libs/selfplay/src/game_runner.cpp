#include "chessrl/selfplay/game_runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "chessrl/chess/rules.h"
#include "chessrl/core/error.h"
#include "chessrl/record/game_limits.h"

namespace chessrl::selfplay {

using chess::Outcome;
using chess::Termination;
using Clock = std::chrono::steady_clock;

namespace {

// Evaluates a few leaf batches on a helper thread while the runner thread
// evaluates its own, so a round over two networks waits once, not twice in a
// row. The thread starts at the first use (the first overlap of networks).
class HelperEvaluations {
 public:
  using Work = std::vector<std::pair<nn::BatchEvaluator*, std::span<nn::EvalRequest>>>;
  ~HelperEvaluations() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void start(Work work) {
    {
      std::lock_guard lock(mutex_);
      work_ = std::move(work);
      pending_ = true;
      error_ = nullptr;
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    changed_.notify_all();
  }
  // Waits for the batches given to start(); rethrows what an evaluate() threw.
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !pending_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return quit_ || pending_; });
      if (quit_) return;
      Work work = std::move(work_);
      lock.unlock();
      std::exception_ptr error;
      try {
        for (auto& [evaluator, requests] : work) evaluator->evaluate(requests);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      pending_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  Work work_;
  bool pending_ = false, quit_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

Result<void> SelfPlayConfig::validate() const {
  if (auto r = search.validate(); !r) return r;
  if (auto r = playouts.validate(); !r) return r;
  if (auto r = temperature.validate(); !r) return r;
  if (auto r = resign.validate(); !r) return r;
  if (max_plies < 1 || max_plies > record::kMaxGamePlies)
    return fail("max plies must be in [1, " + std::to_string(record::kMaxGamePlies) +
                "] (the replay service refuses a longer game), got " + std::to_string(max_plies));
  if (adjudicate_material < 0)
    return fail("adjudicate material must be >= 0 pawns (0: off), got " +
                std::to_string(adjudicate_material));
  if (!(short_game_fraction >= 0 && short_game_fraction <= 1))
    return fail("short game fraction must be in [0, 1], got " +
                std::to_string(short_game_fraction));
  if (short_max_plies < 1 || short_max_plies > record::kMaxGamePlies)
    return fail("short max plies must be in [1, " + std::to_string(record::kMaxGamePlies) +
                "] (the replay service refuses a longer game), got " +
                std::to_string(short_max_plies));
  if (short_adjudicate_material < 0)
    return fail("short adjudicate material must be >= 0 pawns (0: off), got " +
                std::to_string(short_adjudicate_material));
  return {};
}

Result<void> GameRunnerOptions::validate() const {
  if (auto r = config.validate(); !r) return r;
  if (concurrent_games < 1)
    return fail("concurrent games must be >= 1, got " + std::to_string(concurrent_games));
  if (threads < 1) return fail("threads must be >= 1, got " + std::to_string(threads));
  if (leaves_per_search < 1 || leaves_per_search > 1024)
    return fail("leaves per search must be in [1, 1024], got " + std::to_string(leaves_per_search));
  if (!start_fen.empty())
    if (auto p = chess::Position::from_fen(start_fen); !p)
      return fail("start position: " + p.error());
  return {};
}

struct GameRunner::Counters {
  std::atomic<std::uint64_t> games{0}, positions{0}, recorded{0}, playouts{0}, evaluations{0};
  std::atomic<std::uint64_t> white_wins{0}, black_wins{0}, draws{0}, resignations{0};
  std::atomic<std::uint64_t> resign_checked{0}, resign_false_positives{0};
  std::atomic<std::uint64_t> busy_ns{0}, wait_ns{0}, idle_slot_ns{0}, abandoned{0};
};

struct GameRunner::Player {
  explicit Player(Network n) : network(std::move(n)) {}
  Network network;
  std::uint64_t in_progress = 0;  // games on it; players_mutex_
  Clock::time_point replaced_at;  // when switch_to() replaced it
};

struct GameRunner::Slot {
  explicit Slot(const mcts::SearchParams& params) : search(params) {}
  bool active = false;
  mcts::Search search;
  mcts::Rng rng;
  std::optional<mcts::ResignTracker> resign;
  record::GameRecord record;
  int target_visits = 0;
  bool full = false;
  int max_plies = 0;           // this game's move limit and adjudication
  int adjudicate_material = 0;
  int offset = 0, count = 0;
  bool watched = false;  // its games are copied for people to watch (the first slot)
  std::shared_ptr<Player> player;  // the network of the game in progress
  std::size_t batch = 0;           // this round: the index of its network's leaf batch
};

std::uint64_t fresh_id_nonce() {
  static std::atomic<std::uint64_t> calls{0};
  std::random_device device;
  std::uint64_t nonce = (std::uint64_t{device()} << 32) ^ device();
  nonce ^= mcts::mix64(
      static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
  nonce ^= mcts::mix64(~(static_cast<std::uint64_t>(::getpid()) << 20 ^ calls.fetch_add(1)));
  return mcts::mix64(nonce);
}

GameRunner::GameRunner(nn::BatchEvaluator& evaluator, GameRunnerOptions options)
    // Not owned: a pointer that shares no ownership.
    : GameRunner(Network{std::shared_ptr<nn::BatchEvaluator>(std::shared_ptr<void>(), &evaluator), 0},
                 std::move(options)) {}

GameRunner::GameRunner(Network network, GameRunnerOptions options)
    : options_(std::move(options)), counters_(std::make_unique<Counters>()) {
  options_.validate().value_or_throw();
  if (!network.evaluator) throw Error("game runner: a network without an evaluator");
  current_ = std::make_shared<Player>(std::move(network));
  id_nonce_ = options_.id_nonce ? *options_.id_nonce : fresh_id_nonce();
  if (!options_.start_fen.empty())
    start_ = chess::Position::from_fen(options_.start_fen).value_or_throw();
}

GameRunner::~GameRunner() = default;

RunnerStats GameRunner::stats() const {
  const Counters& c = *counters_;
  RunnerStats s;
  s.games = c.games.load();
  s.positions = c.positions.load();
  s.recorded = c.recorded.load();
  s.playouts = c.playouts.load();
  s.evaluations = c.evaluations.load();
  s.white_wins = c.white_wins.load();
  s.black_wins = c.black_wins.load();
  s.draws = c.draws.load();
  s.resignations = c.resignations.load();
  s.resign_checked = c.resign_checked.load();
  s.resign_false_positives = c.resign_false_positives.load();
  s.busy_seconds = double(c.busy_ns.load()) * 1e-9;
  s.wait_seconds = double(c.wait_ns.load()) * 1e-9;
  s.idle_slot_seconds = double(c.idle_slot_ns.load()) * 1e-9;
  s.abandoned = c.abandoned.load();
  return s;
}

void GameRunner::switch_to(Network next) {
  if (!next.evaluator) throw Error("game runner: switch to a network without an evaluator");
  std::shared_ptr<Player> replaced;
  {
    std::lock_guard lock(players_mutex_);
    replaced = std::exchange(current_, std::make_shared<Player>(std::move(next)));
    if (replaced->in_progress > 0) {
      replaced->replaced_at = Clock::now();
      ++retiring_;
      return;  // the slots playing on it hold it; the last game's end retires it
    }
  }
  if (options_.on_retired) options_.on_retired(replaced->network.version, 0.0);
}

std::uint64_t GameRunner::version() const {
  std::lock_guard lock(players_mutex_);
  return current_->network.version;
}

int GameRunner::networks_in_play() const {
  std::lock_guard lock(players_mutex_);
  return 1 + retiring_;
}

void GameRunner::release(Slot& slot) {
  std::shared_ptr<Player> player = std::move(slot.player);
  if (!player) return;
  std::optional<double> overlap;
  {
    std::lock_guard lock(players_mutex_);
    if (--player->in_progress == 0 && player != current_) {
      --retiring_;
      overlap = std::chrono::duration<double>(Clock::now() - player->replaced_at).count();
    }
  }
  if (overlap && options_.on_retired) options_.on_retired(player->network.version, *overlap);
  // The network's evaluator goes with its last holder, here or in the runner.
}

bool GameRunner::start_game(Slot& slot) {
  std::uint64_t index = 0;
  {
    // The index and the network together: a game that starts after a
    // switch_to() plays on the new network.
    std::lock_guard lock(players_mutex_);
    index = next_index_.load();
    if (options_.max_games && index >= options_.max_games) return false;
    next_index_.store(index + 1);
    slot.player = current_;
    ++current_->in_progress;
  }

  const std::uint64_t seed = mcts::mix64(options_.seed ^ mcts::mix64(index));
  slot.rng = mcts::Rng(seed);
  const mcts::ResignPolicy& resign = options_.config.resign;
  const bool disabled = resign.enabled() && slot.rng.uniform() < double(resign.disabled_fraction);
  slot.resign.emplace(resign, disabled);
  const SelfPlayConfig& config = options_.config;
  // Drawn only when short games are on, so other runs keep their moves.
  const bool short_game =
      config.short_game_fraction > 0 && slot.rng.uniform() < double(config.short_game_fraction);
  // A short game is never longer than a full one.
  slot.max_plies = short_game ? std::min(config.short_max_plies, config.max_plies) : config.max_plies;
  slot.adjudicate_material =
      short_game ? config.short_adjudicate_material : config.adjudicate_material;
  slot.record = record::GameRecord{};
  char id[64];
  std::snprintf(id, sizeof id, "%016" PRIx64 "-%016" PRIx64 "-%" PRIu64, options_.seed, id_nonce_,
                index);
  slot.record.id = id;
  slot.record.index = index;
  slot.record.seed = seed;
  slot.record.start_fen = start_.fen();
  slot.record.resign_disabled = disabled;
  slot.search.reset(start_);
  start_move(slot);
  if (slot.watched) publish_watched(slot, true);
  return true;
}

WatchedGames GameRunner::watched() const {
  std::lock_guard lock(watched_mutex_);
  return watched_;
}

void GameRunner::publish_watched(const Slot& slot, bool new_game) {
  const record::GameRecord& record = slot.record;
  std::lock_guard lock(watched_mutex_);
  if (new_game || !watched_.current) {
    // A game abandoned by a stop is not kept as `previous`.
    if (watched_.current && watched_.current->result.is_over())
      watched_.previous = std::move(watched_.current);
    watched_.current = WatchedGame{record.id, record.start_fen, {}, {}, slot.max_plies};
  }
  WatchedGame& game = *watched_.current;
  game.moves.insert(game.moves.end(), record.moves.begin() + std::ptrdiff_t(game.moves.size()),
                    record.moves.end());
  game.result = record.result;
}

void GameRunner::start_move(Slot& slot) {
  const SelfPlayConfig& config = options_.config;
  const mcts::PlayoutCap::Draw draw = config.playouts.draw(slot.rng);
  slot.target_visits = draw.visits;
  slot.full = draw.full;
  if (config.search.gumbel) {
    // Gumbel noise explores in place of Dirichlet noise and temperature; the
    // schedule covers the playouts this move adds to the reused tree.
    const std::uint64_t have = slot.search.root_visits();
    const auto target = std::uint64_t(draw.visits);
    slot.search.start_gumbel(slot.rng.next(), target > have ? target - have : 0);
  } else if ((draw.full || config.noise_on_reduced) && config.search.noise_fraction > 0) {
    slot.search.request_root_noise(slot.rng.next());
  }
}

bool GameRunner::finish_move(Slot& slot) {
  const SelfPlayConfig& config = options_.config;
  mcts::Search& search = slot.search;
  record::GameRecord& record = slot.record;
  const int ply = int(record.moves.size());
  const chess::Color side = search.position().side_to_move();
  const nn::Wdl wdl = search.root_wdl();
  const float value = wdl.value();

  // A side that resigns plays no move here, so the search leaves no target:
  // a target is the move played at its ply (record::MoveTarget), and one past
  // the last move is refused by replay and by the trainer's --data alike.
  if (slot.resign->update(side, value, ply)) {
    record.result = {side == chess::kWhite ? Outcome::kBlackWins : Outcome::kWhiteWins,
                     Termination::kResignation};
    return true;
  }

  if (slot.full && search.num_root_moves() > 1) {
    record::MoveTarget target;
    target.ply = ply;
    target.root_value = value;
    target.root_draw = wdl.draw;
    target.visits = search.root_visits();
    if (config.search.gumbel) {
      for (const auto& [move, p] : search.gumbel_policy())
        if (p > 0) target.policy.push_back({move, p});
    } else {
      double total = 0;
      const std::vector<mcts::ChildInfo> children = search.children();
      for (const mcts::ChildInfo& c : children) total += c.visits;
      for (const mcts::ChildInfo& c : children)
        if (c.visits > 0) target.policy.push_back({c.move, float(double(c.visits) / total)});
    }
    if (!target.policy.empty()) {
      record.targets.push_back(std::move(target));
      counters_->recorded.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const chess::Move move = config.search.gumbel
                               ? search.gumbel_move()
                               : mcts::choose_move(search, config.temperature.at(ply), slot.rng);
  record.moves.push_back(move);
  counters_->positions.fetch_add(1, std::memory_order_relaxed);
  if (config.tree_reuse) {
    search.advance(move);
  } else {
    chess::Position next = search.position();
    next.make_move(move);
    search.reset(next);
  }
  const chess::GameResult result = chess::game_result(search.position());
  if (result.is_over()) {
    record.result = result;
    return true;
  }
  if (int(record.moves.size()) >= slot.max_plies) {
    record.result = chess::move_limit_result(search.position(), slot.adjudicate_material);
    return true;
  }
  start_move(slot);
  return false;
}

void GameRunner::thread_main(std::vector<Slot*> slots, const GameFunction& on_game,
                             const std::atomic<bool>* stop, const std::atomic<bool>* drain,
                             const std::atomic<bool>* failed) {
  const auto leaves = std::size_t(options_.leaves_per_search);
  std::vector<nn::EvalRequest> buffer(slots.size() * leaves);
  // This round's leaves of each network in play: buffer[begin, end).
  struct Batch {
    Player* player;
    std::size_t begin, end;
  };
  std::vector<Batch> batches;
  std::optional<HelperEvaluations> helper;  // made at the first round over two networks
  Counters& counters = *counters_;
  const auto nanos = [](Clock::duration d) {
    return std::uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  };
  for (;;) {
    const Clock::time_point round_start = Clock::now();
    Clock::duration waited{};
    if (stop && stop->load(std::memory_order_relaxed)) break;
    if (failed->load(std::memory_order_relaxed)) break;
    bool any = false;
    std::size_t idle = 0;
    const bool draining = drain && drain->load(std::memory_order_relaxed);
    for (Slot* s : slots) {
      if (!s->active && !draining) s->active = start_game(*s);
      any = any || s->active;
      idle += s->active ? 0 : 1;
    }
    if (!any) break;

    // Group the slots by network: each network's leaves lie together.
    batches.clear();
    for (Slot* s : slots) {
      if (!s->active) continue;
      std::size_t b = 0;
      while (b < batches.size() && batches[b].player != s->player.get()) ++b;
      if (b == batches.size()) batches.push_back({s->player.get(), 0, 0});
      batches[b].end += leaves;  // room for now
      s->batch = b;
    }
    for (std::size_t b = 0, base = 0; b < batches.size(); ++b) {
      const std::size_t room = batches[b].end;
      batches[b].begin = batches[b].end = base;
      base += room;
    }
    std::size_t n = 0;
    std::uint64_t playouts_before = 0;
    for (Slot* s : slots) {
      if (!s->active) continue;
      playouts_before += s->search.counters().playouts;
      const std::uint64_t have = s->search.root_visits();
      const std::uint64_t target = std::uint64_t(s->target_visits);
      Batch& batch = batches[s->batch];
      s->offset = int(batch.end);
      s->count = s->search.gather(std::span<nn::EvalRequest>(buffer.data() + batch.end, leaves),
                                  have < target ? target - have : 0);
      batch.end += std::size_t(s->count);
      n += std::size_t(s->count);
    }
    if (n > 0) {
      const Clock::time_point wait_start = Clock::now();
      const auto span_of = [&](const Batch& b) {
        return std::span<nn::EvalRequest>(buffer.data() + b.begin, b.end - b.begin);
      };
      // The largest batch here, the others on the helper at the same time.
      std::size_t largest = 0;
      for (std::size_t b = 1; b < batches.size(); ++b)
        if (batches[b].end - batches[b].begin > batches[largest].end - batches[largest].begin)
          largest = b;
      HelperEvaluations::Work others;
      for (std::size_t b = 0; b < batches.size(); ++b)
        if (b != largest && batches[b].end > batches[b].begin)
          others.emplace_back(batches[b].player->network.evaluator.get(), span_of(batches[b]));
      if (!others.empty()) {
        if (!helper) helper.emplace();
        helper->start(std::move(others));
      }
      std::exception_ptr error;
      try {
        if (batches[largest].end > batches[largest].begin)
          batches[largest].player->network.evaluator->evaluate(span_of(batches[largest]));
      } catch (...) {
        error = std::current_exception();
      }
      if (helper) helper->wait();  // (no-op when nothing was started; rethrows its error)
      if (error) std::rethrow_exception(error);
      waited = Clock::now() - wait_start;
    }
    counters.evaluations.fetch_add(n, std::memory_order_relaxed);

    std::uint64_t playouts_after = 0;
    for (Slot* s : slots) {
      if (!s->active) continue;
      mcts::Search& search = s->search;
      search.backup(
          std::span<const nn::EvalRequest>(buffer.data() + s->offset, std::size_t(s->count)));
      playouts_after += search.counters().playouts;
      const bool done =
          search.root_expanded() &&
          (search.root_visits() >= std::uint32_t(s->target_visits) || search.num_root_moves() == 1);
      if (!done) continue;
      // The move ends the search; a finished game may reset the counters.
      const bool over = finish_move(*s);
      if (s->watched) publish_watched(*s, false);
      if (!over) continue;
      s->active = false;
      record::GameRecord& record = s->record;
      const mcts::ResignTracker& resign = *s->resign;
      record.would_resign_ply = resign.would_have_resigned_ply();
      record.would_resign_side = resign.would_have_resigned_side();
      counters.games.fetch_add(1);
      switch (record.result.outcome) {
        case Outcome::kWhiteWins:
          counters.white_wins.fetch_add(1);
          break;
        case Outcome::kBlackWins:
          counters.black_wins.fetch_add(1);
          break;
        default:
          counters.draws.fetch_add(1);
          break;
      }
      if (record.result.reason == Termination::kResignation) counters.resignations.fetch_add(1);
      if (record.resign_disabled && record.would_resign_ply >= 0) {
        counters.resign_checked.fetch_add(1);
        if (record.resign_false_positive()) counters.resign_false_positives.fetch_add(1);
      }
      if (on_game) {
        std::lock_guard lock(emit_mutex_);
        on_game(std::move(record), s->player->network.version);
      }
      release(*s);
    }
    counters.playouts.fetch_add(playouts_after - playouts_before, std::memory_order_relaxed);
    const Clock::duration round = Clock::now() - round_start;
    if (idle > 0) counters.idle_slot_ns.fetch_add(idle * nanos(round), std::memory_order_relaxed);
    const Clock::duration busy = round - waited;
    counters.busy_ns.fetch_add(nanos(busy), std::memory_order_relaxed);
    counters.wait_ns.fetch_add(nanos(waited), std::memory_order_relaxed);
    if (options_.on_round)
      options_.on_round(std::chrono::duration<double>(busy).count(),
                        std::chrono::duration<double>(waited).count());
  }
}

void GameRunner::run(const std::function<void(record::GameRecord&&)>& on_game,
                     const std::atomic<bool>* stop, const std::atomic<bool>* drain) {
  if (!on_game) return play(nullptr, stop, drain);
  play([&on_game](record::GameRecord&& record, std::uint64_t) { on_game(std::move(record)); },
       stop, drain);
}

void GameRunner::play(const GameFunction& on_game, const std::atomic<bool>* stop,
                      const std::atomic<bool>* drain) {
  std::vector<std::unique_ptr<Slot>> slots;
  for (int i = 0; i < options_.concurrent_games; ++i)
    slots.push_back(std::make_unique<Slot>(options_.config.search));
  slots.front()->watched = true;
  const int threads = std::min(options_.threads, options_.concurrent_games);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  std::atomic<bool> failed{false};  // a thread that fails stops the others at their next round
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    std::vector<Slot*> mine;
    for (int i = t; i < options_.concurrent_games; i += threads)
      mine.push_back(slots[std::size_t(i)].get());
    pool.emplace_back([this, mine, &on_game, stop, drain, &errors, &failed, t] {
      try {
        thread_main(mine, on_game, stop, drain, &failed);
      } catch (...) {
        errors[std::size_t(t)] = std::current_exception();
        failed = true;
      }
    });
  }
  for (auto& th : pool) th.join();
  // The games a stop (or a failure) left unfinished.
  for (auto& slot : slots) {
    if (!slot->active) continue;
    slot->active = false;
    counters_->abandoned.fetch_add(1);
    release(*slot);
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace chessrl::selfplay
