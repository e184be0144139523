// Node transports: how a command vector runs on a node (local fork/exec, or the system ssh
// client with BatchMode, ControlMaster reuse and a connect timeout), and fan-out to all nodes.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cvs/config/cluster.hpp"
#include "cvs/exec/process.hpp"

namespace cvs {

class Transport {
 public:
  explicit Transport(const Cluster& cluster);
  // The local argv that runs `argv` on `node`. ssh: one quoted remote command after "--".
  std::vector<std::string> wrap(const Node& node, const std::vector<std::string>& argv) const;
  const Cluster& cluster() const { return cluster_; }

 private:
  const Cluster& cluster_;
  std::string control_dir_;
};

// ssh exits 255 when it could not connect or authenticate.
bool is_unreachable(const Node& node, const ProcResult& r);
// What a check on an unreachable node says, leading with it: "unreachable: ssh: connect to host
// 10.0.0.3 port 2203: Connection refused (the train script check could not run)": ssh's own
// reason, then what was never checked. "" when the node answered.
std::string unreachable_words(const Node& node, const ProcResult& r, const std::string& what);

// Runs per_node[i] on cluster.nodes[i], all at once. Results in node order, labelled by node name.
std::vector<ProcResult> fan_out(const Transport& t, const std::vector<std::vector<std::string>>& per_node,
                                std::chrono::milliseconds timeout);

}  // namespace cvs
