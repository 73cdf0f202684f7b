#include "chessrl/eval/material_probe.h"

#include <cstdio>
#include <optional>

#include "chessrl/chess/position.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"

namespace chessrl::eval {
namespace {

constexpr const char* kPieceNames[] = {"pawn", "knight", "bishop", "rook", "queen"};

char piece_char(chess::Piece p) {
  static constexpr char kLetters[] = "pnbrqk";
  const char c = kLetters[chess::type_of(p)];
  return chess::color_of(p) == chess::kWhite ? char(c - 'a' + 'A') : c;
}

// `pos` as a FEN without the piece on `removed` (kNoSquare: none), with no
// castling rights or en-passant square; nullopt when that is not a legal
// position (the side not to move would be in check).
std::optional<std::string> fen_without(const chess::Position& pos, chess::Square removed) {
  std::string placement;
  for (int rank = 7; rank >= 0; --rank) {
    int empty = 0;
    for (int file = 0; file < 8; ++file) {
      const chess::Square s = chess::make_square(file, rank);
      const chess::Piece p = s == removed ? chess::kNoPiece : pos.piece_on(s);
      if (p == chess::kNoPiece) {
        ++empty;
        continue;
      }
      if (empty) placement += char('0' + empty);
      empty = 0;
      placement += piece_char(p);
    }
    if (empty) placement += char('0' + empty);
    if (rank) placement += '/';
  }
  const std::string fen = placement + (pos.side_to_move() == chess::kWhite ? " w" : " b") +
                          " - - 0 " + std::to_string(pos.fullmove_number());
  if (!chess::Position::from_fen(fen)) return std::nullopt;
  return fen;
}

std::optional<std::string> one_removed(const chess::Position& pos, chess::Color owner,
                                       chess::PieceType type) {
  for (chess::Bitboard b = pos.pieces(owner, type); b; b &= b - 1)
    if (auto fen = fen_without(pos, chess::lsb(b))) return fen;
  return std::nullopt;
}

double value_of(nn::InferenceBackend& backend, const std::string& fen) {
  chess::Position pos = chess::Position::from_fen(fen).value_or_throw();
  const nn::InputPlanes input[1] = {nn::encode(pos)};
  std::vector<float> logits(nn::kPolicySize);
  nn::Wdl wdl[1];
  backend.forward(input, logits, wdl);
  return double(wdl[0].win) - double(wdl[0].loss);
}

}  // namespace

std::vector<ProbePosition> material_probe_positions(const std::vector<std::string>& fens) {
  std::vector<ProbePosition> out;
  for (const std::string& text : fens) {
    auto parsed = chess::Position::from_fen(text);
    if (!parsed) continue;
    const chess::Position& pos = *parsed;
    const chess::Color us = pos.side_to_move();
    const auto base = fen_without(pos, chess::kNoSquare);
    if (!base) continue;
    for (int t = chess::kPawn; t <= chess::kQueen; ++t) {
      const auto type = chess::PieceType(t);
      auto up = one_removed(pos, ~us, type), down = one_removed(pos, us, type);
      if (up && down) out.push_back({type, *base, *up, *down});
    }
  }
  return out;
}

std::vector<MaterialProbeRow> run_material_probe(nn::InferenceBackend& backend,
                                                 const std::vector<ProbePosition>& positions) {
  std::array<MaterialProbeRow, 5> rows;
  for (int t = 0; t < 5; ++t) rows[std::size_t(t)].piece = chess::PieceType(t);
  for (const ProbePosition& p : positions) {
    MaterialProbeRow& r = rows[std::size_t(p.piece)];
    const double up = value_of(backend, p.up), down = value_of(backend, p.down);
    ++r.pairs;
    r.prefers_up += up > down;
    r.mean_up += up;
    r.mean_down += down;
    r.mean_base += value_of(backend, p.base);
  }
  std::vector<MaterialProbeRow> out;
  for (MaterialProbeRow& r : rows) {
    if (r.pairs == 0) continue;
    r.mean_up /= r.pairs;
    r.mean_down /= r.pairs;
    r.mean_base /= r.pairs;
    out.push_back(r);
  }
  return out;
}

std::string format_material_probe(const std::vector<MaterialProbeRow>& rows) {
  std::string out = "| piece | pairs | prefers the side a piece up | value up | value even | value down |\n"
                    "| --- | ---: | ---: | ---: | ---: | ---: |\n";
  int pairs = 0, prefers = 0;
  char line[200];
  for (const MaterialProbeRow& r : rows) {
    std::snprintf(line, sizeof line, "| %s | %d | %d (%.0f%%) | %+.3f | %+.3f | %+.3f |\n",
                  kPieceNames[r.piece], r.pairs, r.prefers_up, 100.0 * r.prefers_up / r.pairs,
                  r.mean_up, r.mean_base, r.mean_down);
    out += line;
    pairs += r.pairs;
    prefers += r.prefers_up;
  }
  std::snprintf(line, sizeof line, "all: %d of %d pairs (%.0f%%) value the side a piece up higher\n",
                prefers, pairs, pairs ? 100.0 * prefers / pairs : 0.0);
  return out + line;
}

}  // namespace chessrl::eval
