"""How long MaxText stepped in a certification's runs, read from their training logs alone (the
first step line's start, its own seconds before it, to the last step line, on the log's own glog
clock), the same way for any build. Used by the certify benches.

stepping(log) -> seconds; tier_stepping_minutes(tier_dir) -> minutes over every training.log under
it (a certificate's tiers[].dir).
"""
import glob
import re

HEAD = re.compile(r"[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?)")
DAYS = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]


def at(line):
    m = HEAD.search(line[:64])
    if not m:
        return None
    mo, d, h, mi, s = m.groups()
    return (DAYS[int(mo) - 1] + int(d) - 1) * 86400 + int(h) * 3600 + int(mi) * 60 + float(s)


def stepping(log):  # seconds from the first step's start to the last step line
    first = last = None
    for line in open(log, errors="replace"):
        if "completed step: " not in line:
            continue
        t = at(line)
        if t is None:
            continue
        if first is None:
            sec = re.search(r"seconds: ([0-9.]+)", line)
            first = t - (float(sec.group(1)) if sec else 0)
        last = t
    return 0 if first is None else max(0, last - first)


def tier_stepping_minutes(tier_dir):
    if not tier_dir:
        return 0.0
    logs = glob.glob(f"{tier_dir}/**/runs/**/training.log", recursive=True)
    return sum(stepping(log) for log in logs) / 60
