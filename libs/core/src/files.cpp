#include "chessrl/core/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace chessrl {

Result<void> write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return fail(path + ": cannot write " + temporary + ": " + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      return fail(path + ": writing " + temporary + " failed");
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    return fail(path + ": cannot rename " + temporary + " into place: " + ec.message());
  }
  return {};
}

}  // namespace chessrl
