// Placement: where a run's node-agent programs and its training go, the one place that knows the
// two shapes (the launcher asks it and never which one it is).
//  - Direct (local, ssh, exec): the agent runs on each node, through the runtime and the
//    transport; it writes the MaxText YAML, starts training detached and streams frames back.
//  - Slurm: an allocation holds the nodes (salloc, unless the cluster file names a job it runs
//    in); the agent runs on this host; the YAML writes and training are srun steps on the nodes,
//    whose output streams here and is followed in-process. After a stop its steps are cancelled;
//    at teardown the allocation it made is released.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cvs/config/cluster.hpp"
#include "cvs/exec/runtime.hpp"
#include "cvs/exec/transport.hpp"

namespace cvs {

class Placement {
 public:
  Placement(Cluster& cluster, const Runtime& runtime, const Transport& transport)
      : cluster_(cluster), runtime_(runtime), transport_(transport) {}
  virtual ~Placement() = default;
  // Direct for a cluster of nodes, Slurm for `scheduler: slurm`.
  static std::unique_ptr<Placement> for_cluster(Cluster& cluster, const Runtime& runtime,
                                                const Transport& transport);

  // Before the launch: what the nodes run in (Slurm: allocate once and name the cluster's nodes
  // by the allocated hosts, rank order, the first the coordinator). Returns problems.
  virtual std::vector<std::string> acquire(std::chrono::milliseconds timeout) = 0;
  // The local argv that runs node-agent `program` for node `rank` where the agent lives.
  virtual std::vector<std::string> agent_argv(std::size_t rank, const std::vector<std::string>& program,
                                              const EnvList& env) const = 0;
  // Training on node `rank` as the agent starts it, and the env the agent is run with.
  virtual std::pair<std::vector<std::string>, EnvList> training(std::size_t rank,
                                                                const std::vector<std::string>& train,
                                                                const EnvList& env) const = 0;
  // The YAML is written on the node by a step of its own before the start (else by the agent's
  // start program).
  virtual bool writes_yaml_in_a_step() const = 0;
  // The nodes' logs are on this host (followed in-process, not streamed by an agent).
  virtual bool logs_here() const = 0;
  // After a run was stopped: what a killed step may have left.
  virtual void after_stop() const = 0;
  // At teardown: what acquire() took. Returns problems; safe to call twice.
  virtual std::vector<std::string> release() = 0;

 protected:
  Cluster& cluster_;
  const Runtime& runtime_;
  const Transport& transport_;
};

}  // namespace cvs
