// Where a run resumes: the newest checkpoint of the directory that reads back
// whole, falling back to older ones (the newest may be corrupt: a disk error,
// a file truncated outside the trainer). No LibTorch.
#include <filesystem>

#include "trainer_state.h"

namespace chessrl::train {

Result<std::optional<ResumePoint>> find_resume_point(
    const std::string& dir, int world_size, const std::function<void(const std::string&)>& log) {
  auto all = list_checkpoints(dir);
  if (!all) return fail(all.error());
  std::string errors;
  for (auto it = all->rbegin(); it != all->rend(); ++it) {
    const std::string& path = it->second;
    auto bytes = nn::read_file_bytes(path);
    Result<TrainerState> state = fail("");
    if (bytes) {
      auto checkpoint = nn::parse_checkpoint(*bytes);
      state = checkpoint ? trainer_state(*checkpoint) : fail(checkpoint.error());
    }
    const std::string error = !bytes ? bytes.error() : !state ? state.error() : "";
    if (!error.empty()) {
      errors += (errors.empty() ? "" : "; ") + path + ": " + error;
      // Set aside (kept for a post-mortem), so no later resume reads it again
      // and the next checkpoint of that step does not collide with it.
      std::error_code ec;
      std::filesystem::rename(path, path + ".corrupt", ec);
      log("warning: checkpoint " + path + " is unreadable (" + error + ")" +
          (ec ? "" : "; moved aside to " + path + ".corrupt") +
          (std::next(it) != all->rend() ? "; trying the previous one" : ""));
      continue;
    }
    if (state->world_size != world_size)
      log("warning: " + path + " was written by " + std::to_string(state->world_size) +
          " rank(s) and resumes with " + std::to_string(world_size) +
          ": the global batch, and so the effective learning rate, changes");
    return std::optional<ResumePoint>(ResumePoint{path, std::move(*bytes), *state});
  }
  if (!errors.empty())
    return fail("no checkpoint in " + dir + " reads back whole (" + errors +
                "); move them away to start afresh");
  return std::optional<ResumePoint>();
}

}  // namespace chessrl::train
