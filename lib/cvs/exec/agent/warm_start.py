# warm_start NAME TRAINER_PID_FILE PID_OUT ENDED_CODE ENDED_LINE -- ARGV...: runs ARGV (python SCRIPT ARGS: a training;
# or python -c CODE ARGS: a probe) as a process forked from the warm trainer @NAME
# (warm_trainer.py), with this process's standard input and output, directory and environment,
# and exits with its exit code; the training's pid is
# written to PID_OUT (the telemetry sampler's). Stands for the training where it was started:
# TERM, INT, HUP, QUIT, USR1 and USR2 are passed on; killed, it takes the training with it. While
# the trainer still imports (its pid alive, no socket yet), waits; when it is gone, or refuses
# the request, execs ARGV itself (a cold start) and says why in one line. Should the trainer end
# while the training runs (killed: the OOM killer picks the process holding MaxText imported),
# the training runs on alone and leaves its exit code in PID_OUT.exit; this process, when the
# training ends, prints ENDED_LINE with that code and exits ENDED_CODE (node_agent.hpp's numbers).
import json
import os
import signal
import socket
import struct
import sys
import time

NAME, TRAINER_PID_FILE, PID_OUT, ENDED_CODE, ENDED_LINE = sys.argv[1:6]
ARGV = sys.argv[7:]
EXIT_FILE = PID_OUT + ".exit" if PID_OUT else ""


def cold(why):
    print(f"cvs-warm: cold start: {why}", flush=True)
    os.execvp(ARGV[0], ARGV)


def trainer_alive():
    try:
        with open(TRAINER_PID_FILE) as f:
            pid = int(f.read().strip() or 0)
        with open(f"/proc/{pid}/status") as f:
            return pid > 1 and not any(l.startswith("State:\tZ") for l in f)
    except (OSError, ValueError):
        return False


def connect():
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect("\0" + NAME)
            return s
        except OSError:
            s.close()
        if not trainer_alive():
            cold("the warm trainer is not running")
        time.sleep(0.05)


s = connect()
req = json.dumps({"argv": ARGV, "env": dict(os.environ), "cwd": os.getcwd(), "exit_file": EXIT_FILE}).encode()
answer = s.makefile("rb")
try:
    socket.send_fds(s, [struct.pack("!I", len(req))], [0, 1, 2])
    s.sendall(req)
    line = answer.readline().decode().strip()
except OSError as e:
    line = f"refused {e}"
if not line.startswith("pid "):
    s.close()
    cold(line[len("refused "):] if line.startswith("refused ") else "the warm trainer did not answer")
pid = int(line.split()[1])
what = "python -c" if ARGV[1:2] == ["-c"] else "training"
print(f"cvs-warm: {what} in process {pid}, forked from the warm trainer", flush=True)
if PID_OUT:
    with open(PID_OUT + ".tmp", "w") as f:
        f.write(f"{pid}\n")
    os.replace(PID_OUT + ".tmp", PID_OUT)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(sig, lambda n, _: s.send(bytes([n])))
line = answer.readline().decode().strip()
if line.startswith("exit "):
    sys.exit(int(line.split()[1]))
# The trainer is gone; the training held this connection open until it ended.
try:
    with open(EXIT_FILE) as f:
        own = f"the training itself exited with code {int(f.read().strip())}"
except (OSError, ValueError):
    own = "the training left no exit code (killed?)"
print(f"{ENDED_LINE} (process {pid}); {own}", flush=True)
sys.exit(int(ENDED_CODE))
