#include "chessrl/mcts/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "../chess/chess_test_util.h"
#include "../nn/nn_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/rules.h"

namespace chessrl::mcts {
namespace {

using chess::Move;
using chess::Position;
using chess::testing::from_fen;

std::shared_ptr<nn::InferenceBackend> uniform() {
  return std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kUniform);
}

struct Engine {
  explicit Engine(std::shared_ptr<nn::InferenceBackend> backend = uniform(),
                  SearchParams params = {})
      : evaluator(std::move(backend),
                  {.max_batch = 64, .batch_timeout = std::chrono::microseconds(50)}),
        search(params) {}
  SearchProgress run(const Position& pos, std::uint64_t visits, int leaves = 8) {
    search.reset(pos);
    return run_search(search, evaluator, {.visits = visits, .leaves_per_round = leaves});
  }
  nn::BatchEvaluator evaluator;
  Search search;
};

bool is_mate_in_one(Position& pos) {
  for (Move m : chess::legal_moves(pos)) {
    pos.make_move(m);
    const bool mate = chess::game_result(pos).reason == chess::Termination::kCheckmate;
    pos.unmake_move();
    if (mate) return true;
  }
  return false;
}

// Whether `key` forces mate on the next move (an independent brute-force check).
bool forces_mate_in_two(Position pos, Move key) {
  pos.make_move(key);
  const chess::MoveList replies = chess::legal_moves(pos);
  if (replies.empty()) return false;  // that would be mate in one (or stalemate)
  for (Move reply : replies) {
    pos.make_move(reply);
    const bool mates = is_mate_in_one(pos);
    pos.unmake_move();
    if (!mates) return false;
  }
  return true;
}

TEST(Search, FindsMateInOne) {
  for (const char* fen : {"r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
                          "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "7K/8/8/8/8/8/5q2/6rk b - - 0 1"}) {
    SCOPED_TRACE(fen);
    Engine engine;
    Position pos = from_fen(fen);
    engine.run(pos, 400);
    const Move best = engine.search.best_move();
    pos.make_move(best);
    EXPECT_EQ(chess::game_result(pos).reason, chess::Termination::kCheckmate)
        << chess::to_uci(best);
    // Proven: the root's side to move wins by force.
    const nn::Wdl wdl = engine.search.root_wdl();
    EXPECT_EQ(wdl.win, 1.0f);
    EXPECT_EQ(engine.search.principal_variation().size(), 1u);
  }
}

// A mate in one is known when the root's moves are generated: its first
// visit proves it, before the network has seen a single child.
TEST(Search, MateInOneIsProvenAtExpansion) {
  Engine engine;
  Position pos = from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
  engine.run(pos, 1, 1);
  EXPECT_EQ(engine.search.root().proof, Proof::kLoss);  // for the mover into the root: black
  EXPECT_EQ(engine.search.root_wdl().win, 1.0f);
  EXPECT_EQ(engine.search.counters().evaluations, 0u);  // no network call at all
  engine.run(pos, 2, 1);
  EXPECT_EQ(chess::to_uci(engine.search.best_move()), "a1a8");

  SearchParams off;
  off.mates_at_expansion = false;
  Engine without(uniform(), off);
  without.run(pos, 1, 1);
  EXPECT_EQ(without.search.root().proof, Proof::kNone);
  EXPECT_EQ(without.search.counters().evaluations, 1u);
}

// A move that allows a mate in one is proven lost on its first visit: the
// reply's node knows its mate when its moves are generated.
TEST(Search, AMoveThatAllowsMateIsProvenLostOnItsFirstVisit) {
  // The rook on d1 guards the back rank against ...Ra1#: Ra1 allows Rxa1#
  // (a rook along the d-file can still come back to block).
  Position pos = from_fen("r5k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1");
  Engine engine;
  engine.run(pos, 60, 4);
  int allowing = 0, checked = 0;
  for (const ChildInfo& c : engine.search.children()) {
    if (c.visits == 0) continue;
    ++checked;
    Position after = pos;
    after.make_move(c.move);
    const bool allows_mate = is_mate_in_one(after);
    allowing += allows_mate;
    EXPECT_EQ(c.proof == Proof::kLoss, allows_mate)
        << chess::to_uci(c.move) << " with " << c.visits << " visits";
    // Proven on its first visit, so never visited again (a search without
    // the check would need the reply's own visit to see the mate).
    if (allows_mate) {
      EXPECT_EQ(c.visits, 1u) << chess::to_uci(c.move);
    }
  }
  EXPECT_GT(allowing, 0);
  EXPECT_GT(checked, allowing);
  // And the search does not play one.
  Position after = pos;
  after.make_move(engine.search.best_move());
  EXPECT_FALSE(is_mate_in_one(after)) << chess::to_uci(engine.search.best_move());
}

// Draw contempt makes a proven draw look worse than 0 in selection only: the
// side to move plays on instead of taking a draw by rule.
TEST(Search, DrawContemptSteersSelectionAwayFromProvenDraws) {
  // Fifty-move counter at 99: every king move draws, the pawn moves do not.
  const Position pos = from_fen("7k/8/8/8/8/8/6P1/6K1 w - - 99 80");
  auto pawn_visits = [&](float contempt) {
    SearchParams params;
    params.draw_contempt = contempt;
    Engine engine(uniform(), params);
    engine.run(pos, 200, 4);
    std::uint32_t pawn = 0, total = 0;
    for (const ChildInfo& c : engine.search.children()) {
      total += c.visits;
      if (chess::to_uci(c.move).starts_with("g2")) pawn += c.visits;
    }
    return double(pawn) / double(total);
  };
  const double exact = pawn_visits(0.0f), averse = pawn_visits(0.3f);
  EXPECT_GT(averse, exact + 0.2) << exact << " -> " << averse;
  EXPECT_GT(averse, 0.8);
}

TEST(Search, FindsMateInTwo) {
  // Quiet keys (Ra6 threatens b7#), a rook ladder, and a queen sacrifice.
  for (const char* fen : {"kbK5/pp6/1P6/8/8/8/8/R7 w - - 0 1", "7k/8/8/8/8/8/R7/1R4K1 w - - 0 1",
                          "r6k/1p4pp/7N/3Q4/8/8/8/6K1 w - - 0 1"}) {
    SCOPED_TRACE(fen);
    Position pos = from_fen(fen);
    ASSERT_FALSE(is_mate_in_one(pos));  // the test positions really are mates in two
    Engine engine;
    engine.run(pos, 20000, 16);
    const Move best = engine.search.best_move();
    EXPECT_TRUE(forces_mate_in_two(pos, best)) << chess::to_uci(best);
    const auto children = engine.search.children();
    const auto it = std::find_if(children.begin(), children.end(),
                                 [&](const ChildInfo& c) { return c.move == best; });
    ASSERT_NE(it, children.end());
    EXPECT_EQ(it->proof, Proof::kWin);
    EXPECT_EQ(it->proof_plies, 2);  // black moves, white mates
    EXPECT_EQ(engine.search.root_wdl().win, 1.0f);
  }
}

TEST(Search, NeverReturnsAnIllegalMove) {
  auto positions = nn::testing::random_positions(7, 60);
  Engine engine(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 3));
  for (Position& pos : positions) {
    SCOPED_TRACE(pos.fen());
    engine.run(pos, 96, 8);
    const chess::MoveList legal = chess::legal_moves(pos);
    EXPECT_TRUE(legal.contains(engine.search.best_move()));
    Position walk = pos;
    for (Move m : engine.search.principal_variation()) {
      ASSERT_TRUE(chess::is_legal(walk, m)) << chess::to_uci(m);
      walk.make_move(m);
    }
    std::uint32_t sum = 0;
    for (const ChildInfo& c : engine.search.children()) {
      EXPECT_TRUE(legal.contains(c.move));
      sum += c.visits;
    }
    // Every visit but the root's own evaluation went to a child.
    EXPECT_EQ(sum + 1, engine.search.root_visits());
    EXPECT_GE(engine.search.root_visits(), 96u);
  }
}

TEST(Search, GameOverRootsAreNotSearched) {
  Engine engine;
  // Stalemate, and a position already mated.
  for (const char* fen : {"7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"}) {
    engine.run(from_fen(fen), 100);
    EXPECT_TRUE(engine.search.game_over()) << fen;
    EXPECT_EQ(engine.search.best_move(), Move::none());
    EXPECT_EQ(engine.search.counters().evaluations, 0u);
  }
}

TEST(Search, DrawsByRuleAreExactInTheTree) {
  // White to move can only shuffle; a repetition is near: Kh1-g1 and back
  // repeats, and the fifty-move counter is at 99, so every non-capture
  // non-pawn move ends the game in a draw.
  Engine engine;
  Position pos = from_fen("7k/8/8/8/8/8/8/6K1 w - - 99 80");
  // K v K is insufficient material: the root itself is over.
  engine.run(pos, 10);
  EXPECT_TRUE(engine.search.game_over());
  pos = from_fen("7k/8/8/8/8/8/6P1/6K1 w - - 99 80");
  engine.run(pos, 200);
  for (const ChildInfo& c : engine.search.children()) {
    const bool pawn_move = chess::to_uci(c.move).starts_with("g2");
    if (!pawn_move) {
      EXPECT_EQ(c.proof, Proof::kDraw) << chess::to_uci(c.move);
    } else {
      EXPECT_NE(c.proof, Proof::kDraw) << chess::to_uci(c.move);
    }
  }
}

TEST(Search, VirtualLossSpreadsOneRoundOverDistinctLeaves) {
  Search search;
  search.reset(Position());
  std::vector<nn::EvalRequest> requests(32);
  nn::FakeBackend backend;
  nn::BatchEvaluator evaluator(std::shared_ptr<nn::InferenceBackend>(&backend, [](auto*) {}), {});
  // Round 1: only the root is new.
  int n = search.gather(requests, 1000);
  ASSERT_EQ(n, 1);
  evaluator.evaluate(std::span<nn::EvalRequest>(requests.data(), 1));
  search.backup(std::span<const nn::EvalRequest>(requests.data(), 1));
  // Round 2: 20 distinct children of the root, all in flight at once.
  const std::uint64_t collisions_before = search.counters().collisions;
  n = search.gather(requests, 1000);
  EXPECT_EQ(n, 20);  // the start position has 20 moves; the 21st descent collides
  EXPECT_EQ(search.in_flight(), 20);
  // Each collision adds its own virtual loss until backup().
  EXPECT_EQ(search.root().in_flight,
            20u + std::uint32_t(search.counters().collisions - collisions_before));
  std::set<std::uint64_t> keys;
  for (int i = 0; i < n; ++i) keys.insert(requests[std::size_t(i)].key);
  EXPECT_EQ(keys.size(), 20u);
  evaluator.evaluate(std::span<nn::EvalRequest>(requests.data(), std::size_t(n)));
  search.backup(std::span<const nn::EvalRequest>(requests.data(), std::size_t(n)));
  EXPECT_EQ(search.root().in_flight, 0u);
  EXPECT_EQ(search.root_visits(), 21u);
}

// virtual_loss 0: a visit in flight raises only the exploration term's N, so
// a round of 8 leaves keeps going down the moves the search already likes
// instead of spreading over the root: the visits concentrate. Deterministic
// (a seeded random network, one caller).
TEST(Search, ZeroVirtualLossConcentratesARoundsVisits) {
  auto top_share = [](float virtual_loss) {
    SearchParams params;
    params.virtual_loss = virtual_loss;
    double sum = 0;
    int n = 0;
    for (const char* fen : {"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
                            "r3k2r/pp3ppp/2n1bn2/3p4/3P4/2N1BN2/PP3PPP/R3K2R b KQkq - 0 10"}) {
      Engine engine(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 5), params);
      engine.run(from_fen(fen), 64, 8);
      std::uint32_t top = 0, total = 0;
      for (const ChildInfo& c : engine.search.children()) {
        top = std::max(top, c.visits);
        total += c.visits;
      }
      sum += double(top) / double(total);
      ++n;
    }
    return sum / n;
  };
  const double spread = top_share(1.0f), lc0 = top_share(0.0f);
  EXPECT_GT(lc0, spread + 0.05) << "virtual loss 1: " << spread << ", 0: " << lc0;
}

