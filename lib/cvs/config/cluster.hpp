// The cluster file: the nodes, the head node (JAX coordinator) and per-cluster overrides.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cvs/config/config.hpp"

namespace cvs {

struct Node {
  std::string name;
  std::string host = "localhost";
  std::string user;     // ssh only; empty = the ssh default
  std::string ssh_key;  // ssh only; empty = the ssh default
  int port = 22;
  std::string transport = "local";  // local | ssh
};

struct SshOptions {
  int connect_timeout_s = 10;
  int control_persist_s = 120;
  std::string control_dir;                 // ControlMaster sockets; default $TMPDIR/cvs-ssh-<user>
  std::vector<std::string> extra_options;  // each passed as -o VALUE ("options" in the file)
};
class JsonReader;
void from_json(JsonReader& r, SshOptions& out);  // the cluster file's ssh block

// scheduler "slurm": the nodes come from an allocation (salloc) and every command reaches its
// node through `srun --jobid ... --nodelist HOST --overlap`. With slurm.job_id and slurm.nodelist,
// the nodes are those hosts of a job allocated already (by fleet mode, or by you: salloc).
struct SlurmOptions {
  int nodes = 0;
  std::string partition;
  std::string account;
  std::string time_limit;               // salloc --time, e.g. "01:00:00"
  std::vector<std::string> extra_args;  // passed to salloc as they are
  std::string container_image;          // pyxis/enroot: srun --container-image
  std::string container_mounts;         // pyxis/enroot: srun --container-mounts
  std::string job_id;                   // set once allocated, or given (existing_job)
  bool existing_job = false;  // slurm.job_id and slurm.nodelist in the file: run in that job's hosts,
                              // neither allocate nor release it (fleet mode's node and pair runs)
};

struct Cluster {
  std::filesystem::path file;  // empty for the built-in default
  std::string scheduler;       // "" (nodes listed here) or "slurm"
  SlurmOptions slurm;
  bool is_slurm() const { return scheduler == "slurm"; }
  std::vector<Node> nodes;
  std::size_t head = 0;             // index into nodes: always 0 (the head is rank 0)
  std::string coordinator_address;  // address the other nodes use to reach the head
  SshOptions ssh;
  OrderedJson overrides = OrderedJson::object();  // JSON merge patch applied to the suite config
  const Node& head_node() const { return nodes.at(head); }
};

// One node, `localhost`, transport local: the default when no cluster file is given.
Cluster default_cluster();
// A cluster of `count` local nodes on this host (e.g. two JAX processes on one CPU machine).
Cluster local_cluster(std::size_t count);
Cluster load_cluster(const std::filesystem::path& file);
Cluster parse_cluster(const std::string& text, const std::filesystem::path& file);

bool is_loopback_address(const std::string& host);

// A node as the cluster file writes it (name, host, transport; user, ssh_key and port when set).
OrderedJson node_to_json(const Node& node);

// The cluster file (its own keys kept: transport, ssh, overrides...) listing only `nodes`, the first
// of them the head; the coordinator address is kept while the head is the same node of several,
// else the head's host (127.0.0.1 for a loopback one). What fleet mode writes for each node's run, each
// pair's and the healthy nodes.
OrderedJson cluster_file_with(const Cluster& cluster, const std::vector<Node>& nodes);
// cluster_file_with the nodes of these names, in this order, written to `file` (fleet mode's
// healthy_cluster.json); with no name, none is written and an older one is removed.
void write_cluster_file_of(const std::filesystem::path& file, const Cluster& cluster,
                           const std::vector<std::string>& names);
// Each node's name -> its host.
std::map<std::string, std::string> hosts_by_name(const Cluster& cluster);
// slurm_exclude.txt (fleet mode's and certify's): "--exclude=host1,host2", each named node's host
// (its name when host_of has none), or an empty file when no node is named.
void write_slurm_exclude(const std::filesystem::path& file, const std::map<std::string, std::string>& host_of,
                         const std::vector<std::string>& names);

// Loads a suite config with the cluster's overrides merged in (RFC 7396 merge patch).
SuiteConfig load_config_for_cluster(const std::filesystem::path& config_file, const Cluster& cluster,
                                    const LoadOptions& options = {});

}  // namespace cvs
