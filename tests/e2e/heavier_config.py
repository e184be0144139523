#!/usr/bin/env python3
"""The fleet and certify tests' configs, from a shipped one.

gated_by_loss(config, out): the config with a threshold file of its own beside `out`
(out + ".thresholds.json"), gates that hold on any machine: the loss must fall, tokens/s recorded.
heavier(config): steps of ~0.1 s, not the CPU default's ~15 ms (at 15 ms a step's 1 ms print
resolution and the ssh hosts' log streaming on the same two cores are 10-40 % of the figure).
devices(config, n): n JAX devices a node, as real nodes have several GPUs (gpus_per_node and
JAX's --xla_force_host_platform_device_count together).

   heavier_config.py IN OUT [DEVICES]   the single-node config, heavier and gated by loss (on
                                        DEVICES devices a node, default 1), written to OUT
"""
import json
import sys

GATES = {"training.loss_decreased": {"kind": "min", "value": 1},
         "training.tokens_per_sec_per_gpu": {"kind": "info", "value": 0.0}}


def gated_by_loss(config, out):
    thresholds = out + ".thresholds.json"
    with open(thresholds, "w") as f:
        json.dump({k: GATES for k in config["sweeps"]}, f, indent=1)
    config["threshold_json"] = thresholds
    return config


def heavier(config):
    config["train_params"]["maxtext_config"].update(
        {"base_emb_dim": 256, "base_mlp_dim": 1024, "base_num_decoder_layers": 4, "steps": 20, "log_period": 5})
    return config


def devices(config, n):
    config["gpus_per_node"] = n
    if n > 1:
        flags = config["train_params"].setdefault("xla_flags", {})
        flags["xla_force_host_platform_device_count"] = str(n)
        # as the shipped multi-device CPU configs: no two collectives of one device at once
        flags["xla_cpu_enable_concurrency_optimized_scheduler"] = "false"
    return config


def write(config, out):
    with open(out, "w") as f:
        json.dump(config, f, indent=1)


if __name__ == "__main__":
    source, target = sys.argv[1:3]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with open(source) as f:
        write(devices(heavier(gated_by_loss(json.load(f), target)), n), target)