TEST(Search, PlayoutBudgetIsExact) {
  Engine engine;
  engine.run(Position(), 300, 16);
  EXPECT_EQ(engine.search.root_visits(), 300u);
  EXPECT_EQ(engine.search.counters().playouts, 300u);
}

TEST(Search, TreeReuseKeepsTheSubtreeAndFreesTheRest) {
  Engine engine(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 5));
  engine.run(Position(), 2000, 16);
  const Move best = engine.search.best_move();
  std::uint32_t child_visits = 0;
  for (const ChildInfo& c : engine.search.children())
    if (c.move == best) child_visits = c.visits;
  ASSERT_GT(child_visits, 1u);
  const std::size_t reserved = engine.search.memory_bytes();
  engine.search.advance(best);
  EXPECT_EQ(engine.search.root_visits(), child_visits);
  EXPECT_EQ(engine.search.position().plies_played(), 1);
  // The kept subtree's visits are consistent: every visit below the root's own
  // went to a child.
  std::uint32_t sum = 0;
  for (const ChildInfo& c : engine.search.children()) sum += c.visits;
  EXPECT_EQ(sum + 1, engine.search.root_visits());
  // Searching on from the reused root reaches the target with fewer new playouts.
  const std::uint64_t before = engine.search.counters().playouts;
  run_search(engine.search, engine.evaluator, {.visits = 2000, .leaves_per_round = 16});
  EXPECT_EQ(engine.search.counters().playouts - before, 2000u - child_visits);
  // Both arenas are reused: a long game does not grow memory without bound.
  for (int i = 0; i < 20 && !engine.search.game_over(); ++i) {
    engine.search.advance(engine.search.best_move());
    run_search(engine.search, engine.evaluator, {.visits = 2000, .leaves_per_round = 16});
  }
  EXPECT_LE(engine.search.memory_bytes(), 4 * reserved + 4 * NodeArena::kBlockBytes);
}

