// Where a run resumes: the newest checkpoint of the directory that reads back
// whole, falling back to older ones when the newest is proven damaged by its
// own checks (a disk error, a file truncated outside the trainer); one that
// cannot be read now, or that is whole but not usable by this build, stops the
// resume instead. No LibTorch.
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
    // A file that cannot be read now (permissions, an I/O error, a volume
    // gone) is not proven damaged: stop, and leave it where it is. Set aside,
    // the next restart would find nothing and start again from step 0.
    if (!bytes)
      return fail("cannot read checkpoint " + path + " (" + bytes.error() +
                  "); not moved aside: it may be whole. Fix the volume or its permissions, "
                  "or move it away to resume from an older one");
    auto checkpoint = nn::parse_checkpoint(*bytes);
    Result<TrainerState> state = checkpoint ? trainer_state(*checkpoint) : fail(checkpoint.error());
    if (!state) {
      const auto damage = nn::checkpoint_damage(*bytes);
      // Whole by its own checks (the CRC matches, or a newer build's format):
      // this build cannot use it, and nothing proves it bad. Stop.
      if (!damage)
        return fail("checkpoint " + path + " is whole but this build cannot resume from it (" +
                    state.error() + "); not moved aside. Was it written by a newer image (helm "
                    "rollback)? Run that image, or move the file away to resume from an older one");
      const std::string& error = *damage;
      errors += (errors.empty() ? "" : "; ") + path + ": " + error;
      // Proven damaged: set aside (kept for a post-mortem), so no later resume
      // reads it again and the next checkpoint of that step does not collide with it.
      std::error_code ec;
      std::filesystem::rename(path, path + ".corrupt", ec);
      log("warning: checkpoint " + path + " is damaged (" + error + ")" +
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
