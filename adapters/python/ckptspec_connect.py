"""Connect mode of the adapter protocol (revision 6, standard library only): a rank started by an
outside launcher (torchrun, srun, ...) dials in to ckptspec over TCP instead of being started by
it over pipes. ckptspec_adapter_kit.serve() uses it when the environment names a coordinator file:

  CKPTSPEC_COORDINATOR_FILE=PATH   one JSON object {"address": "HOST:PORT", "token": "<hex>"},
                                   written by ckptspec; the rank waits for it to exist
  CKPTSPEC_CONNECT_TIMEOUT=S       how long the rank waits for the file and for the coordinator
                                   to accept its connection (seconds, default 600)

The rank connects to the address and sends one line

  {"op": "connect", "protocol": 1, "token": TOKEN, "rank": RANK, "world_size": WORLD_SIZE,
   "host": HOSTNAME, "pid": PID}

(RANK and WORLD_SIZE of its start environment: the launcher's), reads one reply line, {"ok": true}
or {"ok": false, "error": {"code": C, "message": M}}, and then reads requests from the socket and
writes its replies to it, one JSON line each, as over stdin and stdout. Every failure to join is a
ConnectError whose text says what went wrong; the caller prints it and exits with status 1.
"""
import json
import os
import select
import socket
import threading
import time
from pathlib import Path

COORDINATOR_FILE = "CKPTSPEC_COORDINATOR_FILE"
CONNECT_TIMEOUT = "CKPTSPEC_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT_S = 600
CONNECT_PROTOCOL = 1
POLL_S = 0.2  # how often the file and a refused connection are tried again
SETTLE_S = 2  # how long a file that does not parse is read again (its writer may be mid-write)
HANGUP = select.POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL


class ConnectError(Exception):
    """Why a rank could not join its coordinator."""


def connect_mode():
    """Whether this process was told to dial in to a coordinator (CKPTSPEC_COORDINATOR_FILE)."""
    return bool(os.environ.get(COORDINATOR_FILE))


def connect_timeout_s():
    """CKPTSPEC_CONNECT_TIMEOUT in seconds (default 600); ConnectError when it is not a number
    >= 0."""
    text = os.environ.get(CONNECT_TIMEOUT, str(DEFAULT_CONNECT_TIMEOUT_S))
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConnectError(f"{CONNECT_TIMEOUT}={text!r} is not a number of seconds >= 0")
    return value


def split_address(text, what):
    """(host, port) of "HOST:PORT" (an IPv6 host in brackets, "[::1]:PORT"); ValueError naming
    `what` when the text is not one."""
    host, sep, port = text.rpartition(":") if isinstance(text, str) else ("", "", "")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{what} {text!r} is not HOST:PORT (a port 1..65535)")
    return host, int(port)


class Deadline:
    """A point `seconds` from now on the monotonic clock."""

    def __init__(self, seconds):
        self.seconds, self.end = seconds, time.monotonic() + seconds

    def left(self):
        return max(0.0, self.end - time.monotonic())

    def passed(self):
        return time.monotonic() >= self.end


def parse_coordinator_file(text, path):
    """((host, port), token) of a coordinator file's text; ConnectError naming what is wrong."""
    try:
        found = json.loads(text)
    except ValueError as e:
        raise ConnectError(f"the coordinator file {path} is not JSON: {e}") from e
    if not isinstance(found, dict) or not isinstance(found.get("token"), str) \
            or not found["token"]:
        raise ConnectError(f"the coordinator file {path} holds no \"token\" string: "
                           f"{text[:200]!r}")
    try:
        return split_address(found.get("address"), "its \"address\""), found["token"]
    except ValueError as e:
        raise ConnectError(f"the coordinator file {path}: {e}") from e


def read_coordinator_file(path, deadline):
    """((host, port), token) from the file at `path` once it exists, looked for every 0.2 s until
    the deadline. A file that does not parse is read again for up to 2 s, then refused."""
    settled = None
    while True:
        try:
            text = Path(path).read_text()
        except FileNotFoundError:
            if deadline.passed():
                raise ConnectError(f"the coordinator file {path} does not exist after "
                                   f"{deadline.seconds:g} s ({CONNECT_TIMEOUT})") from None
            time.sleep(POLL_S)
            continue
        except (OSError, UnicodeDecodeError) as e:
            raise ConnectError(f"cannot read the coordinator file {path}: {e}") from e
        try:
            return parse_coordinator_file(text, path)
        except ConnectError:
            settled = settled or Deadline(min(SETTLE_S, deadline.left()))
            if settled.passed():
                raise
            time.sleep(POLL_S)


