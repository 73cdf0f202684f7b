#include "chessrl/train/example.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/train/source.h"
#include "records.h"

namespace chessrl::train {
namespace {

constexpr const char* kStart = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

chess::Move uci(const chess::Position& pos, const char* text) {
  auto m = chess::parse_uci(pos, text);
  EXPECT_TRUE(m.ok()) << text;
  return *m;
}

TEST(Example, EncodesThePositionAfterTheHistoryWithItsTargets) {
  auto pos = chess::Position::from_fen(kStart).value_or_throw();
  std::vector<chess::Move> history{uci(pos, "e2e4")};
  pos.make_move(history[0]);
  std::vector<chess::Move> policy{uci(pos, "e7e5"), uci(pos, "c7c5")};
  std::vector<float> probs{0.75f, 0.25f};
  auto e = make_example(kStart, history, policy, probs, -1);
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->planes, nn::encode(pos));
  EXPECT_EQ(e->result, -1);
  ASSERT_EQ(e->policy.size(), 2u);
  EXPECT_EQ(e->policy[0].first, nn::policy_index(policy[0], chess::kBlack));
  EXPECT_FLOAT_EQ(e->policy[0].second, 0.75f);
}

TEST(Example, BadInputIsRefusedNamingTheProblem) {
  auto pos = chess::Position::from_fen(kStart).value_or_throw();
  const chess::Move e4 = uci(pos, "e2e4");
  std::vector<chess::Move> one{e4};
  std::vector<float> p1{1.0f};
  auto bad_fen = make_example("not a fen", {}, one, p1, 0);
  ASSERT_FALSE(bad_fen.ok());
  EXPECT_NE(bad_fen.error().find("bad FEN"), std::string::npos);
  // e2e4 twice: the second is not legal (black to move).
  std::vector<chess::Move> twice{e4, e4};
  auto illegal = make_example(kStart, twice, one, p1, 0);
  ASSERT_FALSE(illegal.ok());
  EXPECT_NE(illegal.error().find("history move 2"), std::string::npos) << illegal.error();
  std::vector<float> half{0.5f};
  auto sum = make_example(kStart, {}, one, half, 0);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.error().find("sum"), std::string::npos);
  auto result = make_example(kStart, {}, one, p1, 2);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("result"), std::string::npos);
  std::vector<chess::Move> none;
  std::vector<float> no_probs;
  EXPECT_FALSE(make_example(kStart, {}, none, no_probs, 0).ok());
}

TEST(Example, RecordsGiveOneExamplePerTargetWithTheResultForTheMover) {
  auto records = testing::play_records(2);
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    auto examples = examples_from_record(r);
    ASSERT_TRUE(examples.ok()) << examples.error();
    ASSERT_EQ(examples->size(), r.targets.size());
    auto pos = chess::Position::from_fen(r.start_fen).value_or_throw();
    const int white = r.result.outcome == chess::Outcome::kWhiteWins   ? 1
                      : r.result.outcome == chess::Outcome::kBlackWins ? -1
                                                                       : 0;
    std::size_t t = 0;
    for (std::size_t ply = 0; ply < r.moves.size() && t < r.targets.size(); ++ply) {
      if (std::size_t(r.targets[t].ply) == ply) {
        const Example& e = (*examples)[t];
        EXPECT_EQ(e.planes, nn::encode(pos));
        EXPECT_EQ(e.result, pos.side_to_move() == chess::kWhite ? white : -white);
        double sum = 0;
        for (const auto& [index, p] : e.policy) {
          sum += p;
          EXPECT_TRUE(nn::move_from_policy_index(pos, index).has_value());
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
        ++t;
      }
      pos.make_move(r.moves[ply]);
    }
  }
}

// A record's examples carry the material target as the replay service
// computes it: the mover's material_balance 12 plies on, or at the end; and
// the legal moves of the position for the policy loss.
TEST(Example, RecordsGiveTheMaterialLeadLaterAndTheLegalMoves) {
  for (const auto& r : testing::play_records(3)) {
    auto examples = examples_from_record(r);
    ASSERT_TRUE(examples.ok()) << examples.error();
    std::vector<int> white_lead;  // after each ply, index 0: the start
    auto pos = chess::Position::from_fen(r.start_fen).value_or_throw();
    white_lead.push_back(chess::material_balance(pos));
    for (const chess::Move m : r.moves) {
      pos.make_move(m);
      white_lead.push_back(chess::material_balance(pos));
    }
    pos = chess::Position::from_fen(r.start_fen).value_or_throw();
    std::size_t t = 0;
    for (std::size_t ply = 0; ply < r.moves.size() && t < r.targets.size(); ++ply) {
      if (std::size_t(r.targets[t].ply) == ply) {
        const Example& e = (*examples)[t];
        const std::size_t later = std::min(ply + chess::kMaterialHorizonPlies, r.moves.size());
        const int lead = pos.side_to_move() == chess::kWhite ? white_lead[later] : -white_lead[later];
        EXPECT_TRUE(e.has_material);
        EXPECT_EQ(e.material, lead) << "ply " << ply;
        EXPECT_EQ(e.legal.size(), std::size_t(chess::count_legal(pos))) << "ply " << ply;
        ++t;
      }
      pos.make_move(r.moves[ply]);
    }
  }
}

