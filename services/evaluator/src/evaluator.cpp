#include "evaluator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "chessrl/eval/match.h"
#include "chessrl/eval/uci_engine.h"
#include "chessrl/nn/checkpoint.h"

namespace chessrl::evaluator_service {
namespace {

using Clock = std::chrono::steady_clock;
using Outcome = Evaluation::Outcome;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool end(Evaluation& out, Outcome outcome, std::string error) {
  out.outcome = outcome;
  out.error = std::move(error);
  return false;
}

MatchRecord record_of(std::uint64_t candidate, std::string opponent, std::uint64_t opponent_version,
                      const eval::MatchResult& result, double seconds, std::string pgn) {
  MatchRecord r;
  r.time_ms = nn::unix_millis_now();
  r.candidate = candidate;
  r.opponent = std::move(opponent);
  r.opponent_version = opponent_version;
  r.score = result.score;
  r.elo = result.elo();
  r.forfeits = result.forfeits;
  r.seconds = seconds;
  r.pgn = std::move(pgn);
  return r;
}

// Writes the games to `path`, replacing what an interrupted earlier attempt
// may have left there.
Result<void> write_pgn(const std::string& path, const std::vector<chess::PgnGame>& games) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  return eval::append_pgn(path, games);
}

std::vector<chess::PgnGame> pgn_of(const eval::MatchResult& result) {
  std::vector<chess::PgnGame> games;
  games.reserve(result.games.size());
  for (const auto& game : result.games) games.push_back(game.pgn);
  return games;
}

}  // namespace

void log_to_stderr(const std::string& line) {
  std::fprintf(stderr, "chessrl-evaluator: %s\n", line.c_str());
}

Result<std::unique_ptr<Evaluator>> Evaluator::create(EvaluatorOptions options,
                                                     metrics::Registry& registry, Log log) {
  if (auto valid = options.validate(); !valid.ok()) return fail(valid.error());
  auto state = StateDir::open(options.state_dir);
  if (!state.ok()) return fail(state.error());
  auto progress = state->load_progress();
  if (!progress.ok()) return fail(progress.error());
  if (!log) log = log_to_stderr;
  return std::unique_ptr<Evaluator>(new Evaluator(std::move(options), std::move(state).value(),
                                                  *progress, registry, std::move(log)));
}

Evaluator::Evaluator(EvaluatorOptions options, StateDir state, EvaluatorProgress progress,
                     metrics::Registry& registry, Log log)
    : options_(std::move(options)),
      state_(std::move(state)),
      progress_(progress),
      metrics_(registry),
      log_(std::move(log)),
      health_(options_.registry, std::chrono::seconds(options_.unhealthy_after_s)),
      ladder_(options_.ladder, progress_.ladder_rung, metrics_, log_) {
  last_evaluated_ = progress_.last_evaluated;
  newest_ = progress_.last_evaluated;
  if (progress_.last_evaluated > 0) metrics_.on_evaluated(progress_.last_evaluated);
  // A rung not on this ladder restarts it; without the engine the saved rung stays.
  if (ladder_.active()) progress_.ladder_rung = ladder_.saved_label();
  rpc::ClientOptions client;
  client.address = options_.registry;
  client.deadline = std::chrono::seconds(options_.rpc_deadline_s);
  client.security = options_.security;
  // One attempt per call (the default): the loop retries an evaluation the registry
  // did not answer for after --poll seconds (docs/architecture.md, "Who retries what").
  registry_ = std::make_unique<rpc::ModelRegistryClient>(client);
  client.backoff_max = std::chrono::seconds(1);
  watch_client_ = std::make_unique<rpc::ModelRegistryClient>(client);
}

Evaluator::~Evaluator() = default;

eval::MctsPlayerOptions Evaluator::player_options(std::uint64_t seed) const {
  eval::MctsPlayerOptions o;
  o.visits = options_.visits;
  o.leaves_per_round = options_.leaves;
  o.random_plies = options_.random_plies;
  o.seed = seed;
  return o;
}

eval::MatchOptions Evaluator::match_options(int pairs, std::uint64_t seed,
                                            std::string event) const {
  eval::MatchOptions o;
  o.pairs = pairs;
  o.threads = options_.threads;
  o.max_plies = options_.max_plies;
  o.seed = seed;
  o.event = std::move(event);
  return o;
}

