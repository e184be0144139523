#include "cvs/exec/cluster.hpp"

#include <algorithm>
#include <fstream>

#include <set>

#include "cvs/config/config_error.hpp"
#include "cvs/config/json_reader.hpp"
#include "cvs/config/text_file.hpp"

namespace cvs {

bool is_loopback_address(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 || host == "ip6-localhost";
}

Cluster default_cluster() {
  return local_cluster(1);
}

Cluster local_cluster(std::size_t count) {
  Cluster c;
  for (std::size_t i = 0; i < count; ++i) {
    Node n;
    n.name = count == 1 ? "localhost" : "local" + std::to_string(i);
    n.host = "localhost";
    n.transport = "local";
    c.nodes.push_back(n);
  }
  c.coordinator_address = "127.0.0.1";
  return c;
}

namespace {

// slurm.nodes, or an existing job's job_id with its nodelist (nodes, when given, their count).
void check_existing_job(const OrderedJson& slurm, const std::vector<std::string>& nodelist, IssueList& issues,
                        Cluster& c) {
  const bool has_job = slurm.contains("job_id"), has_list = slurm.contains("nodelist");
  if (has_job && !has_list)
    issues.add("/slurm/nodelist", "slurm.job_id needs the hosts of that job to run on",
               "list them: \"nodelist\": [\"gpu01\"] (scontrol show hostnames $SLURM_JOB_NODELIST)");
  else if (has_list && !has_job)
    issues.add(
        "/slurm/nodelist", "slurm.nodelist names hosts of an existing job (slurm.job_id)",
        "add \"job_id\", or pin the hosts of a new allocation: \"extra_args\": [\"--nodelist=gpu01,gpu02\"]");
  if (has_job && has_list) {
    if (slurm.contains("nodes") && c.slurm.nodes != static_cast<int>(nodelist.size()))
      issues.add("/slurm/nodes",
                 "slurm.nodes is " + std::to_string(c.slurm.nodes) + " but nodelist lists " +
                     std::to_string(nodelist.size()) + " host(s)",
                 "remove nodes (the nodelist says how many)");
    c.slurm.nodes = static_cast<int>(nodelist.size());
  } else if (!slurm.contains("nodes")) {
    issues.add("/slurm/nodes", "slurm.nodes is missing", "set how many nodes to allocate, e.g. \"nodes\": 2");
  }
  if (!c.slurm.existing_job || nodelist.size() != static_cast<std::size_t>(c.slurm.nodes))
    c.slurm.existing_job = false;
}

void check_top_keys(const OrderedJson& root, IssueList& issues) {
  JsonReader(issues).unknown_keys(
      root, "",
      {"nodes", "head", "transport", "coordinator_address", "ssh", "overrides", "scheduler", "slurm"},
      "the cluster file");
}

void read_overrides_and_scheduler(const OrderedJson& root, IssueList& issues, Cluster& c) {
  if (auto o = root.find("overrides"); o != root.end()) {
    if (!o->is_object())
      issues.add("/overrides", "overrides must be an object merged onto the suite config",
                 "write {\"gpus_per_node\": 4}");
    else
      c.overrides = *o;
  }
  if (auto s = root.find("scheduler"); s != root.end()) {
    if (!s->is_string() || *s != "slurm")
      issues.add("/scheduler", "scheduler must be \"slurm\" (or absent for a listed set of nodes)",
                 "set \"scheduler\": \"slurm\"");
    else
      c.scheduler = "slurm";
  }
}

std::string* slurm_string(SlurmOptions& s, const std::string& k) {
  if (k == "partition") return &s.partition;
  if (k == "account") return &s.account;
  if (k == "time_limit") return &s.time_limit;
  if (k == "container_image") return &s.container_image;
  if (k == "container_mounts") return &s.container_mounts;
  return nullptr;
}

// One key of the slurm block.
void read_slurm_key(const std::string& k, const OrderedJson& v, IssueList& issues, Cluster& c,
                    std::vector<std::string>& nodelist) {
  const std::string p = pointer_join("/slurm", k);
  if (k == "nodes") {
    if (!v.is_number_integer() || v.get<int>() < 1)
      issues.add(p, "nodes must be a positive integer", "e.g. 2");
    else
      c.slurm.nodes = v.get<int>();
  } else if (k == "job_id") {
    if (!v.is_string() || v.get<std::string>().empty() ||
        v.get<std::string>().find_first_not_of("0123456789") != std::string::npos)
      issues.add(p, "job_id must be a Slurm job id as a string", "e.g. \"123456\" (squeue --me)");
    else
      c.slurm.job_id = v.get<std::string>(), c.slurm.existing_job = true;
  } else if (k == "nodelist" || k == "extra_args") {
    bool ok = v.is_array() && (k == "extra_args" || !v.empty());
    for (const auto& h : ok ? v : OrderedJson::array())
      ok = ok && h.is_string() && !h.get<std::string>().empty();
    if (!ok)
      issues.add(p,
                 k == "nodelist" ? "nodelist must be a non-empty list of host names"
                                 : "extra_args must be a list of strings",
                 k == "nodelist" ? "e.g. [\"gpu01\", \"gpu02\"] (scontrol show hostnames $SLURM_JOB_NODELIST)"
                                 : "e.g. [\"--exclusive\"]");
    else
      for (const auto& h : v)
        (k == "nodelist" ? nodelist : c.slurm.extra_args).push_back(h.get<std::string>());
  } else if (auto* field = slurm_string(c.slurm, k)) {
    if (!v.is_string()) return issues.add(p, k + " must be a string", "quote the value");
    *field = v.get<std::string>();
  }  // any other key: read_slurm's unknown_keys
}

// scheduler slurm: the slurm block, and the nodes: placeholders until the allocation names the
// hosts (rank order = SLURM_JOB_NODELIST order), or an existing job's hosts as they are listed.
void read_slurm(const OrderedJson& root, IssueList& issues, Cluster& c) {
  std::vector<std::string> nodelist;
  auto so = root.find("slurm");
  if (so == root.end() || !so->is_object()) {
    issues.add("/slurm", "scheduler slurm needs a slurm block",
               "add \"slurm\": {\"nodes\": 2, \"partition\": \"gpu\"}");
  } else {
    for (auto it = so->begin(); it != so->end(); ++it)
      if (it.key().empty() || it.key()[0] != '_') read_slurm_key(it.key(), *it, issues, c, nodelist);
    JsonReader(issues).unknown_keys(*so, "/slurm",
                                    {"nodes", "partition", "account", "time_limit", "extra_args",
                                     "container_image", "container_mounts", "job_id", "nodelist"},
                                    "the slurm block");
    check_existing_job(*so, nodelist, issues, c);
  }
  if (root.contains("nodes"))
    issues.add("/nodes", "with scheduler slurm the nodes come from the allocation",
               "remove nodes; set slurm.nodes");
  for (int i = 0; i < c.slurm.nodes; ++i) {
    Node n;
    n.name = c.slurm.existing_job ? nodelist[i] : "slurm-node-" + std::to_string(i);
    n.host = c.slurm.existing_job ? nodelist[i] : "(not allocated)";
    n.transport = "slurm";
    c.nodes.push_back(n);
  }
}

std::string* node_string(Node& n, const std::string& k) {
  if (k == "name") return &n.name;
  if (k == "host") return &n.host;
  if (k == "user") return &n.user;
  if (k == "ssh_key") return &n.ssh_key;
  if (k == "transport") return &n.transport;
  return nullptr;
}

void check_node(const Node& node, const std::string& p, IssueList& issues) {
  if (node.host.empty())
    issues.add(pointer_join(p, "host"), "host is empty", "set the node's host name or address");
  if (node.transport != "ssh" && node.transport != "local")
    issues.add(pointer_join(p, "transport"), "transport must be ssh or local", "set \"transport\": \"ssh\"");
  if (node.transport == "local" && !is_loopback_address(node.host))
    issues.add(pointer_join(p, "transport"), "transport local on host '" + node.host + "' (not this machine)",
               "use transport ssh for remote hosts");
}

// One entry of "nodes": a host name, or an object of name, host, user, ssh_key, port, transport.
std::optional<Node> read_node(const OrderedJson& n, const std::string& p, const std::string& transport,
                              IssueList& issues) {
  Node node;
  node.transport = transport;
  if (n.is_string()) {
    node.host = n.get<std::string>();
  } else if (!n.is_object()) {
    issues.add(p, "a node must be a host name or an object",
               "write \"gpu-node-01\" or {\"host\": \"gpu-node-01\"}");
    return std::nullopt;
  }
  for (auto it = n.is_object() ? n.begin() : n.end(); it != n.end(); ++it) {
    const auto& k = it.key();
    if (!k.empty() && k[0] == '_') continue;
    if (k == "port") {
      if (!it->is_number_integer() || it->get<int>() < 1 || it->get<int>() > 65535)
        issues.add(pointer_join(p, k), "port must be an integer 1..65535", "e.g. 22");
      else
        node.port = it->get<int>();
    } else if (!node_string(node, k)) {
      continue;  // reported by unknown_keys below
    } else if (!it->is_string()) {
      issues.add(pointer_join(p, k), "'" + k + "' must be a string", "quote the value");
    } else {
      *node_string(node, k) = it->get<std::string>();
    }
  }
  if (n.is_object())
    JsonReader(issues).unknown_keys(n, p, {"name", "host", "user", "ssh_key", "port", "transport"}, "a node");
  check_node(node, p, issues);
  if (node.name.empty()) node.name = node.host;
  return node;
}

void read_nodes(const OrderedJson& root, IssueList& issues, Cluster& c) {
  std::string transport = "ssh";
  if (auto t = root.find("transport"); t != root.end()) {
    if (!t->is_string() || (*t != "ssh" && *t != "local"))
      issues.add("/transport", "transport must be \"ssh\" or \"local\"", "set \"transport\": \"ssh\"");
    else
      transport = t->get<std::string>();
  }
  auto nodes = root.find("nodes");
  if (nodes == root.end() || !nodes->is_array() || nodes->empty())
    return issues.add("/nodes", "nodes must be a non-empty list",
                      "list the nodes, e.g. [{\"host\": \"gpu-node-01\"}]");
  std::set<std::string> names;
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const std::string p = pointer_join("/nodes", i);
    auto node = read_node((*nodes)[i], p, transport, issues);
    if (!node) continue;
    if (!names.insert(node->name).second)
      issues.add(pointer_join(p, "name"), "node name '" + node->name + "' is used twice",
                 "give each node a unique name (several nodes on one host need explicit names)");
    c.nodes.push_back(*node);
  }
}

// Head, rank 0 (JAX_PROCESS_INDEX 0 hosts JAX's coordinator), the coordinator address and the
// metrics source are one node: the head moves to the front, the others keep their order.
void read_head(const OrderedJson& root, IssueList& issues, Cluster& c) {
  if (auto h = root.find("head"); h != root.end()) {
    bool found = false;
    if (h->is_string())
      for (std::size_t i = 0; i < c.nodes.size(); ++i)
        if (c.nodes[i].name == h->get<std::string>()) {
          c.head = i;
          found = true;
        }
    if (!found)
      issues.add("/head", "head " + h->dump() + " is not the name of a node", "name one of the nodes");
  }
  if (c.head != 0 && c.head < c.nodes.size()) {
    std::rotate(c.nodes.begin(), c.nodes.begin() + static_cast<std::ptrdiff_t>(c.head),
                c.nodes.begin() + static_cast<std::ptrdiff_t>(c.head) + 1);
    c.head = 0;
  }
  if (c.nodes.empty()) return;
  if (auto a = root.find("coordinator_address"); a != root.end() && a->is_string())
    c.coordinator_address = a->get<std::string>();
  else
    c.coordinator_address = c.head_node().host;
  bool any_remote = false;
  for (const auto& n : c.nodes) any_remote |= !is_loopback_address(n.host);
  if (any_remote && is_loopback_address(c.coordinator_address))
    issues.add(root.contains("coordinator_address") ? "/coordinator_address" : "/head",
               "coordinator address '" + c.coordinator_address +
                   "' is a loopback address but nodes run on other hosts: they would never rendezvous",
               "set coordinator_address to an address of the head node that every node can reach");
}

void read_ssh(const OrderedJson& root, IssueList& issues, Cluster& c) {
  auto s = root.find("ssh");
  if (s == root.end()) return;
  if (!s->is_object())
    return issues.add("/ssh", "ssh must be an object", "write {\"connect_timeout_s\": 10}");
  for (auto it = s->begin(); it != s->end(); ++it) {
    const auto& k = it.key();
    const std::string p = pointer_join("/ssh", k);
    if (k == "connect_timeout_s" || k == "control_persist_s") {
      if (!it->is_number_integer() || it->get<int>() < 1)
        issues.add(p, k + " must be a positive integer", "e.g. 10");
      else
        (k == "connect_timeout_s" ? c.ssh.connect_timeout_s : c.ssh.control_persist_s) = it->get<int>();
    } else if (k == "control_dir") {
      if (!it->is_string())
        issues.add(p, "control_dir must be a string (a folder for ssh's ControlMaster sockets)",
                   "quote the path");
      else
        c.ssh.control_dir = it->get<std::string>();
    } else if (k == "options") {
      if (!it->is_array()) {
        issues.add(p, "options must be a list of ssh -o values",
                   "e.g. [\"StrictHostKeyChecking=accept-new\"]");
        continue;
      }
      for (std::size_t i = 0; i < it->size(); ++i)
        if (!(*it)[i].is_string())
          issues.add(pointer_join(p, i), "an ssh option must be a string", "e.g. \"ProxyJump=bastion\"");
        else
          c.ssh.extra_options.push_back((*it)[i].get<std::string>());
    }
  }
  JsonReader(issues).unknown_keys(
      *s, "/ssh", {"connect_timeout_s", "control_persist_s", "control_dir", "options"}, "the ssh block");
}

}  // namespace