// The reply and moves-left targets on a hand-made game: at ply k the reply is
// move k + 1 as the opponent's policy index (the opponent of ply k moves at
// k + 1); the last ply has none; plies left = the game's plies - k.
TEST(Example, RecordsGiveTheOpponentsReplyAndThePliesLeft) {
  record::GameRecord r;
  r.id = "hand-made";
  r.start_fen = kStart;
  auto pos = chess::Position::from_fen(kStart).value_or_throw();
  // Five plies, with targets at plies 0, 1, 3 and 4 (ply 2 has none).
  for (const char* text : {"e2e4", "g8f6", "e4e5", "f6d5", "c2c4"}) {
    r.moves.push_back(uci(pos, text));
    pos.make_move(r.moves.back());
  }
  pos = chess::Position::from_fen(kStart).value_or_throw();
  for (int ply = 0; ply < 5; ++ply) {
    if (ply != 2) {
      record::MoveTarget t;
      t.ply = ply;
      t.policy = {{r.moves[std::size_t(ply)], 1.0f}};
      r.targets.push_back(t);
    }
  }
  auto examples = examples_from_record(r);
  ASSERT_TRUE(examples.ok()) << examples.error();
  ASSERT_EQ(examples->size(), 4u);
  const int plies[] = {0, 1, 3, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    const int k = plies[i];
    const Example& e = (*examples)[i];
    EXPECT_EQ(e.plies_left, 5 - k) << "ply " << k;
    if (k == 4) {
      EXPECT_EQ(e.reply, -1) << "the last ply has no reply";
      continue;
    }
    // Ply k is white's when k is even: the reply is then black's move.
    const chess::Color opponent = k % 2 == 0 ? chess::kBlack : chess::kWhite;
    EXPECT_EQ(e.reply, nn::policy_index(r.moves[std::size_t(k + 1)], opponent)) << "ply " << k;
  }
  // From the opponent's point of view: black's g8f6 is the same index as
  // white's g1f3 (mirrored), not white's g8f6.
  auto after_e4 = chess::Position::from_fen(
                      "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
                      .value_or_throw();
  auto start = chess::Position::from_fen(kStart).value_or_throw();
  EXPECT_EQ((*examples)[0].reply, nn::policy_index(uci(start, "g1f3"), chess::kWhite));
  EXPECT_EQ((*examples)[0].reply, nn::policy_index(uci(after_e4, "g8f6"), chess::kBlack));
  // Examples made without a record know neither target.
  std::vector<chess::Move> one{uci(start, "e2e4")};
  std::vector<float> p1{1.0f};
  const Example plain = make_example(kStart, {}, one, p1, 0).value_or_throw();
  EXPECT_EQ(plain.reply, -1);
  EXPECT_EQ(plain.plies_left, -1);
}

// Self-play records: every example but a game's last-ply one has a reply, and
// plies left counts down to the game's end.
TEST(Example, SelfPlayRecordsGiveRepliesAndPliesLeft) {
  for (const auto& r : testing::play_records(2)) {
    auto examples = examples_from_record(r).value_or_throw();
    ASSERT_EQ(examples.size(), r.targets.size());
    for (std::size_t i = 0; i < examples.size(); ++i) {
      const auto ply = std::size_t(r.targets[i].ply);
      EXPECT_EQ(examples[i].plies_left, int(r.moves.size() - ply));
      EXPECT_EQ(examples[i].reply >= 0, ply + 1 < r.moves.size()) << "ply " << ply;
    }
  }
}

TEST(Example, LoadsJsonLinesAndNamesTheBadLine) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("chessrl-train-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto records = testing::play_records(2);
  {
    std::ofstream out(dir / "a.jsonl");
    for (const auto& r : records) out << record::to_json(r) << "\n";
  }
  auto all = load_examples((dir / "a.jsonl").string());
  ASSERT_TRUE(all.ok()) << all.error();
  EXPECT_EQ(all->size(), records[0].targets.size() + records[1].targets.size());
  auto from_dir = load_examples(dir.string());
  ASSERT_TRUE(from_dir.ok()) << from_dir.error();
  EXPECT_EQ(from_dir->size(), all->size());
  {
    std::ofstream out(dir / "b.jsonl");
    out << record::to_json(records[0]) << "\n{\"id\": oops\n";
  }
  auto bad = load_examples(dir.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("b.jsonl:2"), std::string::npos) << bad.error();
  EXPECT_FALSE(load_examples((dir / "missing.jsonl").string()).ok());
  std::filesystem::remove_all(dir);
}

TEST(DatasetSource, RanksTakeSlicesOfTheSameGlobalBatch) {
  std::vector<Example> examples;
  for (const auto& r : testing::play_records(2))
    for (auto& e : examples_from_record(r).value_or_throw()) examples.push_back(std::move(e));
  DatasetSource source(examples, 7);
  for (std::int64_t step : {0, 1, 5}) {
    auto whole = source.fetch(step, 0, 1, 12).value_or_throw();
    std::vector<Example> joined;
    for (int rank = 0; rank < 3; ++rank)
      for (auto& e : source.fetch(step, rank, 3, 4).value_or_throw()) joined.push_back(std::move(e));
    EXPECT_EQ(joined, whole) << "step " << step;
  }
  EXPECT_NE(source.fetch(0, 0, 1, 12).value_or_throw(), source.fetch(1, 0, 1, 12).value_or_throw());
  EXPECT_FALSE(source.fetch(0, 2, 2, 4).ok());
  EXPECT_TRUE(source.status().value_or_throw().fixed);
}

}  // namespace
}  // namespace chessrl::train
