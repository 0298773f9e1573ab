// For the verbs' tests: what CLI11 says when a command line does not parse.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace ckptspec {

// The message of the error `args` (without the program name) raise on `app`; "parsed" if none.
inline std::string ParseErrorOf(CLI::App& app, const std::string& args) {
  try {
    app.parse(args, /*program_name_included=*/false);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "parsed";
}

}  // namespace ckptspec
