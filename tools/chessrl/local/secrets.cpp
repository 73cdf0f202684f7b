#include "local/secrets.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "chessrl/core/error.h"
#include "chessrl/core/files.h"

namespace chessrl::tool {

namespace fs = std::filesystem;

namespace {

std::string random_password() {
  std::random_device rd;
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 32; ++i) out += kChars[rd() % (sizeof kChars - 1)];
  return out;
}

}  // namespace

std::string kept_secret(const fs::path& file) {
  if (fs::exists(file)) {
    if (auto secret = read_secret_file(file.string()); secret.ok()) {
      fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);  // an older run's
      return *secret;
    }
  }
  const std::string secret = random_password();
  write_private_file(file.string(), secret + "\n").value_or_throw();
  return secret;
}

void make_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Error(dir.string() + ": cannot create: " + std::strerror(errno));
  }
  fs::permissions(dir, fs::perms::owner_all);
}

void make_run_tokens(const fs::path& dir) {
  make_private_dir(dir);
  for (const char* role : {"selfplay", "trainer", "evaluator"}) kept_secret(dir / role);
}

}  // namespace chessrl::tool
