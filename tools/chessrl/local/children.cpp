#include "local/children.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace chessrl::tool {

Result<std::unique_ptr<Child>> Child::start(const ChildSpec& spec) {
  if (!spec.ready_file.empty() && std::remove(spec.ready_file.c_str()) != 0 && errno != ENOENT)
    return fail(spec.name + ": cannot remove " + spec.ready_file + ": " + std::strerror(errno));
  ProcessSpec process;
  process.argv = spec.argv;
  process.env = spec.env;
  process.output_path = spec.log_path;
  process.null_stdin = true;
  process.nice = spec.nice;
  process.own_process_group = true;
  process.die_with_parent = true;
  auto started = Process::start(process);
  if (!started.ok()) return fail(spec.name + ": " + started.error());
  return std::unique_ptr<Child>(new Child(spec, std::move(started).value()));
}

}  // namespace chessrl::tool
