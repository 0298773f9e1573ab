"""What every Python adapter of ckptspec shares (standard library only): the request loop of the
adapter protocol (docs/PROTOCOL.md, version 1 revision 6) over stdin and stdout or, in connect mode,
a socket to the coordinator (ckptspec_connect), its error type, the protocol's entries, and the
Megatron-style checkpoint directory that the adapters write:

  <directory>/latest_checkpointed_iteration.txt   the tracker: rank 0, once every rank is done
  <directory>/iter_0000010/                       one iteration's checkpoint

An adapter imports it by path, from the directory beside its own:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
"""
import faulthandler
import json
import multiprocessing
import os
import re
import signal
import sys
import traceback
from pathlib import Path

from ckptspec_connect import ConnectError, Deadline, connect, connect_mode, split_address

PROTOCOL = 1
TRACKER = "latest_checkpointed_iteration.txt"
# Megatron's StrictHandling values, as the protocol's load request names them.
STRICT_MODES = ("assume_ok_unexpected", "log_unexpected", "log_all", "raise_unexpected",
                "raise_all", "return_unexpected", "return_all", "ignore_all")
GROUP_NAME = re.compile(r"[A-Za-z0-9_-]+")


class AdapterError(Exception):
    """An error with one of the protocol's Status codes (NotFound, InvalidArgument, ...)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def plain_error(e):
    """AdapterError as it is; anything else an IOError naming its type."""
    if isinstance(e, AdapterError):
        return e
    return AdapterError("IOError", f"{type(e).__name__}: {e}")


def attempt(fn, to_error=plain_error):
    """(fn(), None), or (None, the exception as an AdapterError). Every rank of a collective step
    must reach the step's agreement, so nothing escapes."""
    try:
        return fn(), None
    except Exception as e:
        return None, to_error(e)


# ---------------------------------------------------------------------------------------------
# Entries (docs/PROTOCOL.md, "Entries")


def is_main(replica_id):
    return all(r == 0 for r in replica_id)


def box_of(t):
    """(offset, shape) of a tensor entry's chunk in the global tensor (prepended axes are 1)."""
    p = t.get("prepend_axis_num", 0) or 0
    return list(t["global_offset"]), [1] * p + list(t["local_shape"])


def unique_key(o):
    """Megatron's unique key of an object shard: `{key}/shard_{offsets}_{shape}`."""
    return (f"{o['key']}/shard_{'.'.join(map(str, o['global_offset']))}"
            f"_{'.'.join(map(str, o['global_shape']))}")


def rank_local_as_shard(o, rank):
    """A rank-local object (global_shape, global_offset and replica_id all []: no sharding
    declared; docs/PROTOCOL.md) as a ShardedObject a Megatron-style backend stores: the key
    `{key}.rank_{rank}` (the rank's own key, as torchtitan keys per-rank loader state), one shard
    (shape [1], offset [0], main replica), so that each rank's value is whole under its own key
    and a load reads back the value of the same rank. (A shard (rank,) of (world,) would leave
    the shards of ranks that hold no such key missing: a module's ranks are not the world. The
    separator is '.': megatron-core's ShardedObject.empty_from_unique_key splits a unique key on
    '/' and takes exactly two parts, so its strict load modes refuse a key holding a '/'.)
    Other objects as they are."""
    if o["global_shape"] or o["global_offset"] or o["replica_id"]:
        return o
    return dict(o, key=f"{o['key']}.rank_{rank}", global_shape=[1], global_offset=[0],
                replica_id=[0])


def read_bytes(path, what):
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise AdapterError("IOError", f"{what}: cannot read {path}: {e.strerror}") from e


class PackedFiles:
    """The packed files of one request (protocol revision 4, capability "packed": an entry with
    "offset" and "length" is that range of a file it shares with the rank's other entries). A
    packed file is read once and kept for the entries after it; a load's packed file is written
    through one descriptor. serve() calls finish() after every request."""

    def __init__(self):
        self.read = {}   # path -> its bytes
        self.write = {}  # path -> an open descriptor

    def finish(self):
        """Closes the written files and forgets the read ones; the first error is raised."""
        fds, self.write, self.read = list(self.write.values()), {}, {}
        error = None
        for fd in fds:
            try:
                os.close(fd)
            except OSError as e:
                error = error or e
        if error is not None:
            raise AdapterError("IOError", f"closing a packed file: {error.strerror}")