TEST(Search, RootNoiseChangesPriorsAndKeepsThemNormalised) {
  SearchParams params;
  params.noise_fraction = 0.25f;
  Engine engine(uniform(), params);
  engine.search.reset(Position());
  engine.search.request_root_noise(42);
  run_search(engine.search, engine.evaluator, {.visits = 1, .leaves_per_round = 1});
  double sum = 0;
  int changed = 0;
  for (const ChildInfo& c : engine.search.children()) {
    sum += c.prior;
    changed += std::abs(c.prior - 1.0f / 20) > 1e-4f;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_GT(changed, 15);
}

TEST(Search, SameSeedSameSearch) {
  auto once = [] {
    Engine engine(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 9));
    engine.search.reset(Position());
    engine.search.request_root_noise(1234);
    run_search(engine.search, engine.evaluator, {.visits = 500, .leaves_per_round = 8});
    std::vector<std::uint32_t> visits;
    for (const ChildInfo& c : engine.search.children()) visits.push_back(c.visits);
    return visits;
  };
  EXPECT_EQ(once(), once());
}

TEST(Search, ParamsAreValidated) {
  SearchParams p;
  EXPECT_TRUE(p.validate());
  p.cpuct = 0;
  auto r = p.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("cpuct"), std::string::npos);
  p = {};
  p.noise_fraction = 1.5f;
  r = p.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("noise_fraction"), std::string::npos);
  p = {};
  p.draw_contempt = -0.1f;
  r = p.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("draw_contempt"), std::string::npos);
}

