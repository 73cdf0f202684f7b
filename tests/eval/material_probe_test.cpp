#include "chessrl/eval/material_probe.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/eval/match.h"

namespace chessrl::eval {
namespace {

// Every pair differs from its base by exactly one piece of its type: the
// opponent's for `up`, the mover's for `down`; all three are legal.
TEST(MaterialProbe, PairsDifferByOnePieceOfTheirType) {
  const auto positions = material_probe_positions(opening_fens());
  ASSERT_GE(positions.size(), opening_fens().size() * 4);  // most openings have all five types
  static constexpr int kValue[] = {1, 3, 3, 5, 9};
  for (const ProbePosition& p : positions) {
    SCOPED_TRACE(p.base);
    const auto base = chess::Position::from_fen(p.base);
    const auto up = chess::Position::from_fen(p.up);
    const auto down = chess::Position::from_fen(p.down);
    ASSERT_TRUE(base && up && down);
    const chess::Color us = base->side_to_move();
    const int sign = us == chess::kWhite ? 1 : -1;
    EXPECT_EQ(sign * (chess::material_balance(*up) - chess::material_balance(*base)),
              kValue[p.piece]);
    EXPECT_EQ(sign * (chess::material_balance(*base) - chess::material_balance(*down)),
              kValue[p.piece]);
    EXPECT_EQ(std::popcount(up->pieces(~us, p.piece)) + 1, std::popcount(base->pieces(~us, p.piece)));
    EXPECT_EQ(std::popcount(down->pieces(us, p.piece)) + 1, std::popcount(base->pieces(us, p.piece)));
    EXPECT_EQ(up->castling_rights(), 0);
  }
}

// A network that only counts material (the mover's minus the opponent's,
// read off the first history step's piece planes) prefers every "up"; a
// uniform one prefers none (ties are not preferences).
class MaterialCounter : public nn::InferenceBackend {
 public:
  void forward(std::span<const nn::InputPlanes> inputs, std::span<float> policy_logits,
               std::span<nn::Wdl> wdl) override {
    static constexpr int kValue[] = {1, 3, 3, 5, 9, 0};
    for (float& l : policy_logits) l = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      int lead = 0;
      for (int t = 0; t < 6; ++t)
        lead += kValue[t] * (std::popcount(inputs[i].masks[std::size_t(t)]) -
                             std::popcount(inputs[i].masks[std::size_t(6 + t)]));
      const float v = float(std::tanh(lead / 4.0));
      wdl[i] = {(1 + v) / 2, 0, (1 - v) / 2};
    }
  }
  std::string describe() const override { return "material counter"; }
};

TEST(MaterialProbe, ACountingNetworkPrefersEveryPieceUpAUniformOneNone) {
  const auto positions = material_probe_positions(opening_fens());
  MaterialCounter counter;
  const auto rows = run_material_probe(counter, positions);
  ASSERT_EQ(rows.size(), 5u);
  for (const MaterialProbeRow& r : rows) {
    EXPECT_EQ(r.prefers_up, r.pairs) << int(r.piece);
    EXPECT_GT(r.mean_up, r.mean_base);
    EXPECT_GT(r.mean_base, r.mean_down);
  }
  EXPECT_GT(rows[4].mean_up, rows[0].mean_up) << "a queen up is worth more than a pawn up";
  nn::FakeBackend uniform;
  for (const MaterialProbeRow& r : run_material_probe(uniform, positions))
    EXPECT_EQ(r.prefers_up, 0) << int(r.piece);
  const std::string text = format_material_probe(rows);
  EXPECT_NE(text.find("| queen |"), std::string::npos) << text;
  EXPECT_NE(text.find("(100%) value the side a piece up higher"), std::string::npos) << text;
}

}  // namespace
}  // namespace chessrl::eval
