#include "chessrl/core/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace chessrl {
namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return fail(std::string("not a digit: '") + c + "'");
  return c - '0';
}

TEST(Result, HoldsAValueOrAnError) {
  auto ok = parse_digit('7');
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(*ok, 7);
  auto bad = parse_digit('x');
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "not a digit: 'x'");
}

TEST(Result, ValueOrThrowThrowsTheMessage) {
  EXPECT_EQ(parse_digit('3').value_or_throw(), 3);
  try {
    (void)parse_digit('?').value_or_throw();
    FAIL() << "expected chessrl::Error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "not a digit: '?'");
  }
}

TEST(Result, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  std::unique_ptr<int> p = std::move(r).value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 5);
}

Result<void> check_even(int n) {
  if (n % 2) return fail(std::to_string(n) + " is odd");
  return {};
}

TEST(Result, VoidResultIsOkOrAnError) {
  EXPECT_TRUE(check_even(4).ok());
  EXPECT_NO_THROW(check_even(4).value_or_throw());
  auto bad = check_even(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "3 is odd");
  EXPECT_THROW(bad.value_or_throw(), Error);
}

}  // namespace
}  // namespace chessrl
