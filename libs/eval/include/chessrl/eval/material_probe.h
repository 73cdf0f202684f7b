// Does a network know material? Pairs of positions that differ only by one
// piece, from balanced openings: the side to move a piece up (one of the
// opponent's pieces of that type removed) and the same side a piece down (one
// of its own removed). A network that knows material values the first above
// the second for every piece type, and more so for a queen than a pawn. The
// value is the value head's win minus loss for the side to move. No LibTorch:
// any InferenceBackend. Thread-compatible.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "chessrl/chess/types.h"
#include "chessrl/nn/backend.h"

namespace chessrl::eval {

struct ProbePosition {
  chess::PieceType piece = chess::kPawn;
  std::string base, up, down;  // FENs; castling and en passant cleared in all three
};

// For every FEN and piece type (pawn to queen) that both sides have: the base
// position, the side to move one such piece up, and one down. The piece taken
// off is the first on the board whose removal leaves a legal position.
std::vector<ProbePosition> material_probe_positions(const std::vector<std::string>& fens);

struct MaterialProbeRow {
  chess::PieceType piece = chess::kPawn;
  int pairs = 0;
  int prefers_up = 0;  // pairs where value(up) > value(down), strictly
  double mean_up = 0, mean_base = 0, mean_down = 0;  // value for the side to move
};

// One row per piece type that has pairs, pawn first.
std::vector<MaterialProbeRow> run_material_probe(nn::InferenceBackend& backend,
                                                 const std::vector<ProbePosition>& positions);

// A table, one line per piece type, and a summary line.
std::string format_material_probe(const std::vector<MaterialProbeRow>& rows);

}  // namespace chessrl::eval