Cluster parse_cluster(const std::string& text, const std::filesystem::path& file) {
  IssueList issues(file.string());
  OrderedJson root;
  try {
    root = OrderedJson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file.string(), "", std::string("invalid JSON: ") + e.what(), "fix the JSON syntax");
  }
  if (!root.is_object())
    throw ConfigError(file.string(), "", "a cluster file must be a JSON object", "wrap it in { }");
  Cluster c;
  c.file = file;
  check_top_keys(root, issues);
  read_overrides_and_scheduler(root, issues, c);
  if (c.is_slurm()) {
    read_slurm(root, issues, c);
  } else {
    read_nodes(root, issues, c);
    read_head(root, issues, c);
    read_ssh(root, issues, c);
  }
  issues.throw_if_any();
  return c;
}

Cluster load_cluster(const std::filesystem::path& file) {
  const auto text = read_text_file(file);
  if (!text) throw ConfigError(file.string(), "", "cannot read the cluster file", "check the --cluster path");
  return parse_cluster(*text, file);
}

namespace {

// {user-id} is "the cluster/OS username": the nodes' user when the cluster file gives one (the
// same on every node), else this process's user. Nodes with different users leave it undefined.
LoadOptions with_cluster_user(const std::filesystem::path& config_file, const Cluster& cluster,
                              LoadOptions options) {
  if (!options.user.empty()) return options;
  std::string user;
  std::string all;
  bool differ = false;
  for (const auto& n : cluster.nodes) {
    if (n.user.empty()) continue;
    if (user.empty()) user = n.user;
    differ |= n.user != user;
    if (all.find("'" + n.user + "'") == std::string::npos) all += (all.empty() ? "'" : ", '") + n.user + "'";
  }
  if (!differ) {
    options.user = user;
    return options;
  }
  const auto text = read_text_file(config_file);
  if (text && text->find("{user-id}") != std::string::npos)
    throw ConfigError(cluster.file.string(), "/nodes",
                      "the nodes log in as different users (" + all + ") but " + config_file.string() +
                          " uses {user-id} in its paths, which must be one user",
                      "give every node the same user, or write those paths without {user-id}");
  return options;
}

}  // namespace

