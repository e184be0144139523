// CLI11 for the `cvs` subcommands: one way to parse, to answer --help and to name a bad option.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

#include "commands.hpp"

namespace cvs::cli {

// Parses args (the words after the subcommand) with app. nullopt when the command should run;
// otherwise the exit code: 0 after --help (printed), kExitUsage after an error (printed, naming
// the option or argument).
inline std::optional<int> parse_cli(CLI::App& app, const Args& args) {
  app.footer(kExitCodeTable);  // every command's --help and man page list the one table
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace cvs::cli
