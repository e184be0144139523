#include "cvs/exec/placement.hpp"

#include <spdlog/spdlog.h>

#include <sstream>
#include <thread>

#include "cvs/exec/process.hpp"
#include "cvs/exec/slurm.hpp"

namespace cvs {
namespace {

class DirectPlacement final : public Placement {
 public:
  using Placement::Placement;
  std::vector<std::string> acquire(std::chrono::milliseconds) override { return {}; }
  std::vector<std::string> agent_argv(std::size_t rank, const std::vector<std::string>& program,
                                      const EnvList& env) const override {
    return transport_.wrap(cluster_.nodes[rank], runtime_.exec_argv(program, env));
  }
  std::pair<std::vector<std::string>, EnvList> training(std::size_t, const std::vector<std::string>& train,
                                                        const EnvList& env) const override {
    return {train, env};
  }
  bool writes_yaml_in_a_step() const override { return false; }
  bool logs_here() const override { return false; }
  void after_stop() const override {}
  std::vector<std::string> release() override { return {}; }
};

class SlurmPlacement final : public Placement {
 public:
  using Placement::Placement;

  std::vector<std::string> acquire(std::chrono::milliseconds timeout) override {
    if (allocated_ || cluster_.slurm.existing_job) return {};
    auto a = slurm_allocate(cluster_.slurm, timeout);
    if (!a.job_id.empty()) {
      cluster_.slurm.job_id = a.job_id;
      allocated_ = true;  // granted: released at teardown even when its hosts could not be read
    }
    if (!a.ok()) return {a.error};
    for (std::size_t i = 0; i < a.hosts.size(); ++i) {
      cluster_.nodes[i].name = a.hosts[i];
      cluster_.nodes[i].host = a.hosts[i];
    }
    cluster_.head = 0;
    cluster_.coordinator_address = a.hosts[0];
    return {};
  }

  // The agent runs here; what it starts on a node is an srun step.
  std::vector<std::string> agent_argv(std::size_t, const std::vector<std::string>& program,
                                      const EnvList&) const override {
    return program;
  }

  // A foreground srun step on the node, detached here by the agent.
  std::pair<std::vector<std::string>, EnvList> training(std::size_t rank,
                                                        const std::vector<std::string>& train,
                                                        const EnvList& env) const override {
    return {transport_.wrap(cluster_.nodes[rank], runtime_.exec_argv(train, env)), {}};
  }

  bool writes_yaml_in_a_step() const override { return true; }
  bool logs_here() const override { return true; }

  // A killed srun does not always take its step with it: cancel what is left of this run.
  void after_stop() const override {
    const auto& id = cluster_.slurm.job_id;
    for (int i = 0; i < 40; ++i) {
      auto q = run_one({{"squeue", "--noheader", "--steps", "--jobs=" + id, "--format=%i"},
                        std::chrono::seconds(30),
                        "squeue"});
      std::vector<std::string> steps;
      std::stringstream ss(q.out);
      for (std::string s; ss >> s;)
        if (s.rfind(id + ".", 0) == 0 && s.find("extern") == std::string::npos) steps.push_back(s);
      if (steps.empty()) return;
      std::vector<std::string> argv = {"scancel", "--quiet"};
      argv.insert(argv.end(), steps.begin(), steps.end());
      run_one({argv, std::chrono::seconds(30), "scancel"});
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    spdlog::warn("slurm: steps of job {} still listed after scancel", id);
  }

  // Never leave an allocation behind: cancel it and wait until Slurm no longer lists it. A job
  // the cluster file named is the user's: left alone.
  std::vector<std::string> release() override {
    if (!allocated_) return {};
    allocated_ = false;
    if (auto why = slurm_release(cluster_.slurm.job_id); !why.empty()) return {why};
    return {};
  }

 private:
  bool allocated_ = false;
};

}  // namespace

std::unique_ptr<Placement> Placement::for_cluster(Cluster& cluster, const Runtime& runtime,
                                                  const Transport& transport) {
  if (cluster.is_slurm()) return std::make_unique<SlurmPlacement>(cluster, runtime, transport);
  return std::make_unique<DirectPlacement>(cluster, runtime, transport);
}

}  // namespace cvs
