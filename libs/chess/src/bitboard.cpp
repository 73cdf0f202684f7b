#include "chessrl/chess/bitboard.h"

#include <array>
#include <cstdlib>
#include <vector>

namespace chessrl::chess {

namespace detail {
Tables tables;
}  // namespace detail

namespace {

constexpr std::array<int, 4> kRookDirs{8, -8, 1, -1};
constexpr std::array<int, 4> kBishopDirs{9, 7, -7, -9};

// One step from s in direction d, or -1 when it leaves the board.
int step(int s, int d) {
  int t = s + d;
  if (t < 0 || t > 63) return -1;
  int df = (t & 7) - (s & 7);
  if (df > 1 || df < -1) return -1;
  return t;
}

Bitboard ray_attacks(const std::array<int, 4>& dirs, Square s, Bitboard occupied) {
  Bitboard result = 0;
  for (int d : dirs) {
    for (int t = step(s, d); t >= 0; t = step(t, d)) {
      result |= square_bb(Square(t));
      if (occupied & square_bb(Square(t))) break;
    }
  }
  return result;
}

// xorshift64*: a small deterministic generator, so magic search is reproducible.
struct Prng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ULL;
  }
  std::uint64_t sparse() { return next() & next() & next(); }
};

// Fills one slider's tables. With BMI2 the index is PEXT and needs no magic;
// otherwise searches a magic that maps every occupancy subset without a clash.
void init_slider(const std::array<int, 4>& dirs, detail::SliderTable* table, Bitboard* storage) {
  std::vector<Bitboard> occupancy(4096), reference(4096);
#if !defined(__BMI2__)
  std::vector<int> epoch(4096, 0);  // which magic attempt last wrote each slot
  Prng prng{0x9E3779B97F4A7C15ULL};
  int attempt = 0;
#endif
  Bitboard* next_storage = storage;

  for (int si = 0; si < 64; ++si) {
    Square s = Square(si);
    Bitboard edges =
        ((kRank1 | kRank8) & ~rank_bb(rank_of(s))) | ((kFileA | kFileH) & ~file_bb(file_of(s)));
    auto& t = table[s];
    t.mask = ray_attacks(dirs, s, 0) & ~edges;
    t.shift = unsigned(64 - popcount(t.mask));
    t.attacks = next_storage;

    // Carry-Rippler enumeration of every subset of the mask.
    int size = 0;
    Bitboard b = 0;
    do {
      occupancy[size] = b;
      reference[size] = ray_attacks(dirs, s, b);
      ++size;
      b = (b - t.mask) & t.mask;
    } while (b);
    next_storage += size;

#if defined(__BMI2__)
    for (int i = 0; i < size; ++i) t.attacks[t.index(occupancy[i])] = reference[i];
#else
    for (bool found = false; !found;) {
      do {
        t.magic = prng.sparse();
      } while (popcount((t.magic * t.mask) >> 56) < 6);
      ++attempt;
      found = true;
      for (int i = 0; i < size; ++i) {
        unsigned idx = t.index(occupancy[i]);
        if (epoch[idx] < attempt) {
          epoch[idx] = attempt;
          t.attacks[idx] = reference[i];
        } else if (t.attacks[idx] != reference[i]) {
          found = false;
          break;
        }
      }
    }
#endif
  }
}

Bitboard rook_storage[0x19000];
Bitboard bishop_storage[0x1480];

void init_tables() {
  auto& t = detail::tables;
  for (int si = 0; si < 64; ++si) {
    Square s = Square(si);
    Bitboard b = square_bb(s);
    t.pawn_attacks[kWhite][s] = pawn_attacks_bb<kWhite>(b);
    t.pawn_attacks[kBlack][s] = pawn_attacks_bb<kBlack>(b);
    Bitboard n = 0, k = 0;
    for (int d : {17, 15, 10, 6, -6, -10, -15, -17}) {
      int to = si + d;
      if (to >= 0 && to < 64 && std::abs((to & 7) - (si & 7)) <= 2) n |= square_bb(Square(to));
    }
    for (int d : {9, 8, 7, 1, -1, -7, -8, -9}) {
      if (int to = step(si, d); to >= 0) k |= square_bb(Square(to));
    }
    t.knight_attacks[s] = n;
    t.king_attacks[s] = k;
  }
  init_slider(kRookDirs, t.rook, rook_storage);
  init_slider(kBishopDirs, t.bishop, bishop_storage);

  for (int a = 0; a < 64; ++a) {
    for (int b = 0; b < 64; ++b) {
      t.between[a][b] = t.line[a][b] = 0;
      if (a == b) continue;
      Square sa = Square(a), sb = Square(b);
      for (PieceType pt : {kBishop, kRook}) {
        const auto& dirs = pt == kBishop ? kBishopDirs : kRookDirs;
        if (ray_attacks(dirs, sa, 0) & square_bb(sb)) {
          t.line[a][b] =
              (ray_attacks(dirs, sa, 0) & ray_attacks(dirs, sb, 0)) | square_bb(sa) | square_bb(sb);
          t.between[a][b] =
              ray_attacks(dirs, sa, square_bb(sb)) & ray_attacks(dirs, sb, square_bb(sa));
        }
      }
    }
  }
}

// Runs before main(): every function in this library may assume the tables.
const bool kTablesReady = (init_tables(), true);

}  // namespace

Bitboard sliding_attacks_reference(PieceType pt, Square s, Bitboard occupied) {
  Bitboard result = 0;
  if (pt == kBishop || pt == kQueen) result |= ray_attacks(kBishopDirs, s, occupied);
  if (pt == kRook || pt == kQueen) result |= ray_attacks(kRookDirs, s, occupied);
  return result;
}

}  // namespace chessrl::chess
