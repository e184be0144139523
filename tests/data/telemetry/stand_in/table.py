#!/usr/bin/env python3
"""A stand-in nvidia-smi answering from a table (no GPU on these machines: a double at the vendor
tool's process boundary). Any --query-gpu field list is answered, field by field, from the table's
GPUs in the phase named by $CVS_STAND_IN_PHASE (idle or load); a field the table lacks is
nvidia-smi's own refusal (exit 2), so a sampler asking for a field no GPU has is caught.

   table.py --query-gpu=F1,F2,... --format=csv,noheader,nounits
   table.py --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure --format=...

$CVS_STAND_IN_TABLE: {"idle": {field: value}, "load": {field: value},
                      "gpus": [{"phase": {"load": {field: value}}, field: value, ...}, ...]}
(a GPU's own fields override the phase's; a GPU's "phase" entries override both).
"""
import json
import os
import sys


def value(table, gpu, phase, field):
    for source in (gpu.get("phase", {}).get(phase, {}), gpu, table.get(phase, {})):
        if field in source:
            return source[field]
    raise KeyError(field)


def main(argv):
    table = json.load(open(os.environ["CVS_STAND_IN_TABLE"]))
    phase = os.environ.get("CVS_STAND_IN_PHASE", "load")
    query = next((a for a in argv if a.startswith("--query-")), "")
    kind, _, fields = query.partition("=")
    fields = fields.split(",")
    if kind == "--query-remapped-rows":
        fields = ["pci.bus_id" if f == "gpu_bus_id" else f for f in fields]
    elif kind != "--query-gpu":
        print(f"stand-in: {query or argv} is not answered here", file=sys.stderr)
        return 2
    for i, gpu in enumerate(table["gpus"]):
        row = []
        for f in fields:
            try:
                row.append(str(i) if f == "index" else str(value(table, gpu, phase, f)))
            except KeyError:
                print(f'Field "{f}" is not a valid field to query.', file=sys.stderr)
                return 2
        print(", ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