ModelLoaderOptions Evaluator::loader_options(std::uint64_t version, bool save) const {
  ModelLoaderOptions o;
  o.backend.device = options_.device;
  o.backend.threads = options_.nn_threads;
  o.backend.limits.max_parameters = options_.max_model_params;
  o.max_batch = options_.threads * options_.leaves;
  if (save && options_.save_models) o.save_path = state_.model_path(version);
  return o;
}

void Evaluator::prune_models(std::uint64_t best) {
  if (!options_.save_models || options_.keep_models == 0) return;
  auto pruned = state_.prune_models(static_cast<std::size_t>(options_.keep_models), best);
  if (!pruned.ok()) {
    log_("saved models not pruned: " + pruned.error());  // tried again after the next one
    return;
  }
  if (pruned->empty()) return;
  std::string versions;
  for (const std::uint64_t v : *pruned)
    versions += (versions.empty() ? "v" : ", v") + std::to_string(v);
  log_("deleted the saved models " + versions + " (--keep-models " +
       std::to_string(options_.keep_models) + ": the first, the best and the newest are kept)");
}

void Evaluator::registry_ok() {
  if (health_.succeeded()) log_("the model registry at " + options_.registry + " answers again");
}

void Evaluator::registry_failed(const std::string& error) {
  if (health_.failed(error)) log_("the model registry is unreachable (will retry): " + error);
}

bool Evaluator::save_progress(Evaluation& out) {
  if (auto saved = state_.save_progress(progress_); !saved.ok()) {
    return end(out, Outcome::kFatal, saved.error());
  }
  last_evaluated_ = progress_.last_evaluated;
  return true;
}

LoadResult Evaluator::best_model(std::uint64_t version) {
  LoadResult out;
  if (best_ != nullptr && best_->version == version) {
    out.model = nullptr;  // the one held: the caller keeps using best_
    return out;
  }
  out = load_model(*registry_, version, false, loader_options(version, false));
  return out;
}

bool Evaluator::load_candidate(std::uint64_t version, std::shared_ptr<LoadedModel>& candidate,
                               Evaluation& out) {
  if (best_ != nullptr && best_->version == version) {
    candidate = best_;
    return true;
  }
  LoadResult loaded = load_model(*registry_, version, false, loader_options(version, true));
  switch (loaded.error) {
    case LoadError::kNone:
      break;
    case LoadError::kUnavailable:
      registry_failed(loaded.message);
      return end(out, Outcome::kRetry, loaded.message);
    case LoadError::kBackend:
      return end(out, Outcome::kFatal, loaded.message);
    case LoadError::kRefused:
    case LoadError::kMissing:
    case LoadError::kUnusable:
      registry_ok();
      if (loaded.error == LoadError::kRefused) metrics_.models_refused_total.inc();
      // Marked evaluated below (and saved), so it is never fetched again.
      log_(loaded.message + " (skipped)");
      out.report.note = "skipped: " + loaded.message;
      progress_.last_evaluated = std::max(progress_.last_evaluated, version);
      progress_.last_gated = std::max(progress_.last_gated, version);
      if (!save_progress(out)) return false;
      out.outcome = Outcome::kDone;
      return false;
  }
  registry_ok();
  candidate = std::move(loaded.model);
  log_("v" + std::to_string(version) + " loaded (" + candidate->description + ")");
  return true;
}