PACKED = PackedFiles()


def entry_bytes(entry, what):
    """An entry's bytes: its whole "file", or (packed) its "length" bytes at "offset" of it."""
    path = entry["file"]
    if "offset" not in entry:
        return read_bytes(path, what)
    data = PACKED.read.get(path)
    if data is None:
        data = PACKED.read[path] = read_bytes(path, what)
    begin, end = entry["offset"], entry["offset"] + entry["length"]
    if end > len(data):
        raise AdapterError("InvalidArgument", f"{what}: bytes [{begin}, {end}) asked of {path}, "
                                              f"which holds {len(data)}")
    return data[begin:end]


def write_entry(entry, data):
    """Writes a loaded entry's bytes: its whole "file", or (packed) at its "offset" of it."""
    path = entry["file"]
    if "offset" not in entry:
        Path(path).write_bytes(data)
        return
    fd = PACKED.write.get(path)
    if fd is None:
        fd = PACKED.write[path] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    view, at = memoryview(data).cast("B"), entry["offset"]
    while view:
        n = os.pwrite(fd, view, at)
        view, at = view[n:], at + n


# ---------------------------------------------------------------------------------------------
# The checkpoint directory


def iter_dir(directory, iteration):
    return Path(directory) / f"iter_{iteration:07d}"


def tracked_iteration(directory):
    """The iteration the tracker names, None without a tracker; Corruption when unreadable."""
    path = Path(directory) / TRACKER
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    try:
        return int(text)
    except ValueError as e:
        raise AdapterError("Corruption", f"{path}: '{text[:40]}' is not an iteration") from e


def refuse_overwrite(directory, iteration):
    """FailedPrecondition when the tracker names `iteration`: a save never overwrites the
    checkpoint a resume would read."""
    if tracked_iteration(directory) == iteration:
        raise AdapterError("FailedPrecondition", f"{iter_dir(directory, iteration)} is the "
                                                 "checkpoint the tracker names; refusing to "
                                                 "overwrite it")


def iteration_to_load(directory, iteration):
    """(iteration, its directory): the requested one, or the tracker's; NotFound without one, or
    when the tracker names an iteration that has no directory (the error names the tracker)."""
    if iteration is None:
        iteration = tracked_iteration(directory)
        if iteration is None:
            raise AdapterError("NotFound", f"no checkpoint under {directory}: no {TRACKER}")
        if not iter_dir(directory, iteration).is_dir():
            raise AdapterError("NotFound", f"{Path(directory) / TRACKER} names iteration "
                                           f"{iteration}, which has no directory "
                                           f"{iter_dir(directory, iteration).name}")
    return int(iteration), iter_dir(directory, int(iteration))


