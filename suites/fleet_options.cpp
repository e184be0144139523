#include "fleet_options.hpp"

namespace cvs::fleet {

void add_policy_options(CLI::App& app, FleetPolicy& policy, std::size_t& max_parallel,
                        const char* parallel_what) {
  app.add_option("--max-parallel", max_parallel, parallel_what)->check(CLI::PositiveNumber);
  app.add_option("--max-z", policy.max_z, "modified z-score beyond which a node is an outlier (3.5)")
      ->check(CLI::PositiveNumber);
  app.add_option_function<double>(
         "--min-deviation-pct", [&policy](double pct) { policy.min_deviation = pct / 100; },
         "and at least this far from the fleet's median, in % (10)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-fleet", policy.min_fleet, "passing runs needed to score the fleet (3)")
      ->check(CLI::Range(2, 1 << 20));
}

}  // namespace cvs::fleet
