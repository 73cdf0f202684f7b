#include "chessrl/harness/service_binary.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "chessrl/core/subprocess.h"

namespace chessrl::harness {

namespace fs = std::filesystem;

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

Result<std::string> find_service_binary(const std::string& name, const std::string& bin_dir) {
  std::vector<fs::path> tried;
  auto usable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; };
  if (!bin_dir.empty()) {
    const fs::path p = fs::path(bin_dir) / name;
    if (usable(p)) return p.string();
    return fail(name + " not found in --bin-dir " + bin_dir);
  }
  const fs::path here = executable_dir();
  const std::string short_name = name.substr(name.find('-') + 1);  // chessrl-replay -> replay
  for (const fs::path& p : {here / name, here / ".." / ".." / "services" / short_name / name}) {
    if (usable(p)) return fs::weakly_canonical(p).string();
    tried.push_back(p);
  }
  if (auto found = find_program(name)) return *found;
  std::string where;
  for (const auto& p : tried) where += p.string() + ", ";
  return fail(name + " not found (looked in " + where + "and PATH); build it (make) or give --bin-dir");
}

}  // namespace chessrl::harness