def write_durably(path, data):
    """Writes `data` (str or bytes) to `path` and fsyncs the file, not its directory: the harness's
    own files of a checkpoint (its common state, its metadata) are durable once written, so that
    the crash states of a save judge what the third party wrote. Whether their names are durable is
    left to whoever makes the directory durable (the third party, or no one)."""
    with open(path, "w" if isinstance(data, str) else "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def fsync_directory(path):
    """fsync(2) of a directory: the names created, renamed or removed in it become durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_durable(checkpoint, directory):
    """fsync(2) of every file and directory under `checkpoint` (one iteration's), then of
    `directory` (the root holding it and the tracker): what a checkpointer that wants its save to
    survive a power loss does before the tracker names it. The adapters' --make-durable flag
    (docs/FINDINGS.md F27's control)."""
    for here, dirs, files in os.walk(checkpoint):
        for name in files:
            fd = os.open(os.path.join(here, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(here)
    fsync_directory(directory)


def add_make_durable_flag(parser, writer, finding):
    """--make-durable: make_durable before the tracker, the control of `finding` (docs/FINDINGS.md),
    which names the fsyncs that `writer` (the third party writing the checkpoint) leaves out."""
    parser.add_argument("--make-durable", action="store_true",
                        help="fsync every file and directory of the checkpoint, and the root, "
                             f"after {writer}'s writes and before the tracker: the fsyncs "
                             f"{writer} leaves out (docs/FINDINGS.md {finding}'s control)")


def write_tracker(directory, iteration):
    """Names `iteration` in the tracker, atomically and durably: the new text is written to a
    temporary file and fsynced, renamed over the old tracker, and the directory fsynced. The
    tracker is the harness's part of the adapter, not the third party's: it is made durable so
    that the crash states of a save (docs/ADAPTERS.md, "Crashes and storage faults") judge what the
    third party wrote, not a tracker that a power loss could empty."""
    tmp = Path(directory) / (TRACKER + ".tmp")
    write_durably(tmp, f"{iteration}\n")
    os.replace(tmp, Path(directory) / TRACKER)
    fsync_directory(directory)


# ---------------------------------------------------------------------------------------------
# The request loop


def end_children(timeout_s=5):
    """Terminates and reaps every live multiprocessing child of this process (e.g. megatron-core's
    write-results queue, a multiprocessing Manager started on the first save); one still alive
    `timeout_s` after SIGTERM is killed. Python's exit handlers would shut such a child down; an
    adapter that leaves with os._exit skips them, and the orphan would keep the harness's pipes
    open."""
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    end = Deadline(timeout_s)
    for child in children:
        child.join(end.left())
    for child in children:
        if child.is_alive():
            child.kill()
            child.join(1)


def group_of(req):
    """(rank, world_size, group) of a hello that carries "group" (revision 6): world_size an
    integer >= 1, rank one of 0..world_size-1, group {"name": NAME} or {"name": NAME, "store":
    "HOST:PORT"} with NAME of letters, digits, '-' and '_'. InvalidArgument naming what is
    wrong."""
    rank, world, group = req.get("rank"), req.get("world_size"), req["group"]

    def whole(x):
        return isinstance(x, int) and not isinstance(x, bool)

    if not whole(world) or world < 1 or not whole(rank) or not 0 <= rank < world:
        raise AdapterError("InvalidArgument", f"hello: rank {rank!r} of world_size {world!r} is "
                                              "not a rank 0..world_size-1 of a world_size >= 1")
    if not isinstance(group, dict) or not isinstance(group.get("name"), str) \
            or not GROUP_NAME.fullmatch(group["name"]):
        raise AdapterError("InvalidArgument", f"hello: group {group!r} has no \"name\" of "
                                              "letters, digits, '-' and '_'")
    if "store" in group:
        try:
            split_address(group["store"], "hello: the group's \"store\"")
        except ValueError as e:
            raise AdapterError("InvalidArgument", str(e)) from e
    return rank, world, dict(group)


class Session:
    """Who this process is to the harness: the rank its replies carry, and when a hello may move
    it to another group (revision 6, capability "regroup", declared only with "reset"). An
    adapter that declares regroup has `regroup(rank, world_size, group)` called on every hello
    that carries "group" -- the first, and one sent again after a reset that replied ok (no
    other request in between) -- and replies as the hello's rank from then on. A hello without
    "group" (an older harness), or to an adapter that does not regroup, keeps the process's
    rank (at first RANK), and one naming another rank is refused."""

    def __init__(self, rank, capabilities, regroup):
        if capabilities.get("regroup") and (regroup is None or not capabilities.get("reset")):
            raise ValueError("capability regroup needs reset and a regroup function")
        self.rank = rank
        self.regroup = regroup if capabilities.get("regroup") else None
        self.greeted = False  # a hello has been answered ok
        self.fresh = False    # ... and since it, or since a reset answered ok, nothing else came

    def hello(self, req):
        if "group" in req and self.regroup is not None:
            rank, world, group = group_of(req)
            if self.greeted and not self.fresh:
                raise AdapterError("FailedPrecondition", "hello with a group comes first, or "
                                                         "right after a reset that replied ok")
            self.regroup(rank, world, group)
            self.rank = rank
        elif req.get("rank", self.rank) != self.rank:
            raise AdapterError("InvalidArgument", f"hello names rank {req['rank']!r}; this "
                                                  f"process is rank {self.rank} and does not "
                                                  "regroup")
        self.greeted = True

    def served(self, op, ok):
        """Called after each request with whether it replied ok."""
        self.fresh = ok and op in ("hello", "reset")


class Stdio:
    """Requests from stdin, replies to the real stdout (the process's stdout is stderr)."""

    def __init__(self, out):
        self.out = out

    def __iter__(self):
        return iter(sys.stdin)

    def send(self, text):
        self.out.write(text)
        self.out.flush()
        return True


class NoWatch:
    def serving(self, op):
        pass

    def idle(self):
        pass


def coordinator_hung_up(op):
    """A connected rank's coordinator closed the connection while the rank served `op` (it may
    be blocked in a collective whose peer is gone): ends the multiprocessing children and the
    process now, with exit status 0, as at the end of the requests: ckptspec ends ranks this way
    (after a fault, or at the end of a run), and a launcher such as torchrun stops every rank
    when one exits with another status."""
    print(f"ckptspec connect: the coordinator closed the connection while this rank served "
          f"'{op}'; exiting", file=sys.stderr)
    sys.stderr.flush()
    end_children(timeout_s=0.5)
    os._exit(0)


def open_channel(out):
    """(channel, watch): in connect mode (CKPTSPEC_COORDINATOR_FILE) the coordinator's socket,
    watched for a hangup during a request; else stdin and `out`. A rank that cannot join its
    coordinator says why on stderr and exits with status 1."""
    if not connect_mode():
        return Stdio(out), NoWatch()
    try:
        connection = connect()
    except ConnectError as e:
        print(f"ckptspec connect: {e}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)  # no finalization: the adapter may have started threads (a store) already
    return connection, connection.watch(coordinator_hung_up)


def serve(rank, adapter, capabilities, ops, to_error=plain_error, on_unexpected=None,
          hello=None, regroup=None):
    """Answers requests, one JSON line each, with one reply line, until shutdown or the end of
    the requests: from stdin to stdout, or in connect mode (CKPTSPEC_COORDINATOR_FILE:
    ckptspec_connect) over a socket to the coordinator. `rank` is the process's rank as started
    (RANK); `ops` maps each op but hello and shutdown to a function of the request returning the
    reply's fields ("reset" only when the adapter declares it); `hello`, when given, is a
    function of the hello request returning the reply's fields beyond protocol, adapter and
    capabilities (a framework adapter's "framework" member); `regroup(rank, world_size, group)`
    is needed when capabilities declare "regroup" (see Session). An
    exception becomes the reply's error (to_error); one that is not an AdapterError is a defect of
    the adapter or its third party: its traceback goes to stderr and on_unexpected(e) is told.
    Whatever else the process prints goes to stderr: stdout carries replies only. SIGUSR1 makes
    the process print every thread's Python stack to stderr and go on (for a rank that hangs).
    At shutdown, after the reply, the multiprocessing children the third party started are ended
    (end_children), so the caller may leave without Python's exit handlers. A connected rank
    whose coordinator closes the connection during a request ends them and exits at once (status
    0: coordinator_hung_up).
    Returns "shutdown" or "eof" (also when a reply can no longer be sent)."""
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    session = Session(rank, capabilities, regroup)
    out = sys.stdout
    sys.stdout = sys.stderr
    channel, watch = open_channel(out)
    for line in channel:
        req, ok = {}, True
        try:
            req = json.loads(line)
            op = req["op"]
            watch.serving(op)
            reply = {"id": req["id"], "rank": session.rank, "ok": True}
            if op == "hello":
                if req.get("protocol") != PROTOCOL:
                    raise AdapterError("NotSupported", f"protocol {req.get('protocol')} requested; "
                                                       f"this adapter speaks {PROTOCOL}")
                session.hello(req)
                reply.update(rank=session.rank, protocol=PROTOCOL, adapter=adapter,
                             capabilities=capabilities)
                if hello is not None:
                    reply.update(hello(req))
            elif op == "shutdown":
                watch.idle()
                channel.send(json.dumps(reply) + "\n")
                end_children()
                sys.stderr.flush()
                return "shutdown"
            elif op in ops:
                reply.update(ops[op](req))
            else:
                raise AdapterError("InvalidArgument", f"unknown op '{op}'")
            PACKED.finish()
        except Exception as e:
            attempt(PACKED.finish)
            if not isinstance(e, AdapterError):
                traceback.print_exc(file=sys.stderr)
                if on_unexpected is not None:
                    on_unexpected(e)
            e, ok = to_error(e), False
            reply = {"id": req.get("id") if isinstance(req, dict) else None, "rank": session.rank,
                     "ok": False, "error": {"code": e.code, "message": str(e)}}
        session.served(req.get("op") if isinstance(req, dict) else None, ok)
        watch.idle()
        if not channel.send(json.dumps(reply) + "\n"):
            return "eof"
    return "eof"
