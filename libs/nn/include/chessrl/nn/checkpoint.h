// Checkpoints: self-describing model files (architecture, weights, training
// step, version, creation time, optionally optimizer state), as bytes or files.
// No LibTorch here: torch_network.h converts between a Checkpoint and a
// network. Plain data and free functions; thread-safe for distinct objects.
//
// File layout (little-endian):
//   "CHRLCKPT"  u32 format version (1)  u64 body length
//   body: sections, each a 4-byte tag, u64 length, payload
//     META  JSON: architecture, step, version, created (unix ms), description
//     TENS  u32 count, then per tensor: u16 name length, name, u8 dtype
//           (0 f32, 1 i64), u8 rank, i64 dims[rank], raw data
//     OPTM  optional: optimizer state, opaque bytes (written by libs/train)
//   u32 CRC-32 of everything before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/nn/network_config.h"

namespace chessrl::nn {

struct ModelInfo {
  NetworkConfig config;
  std::int64_t step = 0;        // training steps taken
  std::int64_t version = 0;     // model version in the registry (0: unpublished)
  std::int64_t created_ms = 0;  // creation time, unix milliseconds
  std::string description;      // free text (who made it, from what)
};

enum class TensorType : std::uint8_t { kFloat32 = 0, kInt64 = 1 };

struct NamedTensor {
  std::string name;  // the parameter's or buffer's name in the network
  TensorType type = TensorType::kFloat32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> data;  // numel * element size bytes
  std::int64_t numel() const;
};

struct Checkpoint {
  ModelInfo info;
  std::vector<NamedTensor> tensors;
  std::string optimizer_state;  // empty when absent
};

// Milliseconds since the unix epoch, now.
std::int64_t unix_millis_now();

std::string serialize_checkpoint(const Checkpoint& checkpoint);
// Fails, naming the problem, on bytes that are not a checkpoint, a truncated or
// corrupt one (CRC mismatch, a section or tensor running past its end), an
// unknown format version, or metadata with a missing or invalid field.
Result<Checkpoint> parse_checkpoint(std::string_view bytes);
// Reads only the metadata (still checks the CRC).
Result<ModelInfo> parse_checkpoint_info(std::string_view bytes);
// What proves `bytes` damaged, from the container's own checks: not starting
// with the magic, truncated, bytes after the end, or a CRC-32 mismatch.
// Nothing when they pass, and for a format version this build does not know
// (written by a newer build: not damage, and not checkable here): then a
// failure of parse_checkpoint is not damage either.
std::optional<std::string> checkpoint_damage(std::string_view bytes);

// Writes atomically: a temporary file in the same directory (<path>.tmp.<pid>),
// fsynced, renamed over `path`, then the directory fsynced, so a reader never
// sees half a checkpoint and a crash after the call keeps the new one. Errors
// name the path.
Result<void> save_checkpoint_file(const Checkpoint& checkpoint, const std::string& path);
// Removes the temporary files (<name>.tmp.<pid>) that writers which died
// mid-write left in `dir`: those of a process that no longer exists, and this
// process's own (the caller has no write in flight: a process restarted in a
// container often gets its predecessor's pid). Those of another live process
// stay. Returns the paths removed.
std::vector<std::string> remove_stale_temp_files(const std::string& dir);
Result<Checkpoint> load_checkpoint_file(const std::string& path);
// The whole file as bytes (for shipping to the registry).
Result<std::string> read_file_bytes(const std::string& path);

}  // namespace chessrl::nn
