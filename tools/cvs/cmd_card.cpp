#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_parse.hpp"
#include "commands.hpp"
#include "cvs/base/utc_time.hpp"
#include "cvs/results/card.hpp"
#include "cvs/results/results_file.hpp"

namespace cvs::cli {

// `cvs card RESULTS.json [--out FILE]`: model-verification entries (Megatron-Bridge card schema).
int cmd_card(const Args& args) {
  CLI::App app{"cvs card: a session as model-verification entries (the Megatron-Bridge card schema)",
               "cvs card"};
  std::string file, out_arg;
  app.add_option("results", file, "a session's results.json")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out_arg, "the card to write (default: verification_card.json beside results.json)");
  if (auto rc = parse_cli(app, args)) return *rc;
  const auto results = read_results(file);
  const auto card = make_card(results, utc_now("%Y-%m-%d"));
  const std::filesystem::path out =
      !out_arg.empty() ? std::filesystem::path(out_arg)
                       : std::filesystem::path(file).parent_path() / "verification_card.json";
  if (std::filesystem::exists(out)) {
    std::cerr << "cvs card: " << out << " exists; not overwriting it (pass --out)\n";
    return kExitUsage;
  }
  std::ofstream(out) << card.dump(2) << "\n";
  int verified = 0, total = 0;
  for (const auto& e : card["models"][0]["entries"]) {
    ++total;
    verified += e["status"] == "verified";
  }
  std::cout << "wrote " << out.string() << " (" << verified << " of " << total << " entries verified)\n";
  return kExitOk;
}

}  // namespace cvs::cli
