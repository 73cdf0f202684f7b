// Parses command-line arguments in the option-group tests: `args` without the
// program name; "" when they parse, else the CLI11 error's name and text.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace chessrl::runtime::test_util {

inline std::string parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return std::string(e.get_name()) + ": " + e.what();
  }
  return "";
}

}  // namespace chessrl::runtime::test_util
