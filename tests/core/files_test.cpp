#include "chessrl/core/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace chessrl {
namespace {

namespace fs = std::filesystem;

class FilesTest : public ::testing::Test {
 protected:
  FilesTest() {
    char pattern[] = "/tmp/chessrl-files-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~FilesTest() override { fs::remove_all(dir_); }
  std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string dir_;
};

TEST_F(FilesTest, APrivateFileIsOwnerOnlyEvenUnderAPermissiveUmask) {
  const mode_t old = ::umask(0);
  const std::string path = dir_ + "/token";
  auto written = write_private_file(path, "s3cret\n");
  ::umask(old);
  ASSERT_TRUE(written.ok()) << written.error();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(path), "s3cret\n");
  // Replacing an existing world-readable file leaves an owner-only one.
  const std::string open_file = dir_ + "/open";
  std::ofstream(open_file) << "old";
  ::chmod(open_file.c_str(), 0644);
  ASSERT_TRUE(write_private_file(open_file, "new").ok());
  ASSERT_EQ(::stat(open_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(open_file), "new");
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST_F(FilesTest, APrivateFileInAMissingDirectoryFailsNamingThePath) {
  const std::string path = dir_ + "/missing/token";
  auto written = write_private_file(path, "x");
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.error().find(path), std::string::npos) << written.error();
}

TEST_F(FilesTest, ASecretFileIsReadWithoutItsTrailingLineBreak) {
  const std::string path = dir_ + "/password";
  ASSERT_TRUE(write_private_file(path, "s3 cret\n").ok());
  auto secret = read_secret_file(path);
  ASSERT_TRUE(secret.ok()) << secret.error();
  EXPECT_EQ(*secret, "s3 cret");
  ASSERT_TRUE(write_private_file(path, "crlf\r\n").ok());
  EXPECT_EQ(read_secret_file(path).value_or_throw(), "crlf");
  ASSERT_TRUE(write_private_file(path, "no newline").ok());
  EXPECT_EQ(read_secret_file(path).value_or_throw(), "no newline");
}

// read_file: every byte, and every error of open() and read() an error (an
// iostream reads a directory, or a file whose read fails, as empty).
TEST_F(FilesTest, ReadFileReturnsTheBytesOrNamesTheError) {
  const std::string path = dir_ + "/bytes";
  std::string bytes(200000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7);
  ASSERT_TRUE(write_file_atomically(path, bytes).ok());
  auto read = read_file(path);
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(*read, bytes);
  auto directory = read_file(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().rfind(dir_ + ": cannot read: Is a directory", 0), 0u)
      << directory.error();
}

TEST_F(FilesTest, AMissingOrEmptySecretFileIsAnErrorNamingIt) {
  const std::string missing = dir_ + "/missing";
  auto none = read_secret_file(missing);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().rfind(missing + ": cannot read", 0), 0u) << none.error();
  const std::string empty = dir_ + "/empty";
  ASSERT_TRUE(write_private_file(empty, "\n").ok());
  auto blank = read_secret_file(empty);
  ASSERT_FALSE(blank.ok());
  EXPECT_EQ(blank.error().rfind(empty + ": empty", 0), 0u) << blank.error();
  if (::geteuid() != 0) {  // root reads a 0000 file anyway
    const std::string locked = dir_ + "/locked";
    ASSERT_TRUE(write_private_file(locked, "x").ok());
    ::chmod(locked.c_str(), 0);
    auto refused = read_secret_file(locked);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find("Permission denied"), std::string::npos) << refused.error();
  }
}

TEST_F(FilesTest, AtomicWriteReplacesTheWholeFile) {
  const std::string path = dir_ + "/state";
  ASSERT_TRUE(write_file_atomically(path, "a long first version").ok());
  ASSERT_TRUE(write_file_atomically(path, "short").ok());
  EXPECT_EQ(read(path), "short");
}

}  // namespace
}  // namespace chessrl