bool Evaluator::gate(const std::shared_ptr<LoadedModel>& candidate, const std::atomic<bool>& stop,
                     Evaluation& out) {
  EvaluationReport& report = out.report;
  const std::uint64_t version = candidate->version;
  auto best = registry_->best();
  if (!best.ok()) {
    registry_failed(best.error());
    return end(out, Outcome::kRetry, best.error());
  }
  registry_ok();
  report.best_before = best->has_value() ? (*best)->version() : 0;
  report.best_after = report.best_before;
  if (report.best_before > 0) metrics_.on_best(report.best_before, false);

  // Promotes without a match (nothing to play against).
  auto promote_alone = [&](const std::string& why) {
    auto set = registry_->set_best(version);
    if (!set.ok()) {
      registry_failed(set.error());
      return end(out, Outcome::kRetry, set.error());
    }
    report.promoted = true;
    report.best_after = version;
    report.note = why;
    metrics_.on_best(version, true);
    best_ = candidate;
    log_("v" + std::to_string(version) + " is now best without a match: " + why);
    return true;
  };

  if (progress_.last_gated >= version) {
    report.note = "gating match done before a restart";
    return true;
  }
  if (report.best_before == 0) {
    if (!promote_alone("no best model yet")) return false;
  } else if (report.best_before == version) {
    report.note = "already the best";
    best_ = candidate;
  } else if (report.best_before > version) {
    report.note = "the best (v" + std::to_string(report.best_before) + ") is newer";
  } else {
    LoadResult loaded = best_model(report.best_before);
    if (loaded.error == LoadError::kUnavailable) {
      registry_failed(loaded.message);
      return end(out, Outcome::kRetry, loaded.message);
    }
    if (loaded.error == LoadError::kBackend) return end(out, Outcome::kFatal, loaded.message);
    if (loaded.error != LoadError::kNone) {  // missing, unusable or refused
      if (loaded.error == LoadError::kRefused) {
        metrics_.models_refused_total.inc();
        log_("the best, " + loaded.message);
      }
      if (!promote_alone("the best does not load: " + loaded.message)) return false;
    } else {
      if (loaded.model != nullptr) best_ = std::move(loaded.model);
      const std::string cand_name = "chessrl-v" + std::to_string(version);
      const std::string best_name = "chessrl-v" + std::to_string(best_->version);
      const auto start = Clock::now();
      auto result = eval::play_match(
          player_factory(*candidate, player_options(options_.seed + 2 * version), cand_name),
          player_factory(*best_, player_options(options_.seed + 2 * version + 1), best_name),
          match_options(options_.pairs, options_.seed + version,
                        "chessrl gating v" + std::to_string(version) + " vs v" +
                            std::to_string(best_->version)),
          {}, &stop);
      if (stop.load()) return end(out, Outcome::kStopped, "stopped");
      if (!result.ok()) return end(out, Outcome::kFatal, "gating match: " + result.error());
      const double seconds = seconds_since(start);
      const bool promoted = result->score.score() > options_.promote_score;
      if (promoted) {
        auto set = registry_->set_best(version);
        if (!set.ok()) {
          registry_failed(set.error());
          return end(out, Outcome::kRetry, set.error());
        }
        registry_ok();
      }
      const std::string pgn = state_.match_pgn_path(version, best_->version);
      if (auto written = write_pgn(pgn, pgn_of(*result)); !written.ok()) {
        return end(out, Outcome::kFatal, written.error());
      }
      MatchRecord record = record_of(version, "best", best_->version, *result, seconds, pgn);
      record.promoted = promoted;
      if (auto appended = state_.append_result(record); !appended.ok()) {
        return end(out, Outcome::kFatal, appended.error());
      }
      metrics_.on_match("best", *result, seconds);
      log_(describe(record) +
           (promoted ? " -> promoted" : " -> v" + std::to_string(best_->version) + " stays best"));
      report.matches.push_back(std::move(record));
      if (promoted) {
        report.promoted = true;
        report.best_after = version;
        metrics_.on_best(version, true);
        best_ = candidate;
      }
    }
  }
  progress_.last_gated = version;
  return save_progress(out);
}

