#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "cvs/card.hpp"
#include "cvs/utc_time.hpp"

namespace cvs::cli {

// `cvs card RESULTS.json [--out FILE]`: model-verification entries (Megatron-Bridge card schema).
int cmd_card(const Args& args) {
  if (args.empty() || (args.size() != 1 && !(args.size() == 3 && args[1] == "--out"))) {
    std::cerr << "usage: cvs card RESULTS.json [--out FILE]   (default FILE: verification_card.json beside "
                 "RESULTS.json)\n";
    return kExitUsage;
  }
  std::ifstream in(args[0]);
  if (!in) {
    std::cerr << "cvs card: cannot read " << args[0] << "\n";
    return kExitUsage;
  }
  const auto results = nlohmann::ordered_json::parse(in);
  const auto card = make_card(results, utc_now("%Y-%m-%d"));
  const std::filesystem::path out =
      args.size() == 3 ? std::filesystem::path(args[2])
                       : std::filesystem::path(args[0]).parent_path() / "verification_card.json";
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
