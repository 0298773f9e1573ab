"""Runs `ckptspec run --adapter-launched` against an adapter whose ranks torchrun starts as two
"nodes" on this host (c10d rendezvous on localhost, gloo), the way a cluster would
(docs/SCALE.md), and checks what must hold:

  default       ckptspec exits 0 (every outcome is what the expectations file says), each
                torchrun exits 0, and nothing is left behind: no process of either node, no
                directory under the shared directory.
  --lose-node   once the ranks are connected and cases run, every process of the second node is
                killed (SIGKILL: its launcher, its ranks and their children, as when a host dies);
                ckptspec must end with a verdict naming a disconnected launch rank, the first
                node's ranks must end within 30 s, and nothing is left behind. (The first node's
                torchrun then waits at its exit barrier for the dead node, up to its own timeout of
                minutes, and does not answer SIGTERM there: the test kills it.)

Run it with the adapter's environment (its runner replaces @PYTHON@):
  launched_test.py --ckptspec BUILD/cli/ckptspec --adapter "ADAPTER.py [FLAGS]" \\
      [--expectations FILE] [--properties P1,P2] [--budget N] [--lose-node]
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ckptspec_protocol_test_driver import free_port

MARK = "CKPTSPEC_LAUNCHED_TEST"  # in every launched process's environment: "<dir>:<node>"


def marked_pids(mark, ranks_only=False):
    """The pids of live processes whose environment holds MARK=<mark...> (and RANK, when
    ranks_only: a launcher's workers, not the launcher)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(f"{MARK}={mark}".encode()) for e in environ):
            if not ranks_only or any(e.startswith(b"RANK=") for e in environ):
                pids.append(int(entry.name))
    return pids


def kill_marked(mark):
    for pid in marked_pids(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_gone(mark, timeout_s, ranks_only=False):
    """True once no process of `mark` is left (zombies of our own children are reaped by
    wait())."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not marked_pids(mark, ranks_only):
            return True
        time.sleep(0.5)
    return not marked_pids(mark, ranks_only)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ckptspec", required=True)
    p.add_argument("--adapter", required=True, help="the adapter script and its flags")
    p.add_argument("--expectations")
    p.add_argument("--properties")
    p.add_argument("--budget", default="1")
    p.add_argument("--adapter-timeout", help="ckptspec's --adapter-timeout")
    p.add_argument("--ranks-per-node", type=int, default=2)
    p.add_argument("--lose-node", action="store_true")
    p.add_argument("--timeout", type=float, default=900, help="seconds for the whole run")
    args = p.parse_args()

    work = Path(tempfile.mkdtemp(prefix="ckptspec-launched-"))
    shared = work / "shared"
    shared.mkdir()
    coordinator_file = work / "coordinator.json"
    ranks = 2 * args.ranks_per_node
    command = [args.ckptspec, "run", "--quiet", "--adapter-launched", str(ranks),
               "--adapter-coordinator-file", str(coordinator_file),
               "--adapter-shared-dir", str(shared), "--adapter-connect-timeout", "300",
               "--seed", "1", "--budget", args.budget]
    if args.expectations:
        command += ["--expectations", args.expectations]
    if args.properties:
        command += ["--properties", args.properties]
    if args.adapter_timeout:
        command += ["--adapter-timeout", args.adapter_timeout]
    log = open(work / "ckptspec.log", "w+")
    ckptspec = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    port = free_port()
    nodes = []
    for node in range(2):
        env = dict(os.environ, CKPTSPEC_COORDINATOR_FILE=str(coordinator_file),
                   **{MARK: f"{work}:{node}"})
        launcher = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                    "--nproc-per-node", str(args.ranks_per_node), "--rdzv-backend", "c10d",
                    "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", f"ckptspec-{port}",
                    "--max-restarts", "0"] + shlex.split(args.adapter)
        out = open(work / f"node{node}.log", "w+")
        nodes.append((subprocess.Popen(launcher, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True), out))
        if node == 0:
            time.sleep(3)  # the first node hosts the rendezvous store: the second one dies

    failures = []
    deadline = time.monotonic() + args.timeout
    if args.lose_node:
        while not coordinator_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)  # written when ckptspec listens
        while coordinator_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)  # removed once every rank connected
        time.sleep(8)  # cases run
        print("launched_test: killing every process of node 1", flush=True)
        kill_marked(f"{work}:1")
    try:
        rc = ckptspec.wait(max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        ckptspec.kill()
        rc = ckptspec.wait()
        failures.append(f"ckptspec did not end within {args.timeout} s")
    log.seek(0)
    output = log.read()
    print(output)
    if args.lose_node:
        if rc == 0:
            failures.append("ckptspec exited 0 although a node was lost")
        if "disconnected from the coordinator" not in output or "launch rank" not in output:
            failures.append("no verdict names a disconnected launch rank")
    elif rc != 0:
        failures.append(f"ckptspec exited {rc}")
    if args.lose_node:
        if not wait_gone(f"{work}:0", 30, ranks_only=True):
            failures.append("node 0's ranks still ran 30 s after ckptspec ended")
        nodes[0][0].kill()  # it waits at its exit barrier for the dead node, in a blocking call
    for node, (launcher, out) in enumerate(nodes):
        try:
            launcher_rc = launcher.wait(120)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher_rc = launcher.wait()
            failures.append(f"node {node}'s torchrun did not end within 120 s of ckptspec")
        out.seek(0)
        tail = out.read()[-3000:]
        if not args.lose_node:
            if launcher_rc != 0:
                failures.append(f"node {node}'s torchrun exited {launcher_rc}:\n{tail}")
    if not wait_gone(str(work), 30):
        failures.append(f"processes left behind: {marked_pids(str(work))}")
        kill_marked(str(work))
    left = sorted(x.name for x in shared.iterdir())
    if left:
        failures.append(f"left under the shared directory: {left}")
    for failure in failures:
        print(f"launched_test: FAILED: {failure}", file=sys.stderr)
    if not failures:
        print("launched_test: passed")
        subprocess.run(["rm", "-rf", str(work)], check=False)
    else:
        print(f"launched_test: logs kept in {work}", file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