bool Evaluator::gauntlet(LoadedModel& candidate, const std::atomic<bool>& stop, Evaluation& out) {
  const std::uint64_t version = candidate.version;
  const std::string cand_name = "chessrl-v" + std::to_string(version);
  std::vector<MatchRecord> records;
  std::vector<eval::MatchResult> results;
  std::vector<chess::PgnGame> games;
  const std::string pgn = state_.gauntlet_pgn_path(version);
  std::vector<std::string> specs = options_.anchor_specs();
  // The ladder's rung in play, last; its label is its own (validate() checked).
  const std::string rung_label = ladder_.saved_label();
  if (ladder_.active()) specs.push_back(ladder_.in_play().anchor_spec());
  std::optional<double> rung_score;
  std::uint64_t n = 0;
  for (const std::string& spec : specs) {
    ++n;
    const std::string label = eval::anchor_label(spec);
    auto anchor = eval::parse_anchor(spec, options_.seed * 1000 + version * 16 + n);
    if (!anchor.ok()) return end(out, Outcome::kFatal, "anchor " + spec + ": " + anchor.error());
    const auto start = Clock::now();
    auto result = eval::play_match(
        player_factory(candidate, player_options(options_.seed + 3 * version + n), cand_name),
        *anchor,
        match_options(options_.anchor_pairs, options_.seed + version + n,
                      "chessrl gauntlet v" + std::to_string(version) + " vs " + label),
        {}, &stop);
    if (stop.load()) return end(out, Outcome::kStopped, "stopped");
    if (!result.ok()) {
      log_("anchor " + label + " skipped this round: " + result.error());
      out.report.skipped.push_back(label + ": " + result.error());
      continue;
    }
    MatchRecord record = record_of(version, label, 0, *result, seconds_since(start), pgn);
    log_(describe(record));
    if (!rung_label.empty() && label == rung_label) rung_score = result->score.score();
    for (auto& game : pgn_of(*result)) games.push_back(std::move(game));
    records.push_back(std::move(record));
    results.push_back(std::move(result).value());
  }
  if (!games.empty()) {
    if (auto written = write_pgn(pgn, games); !written.ok()) {
      return end(out, Outcome::kFatal, written.error());
    }
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (auto appended = state_.append_result(records[i]); !appended.ok()) {
      return end(out, Outcome::kFatal, appended.error());
    }
    metrics_.on_match(records[i].opponent, results[i], records[i].seconds);
    out.report.matches.push_back(std::move(records[i]));
  }
  // Saved with the progress that follows the gauntlet.
  if (rung_score && ladder_.record(version, *rung_score))
    progress_.ladder_rung = ladder_.saved_label();
  return true;
}

Evaluation Evaluator::evaluate(std::uint64_t version, const std::atomic<bool>& stop) {
  const auto start = Clock::now();
  Evaluation out;
  out.report.candidate = version;
  std::shared_ptr<LoadedModel> candidate;
  {
    // Held from before the download until the gating match's SetBest.
    CandidateLeaseOptions lease;
    lease.length = std::chrono::seconds(options_.lease_s);
    lease.renew_every = std::chrono::seconds(std::max(1, options_.lease_s / 4));
    const CandidateLease held(
        version,
        [this](std::uint64_t v, std::chrono::seconds length) { return registry_->lease(v, length); },
        lease, lease_unsupported_, log_);
    if (!load_candidate(version, candidate, out)) {
      out.report.seconds = seconds_since(start);
      return out;
    }
    if (!gate(candidate, stop, out)) return out;
  }
  const bool due = options_.gauntlet_every > 0 &&
                   evaluated_here_ % static_cast<std::uint64_t>(options_.gauntlet_every) == 0;
  if (due && !gauntlet(*candidate, stop, out)) return out;
  progress_.last_evaluated = std::max(progress_.last_evaluated, version);
  if (!save_progress(out)) return out;
  prune_models(out.report.best_after);
  ++evaluated_here_;
  metrics_.on_evaluated(version);
  out.outcome = Outcome::kDone;
  out.report.evaluated = true;
  out.report.ladder_rung = ladder_.saved_label();
  out.report.seconds = seconds_since(start);
  return out;
}

Evaluation Evaluator::evaluate_latest(const std::atomic<bool>& stop) {
  Evaluation out;
  auto latest = registry_->latest();
  if (!latest.ok()) {
    registry_failed(latest.error());
    end(out, Outcome::kRetry, latest.error());
    return out;
  }
  registry_ok();
  if (!latest->has_value()) {
    out.report.note = "no model published yet";
    return out;
  }
  const std::uint64_t version = (*latest)->version();
  if (version <= progress_.last_evaluated) {
    out.report.candidate = version;
    out.report.note = "already evaluated (v" + std::to_string(progress_.last_evaluated) + ")";
    return out;
  }
  return evaluate(version, stop);
}

}  // namespace chessrl::evaluator_service
