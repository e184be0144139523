#!/usr/bin/env python3
"""A stand-in amd-smi answering from a table of GPUs (no GPU on these machines: a double at the
vendor tool's process boundary). It answers what the sampler and the setup probe ask, --json, in
the shape of amd-smi 6.x (a bare list; throttle) or 7.x ({"gpu_data": [...]}; limit.ppt0;
violation), $CVS_STAND_IN_AMD_SMI = 6 | 7:

   amd_table.py version | list | static [...] | metric [...] | bad-pages | process   (with --json)

The keys and shapes are amd-smi's own (amdsmi_cli/amdsmi_commands.py) as its recorded outputs
print them (tests/data/amd: the 8x MI300X default view of ROCm 7.0's changelog: addresses, 750 W
caps; the ROCm blog's MI300X session: 16 lanes at 32 GT/s, gfx clocks ~2100 MHz, "No bad pages
found."; ROCm 6.3's metric --pcie and --throttle sections, all counters 0 when healthy).

$CVS_STAND_IN_TABLE: {"idle": {field: value}, "load": {field: value},
                      "gpus": [{"phase": {"load": {field: value}}, field: value, ...}, ...]}
(a GPU's own fields override the phase's; its "phase" entries override both). The phase is
$CVS_STAND_IN_PHASE (idle | load), or with $CVS_STAND_IN_STEPS_UNDER (a folder of training logs)
"load" once a training.log there, newer than the table, has a step line.
Fields: bdf uuid market_name power_cap power_max max_pcie_width max_pcie_speed gfx_activity
socket_power gfx_clk mem_clk hotspot mem_temp pcie_width pcie_speed replay_count
l0_to_recovery_count nak_sent_count nak_received_count ecc_correctable ecc_uncorrectable
ecc_umc_uncorrectable ppt_violation socket_thermal_violation hbm_thermal_violation
bad_pages_retired bad_pages_pending.
"""
import glob
import json
import os
import sys


def phase_now(table_path):
    under = os.environ.get("CVS_STAND_IN_STEPS_UNDER")
    if not under:
        return os.environ.get("CVS_STAND_IN_PHASE", "load")
    since = os.path.getmtime(table_path)
    for log in glob.glob(os.path.join(under, "**", "training.log"), recursive=True):
        try:
            if os.path.getmtime(log) >= since and "completed step: " in open(log, errors="replace").read():
                return "load"
        except OSError:
            pass
    return "idle"


def fig(value, unit):
    return value if value == "N/A" else {"value": value, "unit": unit}


def pages(n, status):
    if n == 0:
        return "No bad pages found."
    one = [{"page_address": hex(0x1f2a4000 + 0x1000 * i), "page_size": 4096, "status": status} for i in range(n)]
    return one[0] if n == 1 else one


def static(f, major):
    limit = {"max_power": fig(f["power_max"], "W"), "min_power": fig(0, "W"), "socket_power": fig(f["power_cap"], "W"),
             "slowdown_edge_temperature": "N/A", "slowdown_hotspot_temperature": fig(100, "C"),
             "slowdown_vram_temperature": fig(95, "C"), "shutdown_edge_temperature": "N/A",
             "shutdown_hotspot_temperature": fig(110, "C"), "shutdown_vram_temperature": fig(105, "C")}
    if major >= 7:
        limit = {"ppt0": {"max_power_limit": limit["max_power"], "min_power_limit": limit["min_power"],
                          "socket_power_limit": limit["socket_power"]},
                 **{k: v for k, v in limit.items() if "temperature" in k}}
    return {
        "asic": {"market_name": f["market_name"], "vendor_id": "0x1002",
                 "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "subvendor_id": "0x1002",
                 "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": "N/A", "oam_id": f["oam_id"],
                 "num_compute_units": 304, "target_graphics_version": "gfx942"},
        "bus": {"bdf": f["bdf"], "max_pcie_width": f["max_pcie_width"], "max_pcie_speed": fig(f["max_pcie_speed"], "GT/s"),
                "pcie_interface_version": "Gen 5", "slot_type": "OAM"},
        "limit": limit,
        "vram": {"type": "HBM", "vendor": "N/A", "size": fig(196592, "MB")},
    }


