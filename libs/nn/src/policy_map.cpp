#include "chessrl/nn/policy_map.h"

#include <array>
#include <cassert>

#include "chessrl/chess/movegen.h"

namespace chessrl::nn {
namespace {

using chess::Square;

struct Step {
  int dx, dy;
};
constexpr Step kQueenDirs[8] = {{0, 1},  {1, 1},   {1, 0},  {1, -1},
                                {0, -1}, {-1, -1}, {-1, 0}, {-1, 1}};
constexpr Step kKnightSteps[8] = {{1, 2},   {2, 1},   {2, -1}, {1, -2},
                                  {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
constexpr int kKnightPlane = 56;
constexpr int kUnderpromotionPlane = 64;

// kPlaneOf[from][to]: the queen or knight plane of the move from -> to in the
// mover's frame, or -1 when no queen or knight move joins the squares.
constexpr auto kPlaneOf = [] {
  std::array<std::array<std::int8_t, 64>, 64> t{};
  for (auto& row : t) row.fill(-1);
  for (int from = 0; from < 64; ++from) {
    const int x = from & 7, y = from >> 3;
    for (int d = 0; d < 8; ++d)
      for (int dist = 1; dist <= 7; ++dist) {
        const int tx = x + kQueenDirs[d].dx * dist, ty = y + kQueenDirs[d].dy * dist;
        if (tx < 0 || tx > 7 || ty < 0 || ty > 7) break;
        t[from][ty * 8 + tx] = std::int8_t(d * 7 + dist - 1);
      }
    for (int k = 0; k < 8; ++k) {
      const int tx = x + kKnightSteps[k].dx, ty = y + kKnightSteps[k].dy;
      if (tx >= 0 && tx <= 7 && ty >= 0 && ty <= 7)
        t[from][ty * 8 + tx] = std::int8_t(kKnightPlane + k);
    }
  }
  return t;
}();

constexpr Square relative(chess::Color c, Square s) { return chess::relative_square(c, s); }

}  // namespace

int policy_index(chess::Move m, chess::Color mover) {
  const Square from = relative(mover, m.from());
  const Square to = relative(mover, m.to());
  if (m.kind() == chess::MoveKind::kPromotion && m.promotion() != chess::kQueen) {
    const int file_step = chess::file_of(to) - chess::file_of(from);
    return (kUnderpromotionPlane + 3 * (file_step + 1) + (m.promotion() - chess::kKnight)) * 64 +
           from;
  }
  const int plane = kPlaneOf[from][to];
  assert(plane >= 0);
  return plane * 64 + from;
}

std::optional<PolicyMove> decode_policy_index(int index, chess::Color mover) {
  if (index < 0 || index >= kPolicySize) return std::nullopt;
  const int plane = index / 64;
  const int from = index % 64;
  const int x = from & 7, y = from >> 3;
  int tx, ty;
  chess::PieceType under = chess::kNoPieceType;
  if (plane < kKnightPlane) {
    const Step d = kQueenDirs[plane / 7];
    const int dist = plane % 7 + 1;
    tx = x + d.dx * dist;
    ty = y + d.dy * dist;
  } else if (plane < kUnderpromotionPlane) {
    const Step k = kKnightSteps[plane - kKnightPlane];
    tx = x + k.dx;
    ty = y + k.dy;
  } else {
    // Underpromotions go from the seventh rank to the eighth.
    if (y != 6) return std::nullopt;
    const int u = plane - kUnderpromotionPlane;
    tx = x + (u / 3 - 1);
    ty = 7;
    under = chess::PieceType(chess::kKnight + u % 3);
  }
  if (tx < 0 || tx > 7 || ty < 0 || ty > 7) return std::nullopt;
  return PolicyMove{relative(mover, Square(from)), relative(mover, Square(ty * 8 + tx)), under};
}

std::optional<chess::Move> move_from_policy_index(const chess::Position& pos, int index) {
  const auto decoded = decode_policy_index(index, pos.side_to_move());
  if (!decoded) return std::nullopt;
  for (chess::Move m : chess::legal_moves(pos)) {
    if (m.from() != decoded->from || m.to() != decoded->to) continue;
    if (m.kind() != chess::MoveKind::kPromotion) return m;
    const chess::PieceType want =
        decoded->underpromotion == chess::kNoPieceType ? chess::kQueen : decoded->underpromotion;
    if (m.promotion() == want) return m;
  }
  return std::nullopt;
}

}  // namespace chessrl::nn
