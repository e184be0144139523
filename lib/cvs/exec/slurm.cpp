#include "cvs/exec/slurm.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <sstream>
#include <thread>

#include "cvs/config/config.hpp"
#include "cvs/exec/process.hpp"

namespace cvs {

SlurmAllocation slurm_allocate(const SlurmOptions& s, std::chrono::milliseconds timeout) {
  SlurmAllocation a;
  std::vector<std::string> argv = {"salloc", "--no-shell", "--job-name=cvs-" + os_user(),
                                   "--nodes=" + std::to_string(s.nodes), "--ntasks-per-node=1"};
  if (!s.partition.empty()) argv.push_back("--partition=" + s.partition);
  if (!s.account.empty()) argv.push_back("--account=" + s.account);
  if (!s.time_limit.empty()) argv.push_back("--time=" + s.time_limit);
  argv.insert(argv.end(), s.extra_args.begin(), s.extra_args.end());
  spdlog::info("slurm: allocating {} node(s): {}", s.nodes, shell_join(argv));
  auto r = run_one({argv, timeout, "salloc"});
  const std::string all = r.err + r.out;
  const std::string granted = "Granted job allocation ";
  if (auto p = all.find(granted); p != std::string::npos) {
    std::size_t e = p + granted.size();
    while (e < all.size() && std::isdigit(static_cast<unsigned char>(all[e]))) ++e;
    a.job_id = all.substr(p + granted.size(), e - p - granted.size());
  }
  if (a.job_id.empty()) {
    a.error = "slurm: salloc did not grant an allocation: " + r.describe();
    return a;
  }
  auto list = run_one(
      {{"squeue", "--noheader", "--jobs=" + a.job_id, "--format=%N"}, std::chrono::seconds(60), "squeue"});
  const std::string nodelist = list.out.substr(0, list.out.find('\n'));
  auto hosts = run_one({{"scontrol", "show", "hostnames", nodelist}, std::chrono::seconds(60), "scontrol"});
  std::stringstream ss(hosts.out);
  for (std::string h; std::getline(ss, h);)
    if (!h.empty()) a.hosts.push_back(h);
  if (!list.ok() || !hosts.ok() || a.hosts.size() != static_cast<std::size_t>(s.nodes))
    a.error = "slurm: job " + a.job_id + ": could not read its " + std::to_string(s.nodes) +
              " node(s) from '" + nodelist + "': " + (list.ok() ? hosts.describe() : list.describe());
  else
    spdlog::info("slurm: job {} on {}", a.job_id, nodelist);
  return a;
}

std::string slurm_release(const std::string& id) {
  auto c = run_one({{"scancel", id}, std::chrono::seconds(60), "scancel"});
  for (int i = 0; i < 60; ++i) {
    auto q = run_one(
        {{"squeue", "--noheader", "--jobs=" + id, "--format=%T"}, std::chrono::seconds(30), "squeue"});
    if (q.out.find_first_not_of(" \n") == std::string::npos || q.out.find("COMPLETED") != std::string::npos ||
        q.out.find("CANCELLED") != std::string::npos) {
      spdlog::info("slurm: job {} released", id);
      return "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return "slurm: job " + id + " still listed after scancel: " + c.describe();
}

std::vector<std::string> slurm_drain_argv(const std::string& host, const std::string& evidence) {
  std::string reason = "cvs-maxtext: " + evidence;
  for (auto& ch : reason)
    if (ch == '"' || ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  if (reason.size() > 200) reason = reason.substr(0, 197) + "...";
  return {"scontrol", "update", "NodeName=" + host, "State=DRAIN", "Reason=" + reason};
}

}  // namespace cvs