def metric(f, major):
    clocks = {f"gfx_{i}": {"clk": fig(f["gfx_clk"], "MHz"), "min_clk": fig(500, "MHz"), "max_clk": fig(2100, "MHz"),
                           "clk_locked": "DISABLED", "deep_sleep": "DISABLED"} for i in range(8)}
    clocks["mem_0"] = {"clk": fig(f["mem_clk"], "MHz"), "min_clk": fig(900, "MHz"), "max_clk": fig(1300, "MHz"),
                       "clk_locked": "N/A", "deep_sleep": "DISABLED"}
    blocks = {b: {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0}
              for b in ("UMC", "SDMA", "GFX", "MMHUB", "PCIE_BIF", "HDP", "XGMI_WAFL")}
    blocks["UMC"]["uncorrectable_count"] = f["ecc_umc_uncorrectable"]
    violation = {"accumulation_counter": 3808991, "prochot_accumulated": 0, "ppt_accumulated": 585613,
                 "socket_thermal_accumulated": 2190, "vr_thermal_accumulated": 0, "hbm_thermal_accumulated": 0}
    for kind in ("prochot", "ppt", "socket_thermal", "vr_thermal", "hbm_thermal"):
        on = bool(f.get(kind + "_violation", False))
        violation[kind + "_violation_status"] = "ACTIVE" if on else "NOT ACTIVE"
        violation[kind + "_violation_activity"] = fig(100 if on else 0, "%")
    pcie = {"width": f["pcie_width"], "speed": fig(f["pcie_speed"], "GT/s"), "bandwidth": fig(18, "Mb/s"),
            "replay_count": f["replay_count"], "l0_to_recovery_count": f["l0_to_recovery_count"],
            "replay_roll_over_count": 0, "nak_sent_count": f["nak_sent_count"],
            "nak_received_count": f["nak_received_count"], "current_bandwidth_sent": "N/A",
            "current_bandwidth_received": "N/A", "max_packet_size": "N/A"}
    pcie["lc_perf_other_end_recovery_count" if major >= 7 else "lc_perf_other_end_recovery"] = 0
    return {
        "usage": {"gfx_activity": fig(f["gfx_activity"], "%"), "umc_activity": fig(0, "%"), "mm_activity": "N/A"},
        "power": {"socket_power": fig(f["socket_power"], "W"), "gfx_voltage": "N/A", "soc_voltage": "N/A",
                  "mem_voltage": "N/A", "power_management": "ENABLED", "throttle_status": "N/A"},
        "clock": clocks,
        "temperature": {"edge": "N/A", "hotspot": fig(f["hotspot"], "C"), "mem": fig(f["mem_temp"], "C")},
        "pcie": pcie,
        "ecc": {"total_correctable_count": f["ecc_correctable"], "total_uncorrectable_count": f["ecc_uncorrectable"],
                "total_deferred_count": 0, "cache_correctable_count": 0, "cache_uncorrectable_count": 0},
        "ecc_blocks": blocks,
        ("violation" if major >= 7 else "throttle"): violation,
    }


def main(argv):
    major = int(os.environ.get("CVS_STAND_IN_AMD_SMI", "6"))
    cmd = argv[0] if argv else ""
    if cmd == "version":
        print("AMDSMI Tool: 26.0.0+eaa54ecc | AMDSMI Library version: 26.0.0 | ROCm version: 7.0.0 (stand-in table)"
              if major >= 7 else
              "AMDSMI Tool: 24.6.2+2b02a07 | AMDSMI Library version: 24.6.2.0 | ROCm version: 6.2.0 (stand-in table)")
        return 0
    if cmd == "process":
        apps = os.environ.get("CVS_STAND_IN_APPS")
        print(open(apps).read() if apps else ('{"gpu_data": []}' if major >= 7 else "[]"))
        return 0
    if "--json" not in argv:
        print(f"stand-in: amd-smi {' '.join(argv)} is answered with --json only", file=sys.stderr)
        return 2
    path = os.environ["CVS_STAND_IN_TABLE"]
    table = json.load(open(path))
    phase = phase_now(path)
    out = []
    for i, gpu in enumerate(table["gpus"]):
        f = {**table.get(phase, {}), **{k: v for k, v in gpu.items() if k != "phase"}, **gpu.get("phase", {}).get(phase, {})}
        f.setdefault("oam_id", i)
        if cmd == "list":
            row = {"bdf": f["bdf"], "uuid": f["uuid"], "kfd_id": 45412 + i, "node_id": i + 2, "partition_id": 0}
        elif cmd == "static":
            row = static(f, major)
        elif cmd == "metric":
            row = metric(f, major)
        elif cmd == "bad-pages":
            row = {"retired": pages(f["bad_pages_retired"], "RESERVED"), "pending": pages(f["bad_pages_pending"], "PENDING"),
                   "un_res": "No bad pages found."}
        else:
            print(f"stand-in: amd-smi {cmd} is not answered here", file=sys.stderr)
            return 2
        out.append({"gpu": i, **row})
    print(json.dumps({"gpu_data": out} if major >= 7 else out, indent=4))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
