#!/usr/bin/env python3
"""Writes a container variant of a CPU config for the `containers` tests (test machines only).

  container_config.py BASE_CONFIG OUT_FILE ENGINE [--one-sweep] [--nan] [--name NAME]

The training runs in ENGINE (docker | podman) from the image engine_setup.sh imported, with the
spec's runtime args (host network and IPC, --privileged, shm-size) and read-only volumes for what
clusters keep on their shared filesystem: this host's /usr, the Python the venv was made from,
and the checkout (the venv and MaxText). /tmp/<user> is mounted read-write: log_dir and the
checkpoints live there, as on a shared filesystem. `ulimit` goes to docker only: podman 4.3 reads
a container's limits back from the OCI bundle, which the test-only runtime wrapper strips, so
setup's inspect check would rightly report them missing there.
"""
import json
import os
import sys

base, out, engine = sys.argv[1:4]
flags = sys.argv[4:]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
cfg = json.load(open(base))
home = ""
for line in open(os.path.join(root, ".venv", "pyvenv.cfg")):
    if line.startswith("home"):
        home = os.path.dirname(line.split("=", 1)[1].strip())  # .../versions/3.12.1
args = {
    "network": "host",
    "ipc": "host",
    "privileged": True,
    "shm-size": "1g",
    "volumes": ["/usr:/usr:ro", f"{home}:{home}:ro", f"{root}:{root}:ro", "/tmp/{user-id}:/tmp/{user-id}"],
}
if engine == "docker":
    args["ulimit"] = ["nofile=65535:65535", "memlock=-1:-1"]
name = flags[flags.index("--name") + 1] if "--name" in flags else f"cvs-ci-{engine}"
cfg["container"].update({"name": name, "image": "localhost/cvs-test-host:latest",
                         "runtime": {"name": engine, "args": args}})
threshold = cfg.get("threshold_json", "")
if threshold and not os.path.isabs(threshold):
    cfg["threshold_json"] = os.path.join(root, "thresholds", threshold)
if "--one-sweep" in flags:
    cfg["runs"] = cfg["runs"][:1]
if "--nan" in flags:
    cfg["train_params"]["maxtext_config"].update({"learning_rate": 1.0e12, "abort_on_nan_loss": True})
json.dump(cfg, open(out, "w"), indent=1)