// Gumbel root search: with 16 moves considered and 64 simulations,
// Sequential Halving gives 8 moves 1 visit, 4 moves 3, 2 moves 7 and the last
// 2 moves 15 (phases of 16, 16, 16 and 16 simulations); one leaf a round
// follows the schedule exactly, 8 leaves a round keep its shape.
TEST(Search, GumbelSpendsSimulationsBySequentialHalving) {
  for (const int leaves : {1, 8}) {
    SCOPED_TRACE(leaves);
    Engine engine(std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 5));
    engine.search.reset(Position());
    engine.search.start_gumbel(42, 64);
    run_search(engine.search, engine.evaluator, {.visits = 65, .leaves_per_round = leaves});
    std::vector<std::uint32_t> visits;
    for (const ChildInfo& c : engine.search.children())
      if (c.visits > 0) visits.push_back(c.visits);
    std::sort(visits.begin(), visits.end());
    std::uint32_t total = 0;
    for (std::uint32_t v : visits) total += v;
    EXPECT_EQ(total, 64u);
    EXPECT_EQ(visits.size(), 16u) << "only the considered moves are searched";
    if (leaves == 1) {
      const std::vector<std::uint32_t> expected{1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 7, 7, 15, 15};
      EXPECT_EQ(visits, expected);
    } else {
      EXPECT_GE(visits.back(), 12u);
    }
    // The move is one of the two most visited.
    const Move m = engine.search.gumbel_move();
    for (const ChildInfo& c : engine.search.children()) {
      if (c.move == m) {
        EXPECT_GE(c.visits, visits[visits.size() - 2]);
      }
    }
  }
}

