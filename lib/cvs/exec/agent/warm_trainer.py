# warm_trainer NAME SCRIPT IDLE_S [PER_TRAINING]: the warm trainer of one node (python -c, the
# training's own python and environment), for one session or, named by a scope, for every session
# of a certification on that node. It runs SCRIPT's imports once (MaxText, JAX, Flax: about
# 4 s on a CPU, more on a GPU node), then serves @NAME (an abstract unix socket, this user only):
# each request (warm_start.py) is one training, forked from here with the requester's standard
# input and output, directory, environment and argv, and run as `python SCRIPT ARGS` would
# (runpy, __main__), or `python -c CODE ARGS` (the setup stage's JAX probe: the imports already
# done): a process of its own, its exit code sent back; it ends as the interpreter
# would (threads joined, exit functions run, output flushed) but skips the module teardown. A
# request whose python, script or environment is not the one preloaded is refused (the requester
# starts cold), but for PER_TRAINING (comma-separated names: the rank, the node count, the
# coordinator, which MaxText and JAX read when the training initialises, not at import): those
# may differ and are the request's in the training. No JAX
# backend is initialised here (a fork after that is unsafe): each training initialises its own.
# Ends after IDLE_S seconds without a training, or with its session (the launcher's teardown).
# Each training also leaves its exit code in the request's exit_file, for its warm start to read
# should this trainer end (be killed) before it could send the code.
import atexit
import builtins
import json
import os
import runpy
import select
import shutil
import signal
import socket
import struct
import sys
import threading
import time
import types
import warnings

NAME, SCRIPT, IDLE_S = sys.argv[1], os.path.abspath(sys.argv[2]), float(sys.argv[3])
PER_TRAINING = {k for k in (sys.argv[4] if len(sys.argv) > 4 else "").split(",") if k}
IGNORED_ENV = {"_", "SHLVL", "PWD", "OLDPWD", "SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY"}
started = time.monotonic()
env0 = dict(os.environ)  # before the imports: some of them set variables of their own
sys.argv = [SCRIPT]
sys.path[0] = os.path.dirname(SCRIPT)
runpy.run_path(SCRIPT, run_name="cvs_warm_preload")
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\0" + NAME)
server.listen(64)
print(f"cvs-warm: {SCRIPT} imported in {time.monotonic() - started:.1f} s; serving @{NAME}", flush=True)
running = {}
EXIT_FILE = ""  # the training's, in a forked training


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError("the requester closed the connection")
        data += chunk
    return data


def refusal(req):
    python = req["argv"][0]
    if os.sep not in python:
        python = shutil.which(python, path=req["env"].get("PATH")) or python
    if os.path.abspath(python) != os.path.abspath(sys.executable):
        return f"python {req['argv'][0]} is not the warm trainer's {sys.executable}"
    if req["argv"][1:2] == ["-c"]:
        if len(req["argv"]) < 3:
            return "-c without its code"
    elif len(req["argv"]) < 2 or os.path.abspath(req["argv"][1]) != SCRIPT:
        return f"the script is not the warm trainer's {SCRIPT}"
    env = {k: v for k, v in req["env"].items() if k not in IGNORED_ENV | PER_TRAINING}
    mine = {k: v for k, v in env0.items() if k not in IGNORED_ENV | PER_TRAINING}
    differ = sorted(k for k in set(env) | set(mine) if env.get(k) != mine.get(k))
    if differ:
        return "the environment differs from the warm trainer's in " + ", ".join(differ)
    return ""


def watch(conn):
    # The requester relays signals as one byte each; its end closing means it was killed.
    while True:
        try:
            b = conn.recv(1)
        except OSError:
            b = b""
        if not b:
            os.kill(os.getpid(), signal.SIGKILL)
        # To the main thread: its handler runs at once, a sleep or a read of it interrupted.
        signal.pthread_kill(threading.main_thread().ident, b[0])


def become_training(conn, fds, req):
    server.close()
    for c in running.values():
        c.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    os.chdir(req["cwd"])  # the environment is the trainer's: the requester's, as the imports left it
    for k in PER_TRAINING:  # but for what each training says for itself
        if k in req["env"]:
            os.environ[k] = req["env"][k]
        else:
            os.environ.pop(k, None)
    threading.Thread(target=watch, args=(conn,), daemon=True).start()
    global EXIT_FILE
    EXIT_FILE = req.get("exit_file", "")
    try:
        run(req["argv"])
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, int) and e.code is not None:
            print(e.code, file=sys.stderr)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code = 128 + signal.SIGINT
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    end(code)


def run(argv):
    if argv[1] == "-c":  # as `python -c CODE ARGS`: the code is __main__, sys.argv ["-c", ARGS]
        sys.argv = ["-c"] + argv[3:]
        sys.path[0] = ""
        main = types.ModuleType("__main__")
        main.__builtins__ = builtins
        sys.modules["__main__"] = main
        exec(compile(argv[2], "<string>", "exec"), main.__dict__)
    else:
        sys.argv = [SCRIPT] + argv[2:]
        runpy.run_path(SCRIPT, run_name="__main__")


def end(code):
    # As the interpreter ends: its other threads joined, its exit functions run, its output
    # flushed; then out at once, without tearing down every imported module one by one (a
    # second or more of this process's time that nothing reads).
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    if EXIT_FILE:
        try:
            with open(EXIT_FILE + ".tmp", "w") as f:
                f.write(f"{code & 0xFF}\n")
            os.replace(EXIT_FILE + ".tmp", EXIT_FILE)
        except OSError:
            pass
    os._exit(code & 0xFF)


def serve(conn):
    # Returns normally in this process; in the forked training it never returns.
    try:
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != os.getuid():
            conn.sendall(b"refused another user\n")
            conn.close()
            return
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        if len(head) != 4 or len(fds) != 3:
            raise EOFError("a request without its length or its three descriptors")
        req = json.loads(recv_exact(conn, struct.unpack("!I", head)[0]))
        why = refusal(req)
        if why:
            conn.sendall(f"refused {why}\n".encode())
            conn.close()
            for fd in fds:
                os.close(fd)
            return
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        print(f"cvs-warm: a bad request: {e}", flush=True)
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        become_training(conn, fds, req)
    for fd in fds:
        os.close(fd)
    running[pid] = conn
    try:
        conn.sendall(f"pid {pid}\n".encode())
    except OSError:
        pass


def reap():
    while running:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            conn.sendall(f"exit {128 - code if code < 0 else code}\n".encode())
        except OSError:
            pass
        conn.close()


idle_since = time.monotonic()
while True:
    readable, _, _ = select.select([server], [], [], 0.2)
    if readable:
        serve(server.accept()[0])
    reap()
    if running:
        idle_since = time.monotonic()
    elif time.monotonic() - idle_since > IDLE_S:
        print(f"cvs-warm: idle {IDLE_S:.0f} s, ending", flush=True)
        sys.exit(0)
