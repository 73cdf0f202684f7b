// Reference perft counts of the six Chess Programming Wiki positions, shared
// by the unit and slow perft tests.
#pragma once

#include <cctype>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace chessrl::chess::testing {

struct PerftCase {
  const char* name;
  const char* fen;
  std::vector<std::uint64_t> nodes;  // nodes[d - 1] = perft at depth d
};

// Lets GoogleTest (and so ctest's test names) show the case by name.
inline void PrintTo(const PerftCase& c, std::ostream* os) { *os << c.name; }

inline const std::vector<PerftCase>& perft_cases() {
  static const std::vector<PerftCase> cases = {
      {"start",
       "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
       {20, 400, 8902, 197281, 4865609, 119060324, 3195901860}},
      {"kiwipete",
       "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
       {48, 2039, 97862, 4085603, 193690690, 8031647685}},
      {"pos3",
       "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
       {14, 191, 2812, 43238, 674624, 11030083, 178633661}},
      {"pos4",
       "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
       {6, 264, 9467, 422333, 15833292, 706045033}},
      {"pos4-mirrored",
       "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1",
       {6, 264, 9467, 422333, 15833292, 706045033}},
      {"pos5",
       "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
       {44, 1486, 62379, 2103487, 89941194}},
      {"pos6",
       "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
       {46, 2079, 89890, 3894594, 164075551, 6923051137}},
  };
  return cases;
}

// Test-name generator for INSTANTIATE_TEST_SUITE_P: the case name, alphanumeric.
struct PerftCaseName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& param_info) const {
    std::string name = param_info.param.name;
    for (auto& ch : name)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return name;
  }
};

}  // namespace chessrl::chess::testing