// Which moves are considered is drawn by the Gumbel noise: the same seed
// gives the same search, another seed other moves; no noise (matches) takes
// the top moves by prior.
TEST(Search, GumbelNoiseDecidesTheConsideredMoves) {
  auto considered = [](std::optional<std::uint64_t> seed) {
    Engine engine;  // uniform priors: only the noise ranks the moves
    engine.search.reset(Position());
    engine.search.start_gumbel(seed, 8);
    run_search(engine.search, engine.evaluator, {.visits = 9, .leaves_per_round = 1});
    std::set<std::string> moves;
    for (const ChildInfo& c : engine.search.children())
      if (c.visits > 0) moves.insert(chess::to_uci(c.move));
    return moves;
  };
  EXPECT_EQ(considered(1).size(), 8u);
  EXPECT_EQ(considered(1), considered(1));
  EXPECT_NE(considered(1), considered(2));
  EXPECT_EQ(considered(std::nullopt), considered(std::nullopt));
}

// The policy target covers every legal move, sums to 1 and moves mass toward
// what the search found: a mate in one (found by search here, mates at
// expansion off) gets more than its prior and the most of all; it is played.
TEST(Search, GumbelPolicyTargetImprovesOnThePriorWithTheSearchsValues) {
  SearchParams params;
  params.mates_at_expansion = false;
  params.gumbel_considered = 64;  // every move gets at least one visit
  Engine engine(uniform(), params);
  // White mates on the back rank with Rb8#.
  const Position mate_pos = from_fen("6k1/5ppp/8/8/8/8/5PPP/1R4K1 w - - 0 1");
  engine.search.reset(mate_pos);
  engine.search.start_gumbel(7, 200);
  run_search(engine.search, engine.evaluator, {.visits = 201, .leaves_per_round = 1});
  const auto policy = engine.search.gumbel_policy();
  const int legal = int(chess::legal_moves(mate_pos).size());
  ASSERT_EQ(int(policy.size()), legal);
  double sum = 0;
  std::pair<Move, float> top{Move::none(), -1.0f};
  for (const auto& entry : policy) {
    sum += entry.second;
    if (entry.second > top.second) top = entry;
  }
  EXPECT_NEAR(sum, 1.0, 1e-5);
  EXPECT_EQ(chess::to_uci(top.first), "b1b8");
  EXPECT_GT(top.second, 2.0f / float(legal));
  EXPECT_EQ(chess::to_uci(engine.search.gumbel_move()), "b1b8");
}

TEST(Search, GumbelParamsAreValidated) {
  SearchParams p;
  p.gumbel_considered = 0;
  auto r = p.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("gumbel_considered"), std::string::npos);
  p = {};
  p.gumbel_c_scale = 0;
  r = p.validate();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("gumbel_c_scale"), std::string::npos);
}

}  // namespace
}  // namespace chessrl::mcts
