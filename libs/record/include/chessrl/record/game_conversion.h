// A finished self-play game (record::GameRecord) as the replay service's
// wire message (chessrl.v1.Game): moves packed as from + 64 * to + 4096 *
// promotion, one MoveTarget per recorded move, the outcome and termination,
// the model version that played it and the producer (the replica). Free
// function; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "chessrl/record/game_record.h"
#include "chessrl/v1/game.pb.h"

namespace chessrl::record {

// The standard start position is sent as an empty start_fen.
v1::Game to_wire_game(const record::GameRecord& record, std::uint64_t model_version,
                      const std::string& producer);

}  // namespace chessrl::record
