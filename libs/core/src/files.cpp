#include "chessrl/core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

Result<void> write_private_file(const std::string& path, std::string_view bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  ::unlink(temporary.c_str());  // a leftover of an earlier crash, whatever its mode
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fail(path + ": cannot create " + temporary + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(temporary.c_str());
      return fail(path + ": writing " + temporary + " failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    return fail(path + ": writing " + temporary + " failed: " + why);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    return fail(path + ": cannot rename " + temporary + " into place: " + why);
  }
  return {};
}

Result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(path + ": cannot read: " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int error = errno;
      ::close(fd);
      return fail(path + ": cannot read: " + std::strerror(error));
    }
  }
  ::close(fd);
  return out;
}

Result<std::string> read_secret_file(const std::string& path) {
  auto read = read_file(path);
  if (!read) return fail(read.error());
  std::string secret = std::move(read).value();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return fail(path + ": empty (no secret in it)");
  return secret;
}

}  // namespace chessrl