SuiteConfig load_config_for_cluster(const std::filesystem::path& config_file, const Cluster& cluster,
                                    const LoadOptions& given) {
  const LoadOptions options = with_cluster_user(config_file, cluster, given);
  if (cluster.overrides.empty()) return load_config(config_file, options);
  const auto text = read_text_file(config_file);
  if (!text) throw ConfigError(config_file.string(), "", "cannot read the config file", "check the path");
  OrderedJson j;
  try {
    j = OrderedJson::parse(*text);
  } catch (const nlohmann::json::parse_error&) {
    return load_config(config_file, options);  // reports the syntax error with line and column
  }
  j.merge_patch(cluster.overrides);
  return load_config_text(j.dump(), config_file, options);
}

OrderedJson node_to_json(const Node& node) {
  OrderedJson j = {{"name", node.name}, {"host", node.host}, {"transport", node.transport}};
  if (!node.user.empty()) j["user"] = node.user;
  if (!node.ssh_key.empty()) j["ssh_key"] = node.ssh_key;
  if (node.port != 22) j["port"] = node.port;
  return j;
}

namespace {

// A Slurm cluster's file for these hosts: in its job (job_id, nodelist) while it holds one, else a
// new allocation of exactly them (nodes, extra_args --nodelist).
OrderedJson slurm_file_with(const Cluster& cluster, const std::vector<Node>& nodes, OrderedJson raw) {
  auto& slurm = raw["slurm"];
  auto hosts = OrderedJson::array();
  std::string joined;
  for (const auto& n : nodes) {
    hosts.push_back(n.host);
    joined += (joined.empty() ? "" : ",") + n.host;
  }
  if (!cluster.slurm.job_id.empty()) {
    slurm.erase("nodes");
    slurm["job_id"] = cluster.slurm.job_id;
    slurm["nodelist"] = hosts;
    return raw;
  }
  slurm.erase("job_id");
  slurm.erase("nodelist");
  slurm["nodes"] = nodes.size();
  auto args = OrderedJson::array();
  for (const auto& a : slurm.value("extra_args", OrderedJson::array()))
    if (!a.is_string() ||
        (a.get<std::string>().rfind("--nodelist", 0) != 0 && a.get<std::string>().rfind("-w", 0) != 0))
      args.push_back(a);
  args.push_back("--nodelist=" + joined);
  slurm["extra_args"] = args;
  return raw;
}

}  // namespace

OrderedJson cluster_file_with(const Cluster& cluster, const std::vector<Node>& nodes) {
  OrderedJson raw = OrderedJson::object();
  if (!cluster.file.empty()) {
    std::ifstream in(cluster.file);
    raw = OrderedJson::parse(in);
  }
  if (cluster.is_slurm()) return slurm_file_with(cluster, nodes, std::move(raw));
  auto list = OrderedJson::array();
  for (const auto& n : nodes) list.push_back(node_to_json(n));
  raw["nodes"] = list;
  if (nodes.empty()) return raw;
  const auto& head = nodes.front();
  raw["head"] = head.name;
  const bool same_head = !cluster.nodes.empty() && cluster.head_node().name == head.name;
  if (!(same_head && nodes.size() > 1 && raw.contains("coordinator_address")))
    raw["coordinator_address"] = is_loopback_address(head.host) ? "127.0.0.1" : head.host;
  return raw;
}

}  // namespace cvs