def dial(host, port, deadline):
    """A socket connected to host:port; a refused connection is tried again every 0.2 s until
    the deadline."""
    while True:
        try:
            return socket.create_connection((host, port), timeout=max(deadline.left(), POLL_S))
        except ConnectionRefusedError:
            if deadline.passed():
                raise ConnectError(f"the coordinator at {host}:{port} refused the connection "
                                   f"for {deadline.seconds:g} s ({CONNECT_TIMEOUT})") from None
            time.sleep(POLL_S)
        except OSError as e:
            raise ConnectError(f"cannot connect to the coordinator at {host}:{port}: {e}") from e


def launch_identity():
    """(RANK, WORLD_SIZE) of the start environment (the launcher's), as integers."""
    try:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except (KeyError, ValueError) as e:
        raise ConnectError(f"RANK and WORLD_SIZE must be integers in the environment of a rank "
                           f"that dials in (RANK={os.environ.get('RANK')!r}, "
                           f"WORLD_SIZE={os.environ.get('WORLD_SIZE')!r})") from e


def handshake(sock, requests, token, where, deadline):
    """Sends the connect line and reads the coordinator's reply (until the deadline, at least
    a few seconds); ConnectError unless it is {"ok": true}."""
    rank, world_size = launch_identity()
    hello = {"op": "connect", "protocol": CONNECT_PROTOCOL, "token": token, "rank": rank,
             "world_size": world_size, "host": socket.gethostname(), "pid": os.getpid()}
    sock.settimeout(max(deadline.left(), 5.0))
    try:
        sock.sendall((json.dumps(hello) + "\n").encode())
        line = requests.readline()
    except OSError as e:
        raise ConnectError(f"the connection to the coordinator at {where} failed during "
                           f"connect: {e}") from e
    sock.settimeout(None)
    if not line:
        raise ConnectError(f"the coordinator at {where} closed the connection without replying "
                           "to connect")
    try:
        reply = json.loads(line)
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise ConnectError(f"the coordinator at {where} replied to connect with "
                           f"{line[:200]!r}, not {{\"ok\": ...}}")
    if not reply["ok"]:
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        raise ConnectError(f"the coordinator at {where} refused this rank "
                           f"({error.get('code', 'no code')}): "
                           f"{error.get('message', 'no message')}")


class Connection:
    """A rank's connection to its coordinator: request lines in (iterating it; it ends at the
    end of the stream), reply lines out (send)."""

    def __init__(self, sock, requests):
        self.sock, self.requests = sock, requests

    def __iter__(self):
        return iter(self.requests)

    def send(self, text):
        """Writes `text`; False when the coordinator is gone (the caller ends as at eof)."""
        try:
            self.sock.sendall(text.encode())
            return True
        except OSError:
            return False

    def watch(self, on_hangup):
        """A HangupWatch over this connection."""
        return HangupWatch(self.sock.fileno(), on_hangup)


def connect():
    """The Connection to the coordinator that CKPTSPEC_COORDINATOR_FILE names; ConnectError
    naming what failed (the file missing after the deadline, unreadable or malformed, the
    connection refused until the deadline, the token or the rank refused)."""
    path = os.environ[COORDINATOR_FILE]
    deadline = Deadline(connect_timeout_s())
    (host, port), token = read_coordinator_file(path, deadline)
    sock = dial(host, port, deadline)
    requests = sock.makefile("rb")
    try:
        handshake(sock, requests, token, f"{host}:{port}", deadline)
    except ConnectError:
        requests.close()
        sock.close()
        raise
    return Connection(sock, requests)


class HangupWatch:
    """Ends the process when the coordinator hangs up while a request is being served: a daemon
    thread polls the socket for POLLRDHUP, POLLHUP and POLLERR (the peer shut down), never for
    data and never reading it (a request being served may leave the socket without data for a
    long time), and calls on_hangup(op) -- which must end the process -- when one comes while
    `serving(op)` is in force. A hangup between requests is the end of the stream, which the
    request loop reads; the watch then waits for the next request, if any."""

    def __init__(self, fd, on_hangup):
        self.fd, self.on_hangup = fd, on_hangup
        self.busy = threading.Event()
        self.op = None
        threading.Thread(target=self.run, name="ckptspec-hangup-watch", daemon=True).start()

    def serving(self, op):
        self.op = op
        self.busy.set()

    def idle(self):
        """Called before a reply is written: a coordinator that has its reply may hang up."""
        self.busy.clear()

    def run(self):
        poller = select.poll()
        poller.register(self.fd, select.POLLRDHUP)  # POLLHUP and POLLERR come unasked
        while True:
            self.busy.wait()
            events = poller.poll()
            if any(mask & HANGUP for _, mask in events) and self.busy.is_set():
                self.on_hangup(self.op)
