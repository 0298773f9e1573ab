"""What the torch-based adapters of ckptspec (torch_dcp, megatron_core) share: the protocol's
dtypes as torch dtypes, tensor entries read from and written to the harness's files, the gloo
process group with its agreement step and its rendezvous (revision 6: the group a hello names),
and a storage adapter's flags, capabilities and request loop (serve_engine). The framework
adapters use its gloo group and --pg-timeout. Imported by path beside ckptspec_adapter_kit.
"""
import datetime
import json
import math
import os
import sys
import threading
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from ckptspec_adapter_kit import (AdapterError, attempt, end_children, entry_bytes, iter_dir,
                                  serve, write_entry)
from ckptspec_connect import connect_mode, connect_timeout_s, split_address

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
          "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
          "int32": torch.int32, "int64": torch.int64}


def torch_dtype(name, key):
    if name not in DTYPES:
        raise AdapterError("InvalidArgument", f"tensor '{key}': unknown dtype '{name}'")
    return DTYPES[name]


def read_tensor(t, shape):
    """The entry's tensor of `shape` from its file or range (raw little-endian elements)."""
    dtype = torch_dtype(t["dtype"], t["key"])
    raw = entry_bytes(t, f"tensor '{t['key']}'")
    size = torch.empty((), dtype=dtype).element_size() * math.prod(shape)
    if len(raw) != size:
        raise AdapterError("InvalidArgument", f"tensor '{t['key']}': {len(raw)} bytes in "
                                              f"{t['file']}, local shape {t['local_shape']} "
                                              f"needs {size}")
    if size == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(dtype).reshape(shape)


def update_in_place(x, update, what):
    """Overwrites x's elements in place with the raw bytes of a poll update's file or range
    (protocol revision 3: what a training step writes into a parameter); x keeps its storage."""
    raw = entry_bytes(update, what)
    size = x.element_size() * x.numel()
    if len(raw) != size:
        raise AdapterError("InvalidArgument", f"{what}: {update['file']} holds {len(raw)} bytes, "
                                              f"the tensor has {size}")
    if size:
        x.view(-1).copy_(torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(x.dtype))


def apply_poll_updates(group, updates, inputs, pending, finalize, to_error):
    """The first half of a poll (protocol revision 3), on every rank: each update writes its
    file's bytes into the tensor of its index handed to the checkpointer, in place (`inputs`:
    index -> tensor; an index missing there was not handed over and is not saved: nothing to
    update), and every rank learns of any rank's error. `pending`: whether an async save is
    pending. On an error a pending save is finalized first (the reply carries the update's error,
    not the save's), then the error is raised."""
    def update():
        for u in updates:
            if not pending:
                raise AdapterError("InvalidArgument", f"poll: update of tensor {u['index']} but "
                                                      f"no async save is pending")
            x = inputs.get(int(u["index"]))
            if x is not None:
                update_in_place(x, u, f"poll update of tensor {u['index']}")

    group.ensure()
    _, error = attempt(update, to_error)
    try:
        group.agree(error)
    except AdapterError:
        if pending:
            attempt(finalize, to_error)
        raise


def write_tensor(t, x):
    """x's elements, raw, to the load entry's file or range."""
    x = x.contiguous()
    write_entry(t, b"" if x.numel() == 0 else x.view(-1).view(torch.uint8).numpy().tobytes())


def exception_text(e):
    """`Type: message`; for DCP's CheckpointException (an exception with `failures`) each
    rank's failure, `rank r: Type: message; ...`."""
    if hasattr(e, "failures") and isinstance(e.failures, dict):
        parts = []
        for r, failure in sorted(e.failures.items()):
            exc = failure[0] if isinstance(failure, tuple) else failure
            parts.append(f"rank {r}: {type(exc).__name__}: {exc}")
        return f"{type(e).__name__}: " + ("; ".join(parts) or str(e))
    return f"{type(e).__name__}: {e}"


def seconds(s):
    return datetime.timedelta(seconds=s)


class LauncherStore:
    """The rendezvous store of the launcher that started this process (torchrun, srun, ...): what
    torch's env:// rendezvous gives for the start environment, which nothing here changes
    (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; under torchrun with
    TORCHELASTIC_USE_AGENT_STORE=True the agent's store, else a TCPStore that launch rank 0
    hosts). Made once per process, in a background thread: launch rank 0's store waits until
    every launched rank has connected (TCPStore's wait_for_workers), for up to
    CKPTSPEC_CONNECT_TIMEOUT seconds, while a group's ranks may be some of them only. `get`
    waits for it; FailedPrecondition naming torch's error when it could not be made."""

    def __init__(self):
        self.lock = threading.Lock()
        self.thread = None
        self.store, self.error = None, None

    def start(self):
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self.make, daemon=True,
                                               name="ckptspec-launcher-store")
                self.thread.start()

    def make(self):
        try:
            timeout = seconds(connect_timeout_s())
            self.store, _, _ = next(dist.rendezvous("env://", timeout=timeout))
        except Exception as e:  # ConnectError, torch's DistStoreError, ...
            self.error = f"{type(e).__name__}: {e}"

    def making(self):
        """Whether the store is being made now (its thread is in torch's C++ code)."""
        return self.thread is not None and self.thread.is_alive()

    def get(self):
        self.start()
        self.thread.join()
        if self.store is None:
            raise AdapterError("FailedPrecondition", "the launcher's rendezvous store (env:// "
                                                     "of the start environment) is not "
                                                     f"available: {self.error}")
        return self.store


LAUNCHER_STORE = LauncherStore()


def exit_now_if_store_pending():
    """Ends the process at once (os._exit(0), its multiprocessing children ended first) while the
    launcher's store is still being made (e.g. launch rank 0 waiting for ranks that never came):
    Python's finalization would abort the process in that thread (std::terminate). Otherwise
    returns, for the ordinary exit."""
    if LAUNCHER_STORE.making():
        end_children()
        sys.stderr.flush()
        os._exit(0)


class GlooGroup:
    """The gloo default process group, created at the first operation that needs it (hello stays
    fast), over the rendezvous of the last hello's group (revision 6: `regroup`), or, before any,
    over MASTER_ADDR:MASTER_PORT of the environment. A collective that failed (a timeout, a peer
    gone) leaves the group out of step: `broken` says why, and the adapter then refuses reset so
    that the harness replaces the whole group. `launched`: the process may be regrouped without
    a "store" (an adapter declaring regroup), so in connect mode the launcher's store is started
    at once (see LauncherStore)."""

    def __init__(self, rank, world, timeout_s, launched=False):
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self.broken = None
        self.async_pg = None
        self.rendezvous = None  # the hello's group, {"name": ..., ["store": "HOST:PORT"]}
        self.names = set()  # the names of the groups over the launcher's store so far
        if launched and connect_mode():
            LAUNCHER_STORE.start()

    def regroup(self, rank, world, group):
        """The next collective runs in a new group of `world` ranks as `rank`, over `group`'s
        rendezvous (a hello's "group", checked): a TCPStore at its "store" that the group's rank 0
        hosts, or without one the launcher's store under the prefix "ckptspec/NAME/" (the keys
        of a group formed there stay: InvalidArgument for a NAME this process had before). The
        current process group and every group made from it are destroyed now: nothing of the old
        group reaches the new one."""
        if "store" not in group:
            if group["name"] in self.names:
                raise AdapterError("InvalidArgument", f"group '{group['name']}' was this "
                                                      "process's before: a group over the "
                                                      "launcher's store needs a new name")
            self.names.add(group["name"])
        self.close()
        self.rank, self.world, self.rendezvous = rank, world, dict(group)
        self.broken = None
        if "store" not in group:
            LAUNCHER_STORE.start()

    def store(self):
        """The store of the current group's rendezvous (see regroup)."""
        group = self.rendezvous
        if "store" in group:
            host, port = split_address(group["store"], "the group's store")
            return dist.TCPStore(host, port, self.world, is_master=self.rank == 0,
                                 timeout=seconds(self.timeout_s))
        base = LAUNCHER_STORE.get()
        base.set_timeout(seconds(self.timeout_s))
        return dist.PrefixStore(f"ckptspec/{group['name']}/", base)

    def check(self, e):
        """Records e if it is a failed collective."""
        text = str(e)
        if "gloo" in text or "Connection closed" in text or "timeout" in text.lower():
            self.broken = text[:300]

    def ensure(self):
        if dist.is_initialized():
            return
        if self.rendezvous is None:
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world,
                                    timeout=seconds(self.timeout_s))
            return
        dist.init_process_group("gloo", store=self.store(), rank=self.rank,
                                world_size=self.world, timeout=seconds(self.timeout_s))

    def async_group(self):
        """A group of its own for collectives run in a background thread (DCP's async_save)."""
        if self.async_pg is None:
            self.ensure()
            self.async_pg = dist.new_group(backend="gloo")
        return self.async_pg

    def agree(self, error):
        """Every rank learns whether any rank failed; raises on every rank if one did (this rank's
        own error, else the first failing rank's), so that no rank enters a collective the others
        never reach."""
        gathered = self.gather(None if error is None else [error.code, str(error)])
        if error is not None:
            raise error
        for r, err in enumerate(gathered):
            if err is not None:
                raise AdapterError(err[0], f"rank {r} failed: {err[1]}")

    def all_true(self, flag):
        """Whether flag is true on every rank (a collective: every rank calls it)."""
        return all(self.gather(bool(flag)))

    def gather(self, value):
        """Every rank's picklable `value`, in rank order (a collective: every rank calls it); a
        failed collective marks the group broken."""
        self.ensure()
        gathered = [None] * self.world
        try:
            dist.all_gather_object(gathered, value)
        except Exception as e:
            self.broken = f"{type(e).__name__}: {e}"[:300]
            raise
        return gathered

    def refuse_reset_if_broken(self):
        if self.broken:
            raise AdapterError("FailedPrecondition", "a collective of this group failed earlier "
                                                     f"({self.broken}); start a new group")

    def close(self):
        """Destroys the process group and every group made from it (async_group's)."""
        self.async_pg = None
        if dist.is_initialized():
            dist.destroy_process_group()


def check_storage_bounds(ckpt, json_files=()):
    """The adapters' --check-storage-bounds: the checks a DCP checkpoint's reader does not make
    before it reads. Each of `json_files` (names in `ckpt`) must parse; DCP's .metadata must load
    (its error then names the file); and every file the metadata names must exist and hold the
    bytes [offset, offset + length) of each item it records. What fails is refused, naming the
    file, instead of the reader failing later with an error that names none (docs/FINDINGS.md
    F28)."""
    ckpt = Path(ckpt)
    for name in json_files:
        try:
            json.loads((ckpt / name).read_text())
        except (ValueError, UnicodeDecodeError) as e:
            raise AdapterError("Corruption", f"{ckpt / name}: {type(e).__name__}: {e}") from e
    try:
        metadata = dcp.FileSystemReader(str(ckpt)).read_metadata()
    except Exception as e:
        raise AdapterError("Corruption", f"{ckpt / '.metadata'}: {type(e).__name__}: {e}") from e
    needed = {}
    for info in (metadata.storage_data or {}).values():
        end = int(info.offset) + int(info.length)
        needed[info.relative_path] = max(needed.get(info.relative_path, 0), end)
    for relative, end in sorted(needed.items()):
        path = ckpt / relative
        try:
            size = path.stat().st_size
        except FileNotFoundError as e:
            raise AdapterError("NotFound", f"{path} is missing: DCP's metadata names it") from e
        if size < end:
            raise AdapterError("Corruption", f"{path} holds {size} bytes; DCP's metadata names "
                                             f"bytes up to {end}")


# ---------------------------------------------------------------------------------------------
# A storage adapter over a GlooGroup: its flags, capabilities and request loop


def add_pg_timeout_flag(parser, env_var):
    """--pg-timeout: the gloo collectives' timeout in seconds (default $`env_var`, else 45)."""
    parser.add_argument("--pg-timeout", type=float, default=float(os.environ.get(env_var, 45)),
                        help="gloo collective timeout in seconds (default 45: below the "
                             "harness's 60)")


def add_storage_flags(parser, plan_cache, json_files=()):
    """The flags of a storage adapter that turn its optional capabilities off -- --no-async (async
    saves and poll), --no-plan-cache (`plan_cache` says what the cache is), --no-reset (reset, and
    regroup, which needs it), --no-regroup -- and --check-storage-bounds (check_storage_bounds
    before a load; `json_files` are the files of the checkpoint it parses too)."""
    parsed = "".join(f"that {name} parses and " for name in json_files)
    for flag, meaning in (
            ("--no-async", "do not declare async saves"),
            ("--no-plan-cache", f"do not declare {plan_cache}"),
            ("--no-reset", "do not declare reset: the harness then starts new processes for "
                           "every engine"),
            ("--no-regroup", "do not declare regroup: the harness then starts a group of "
                             "processes for every world size"),
            ("--check-storage-bounds", f"before a load, check {parsed}that every file DCP's "
                                       "metadata names exists and holds the bytes it names, and "
                                       "refuse naming the file (docs/FINDINGS.md F28's control)")):
        parser.add_argument(flag, action="store_true", help=meaning)


def save_parameters(req, args):
    """(directory, iteration, the iteration's checkpoint directory, whether the save is async,
    whether it may reuse a cached plan) of a save request to a storage adapter: async and the
    plan cache only where the request asks and add_storage_flags' `args` declare them."""
    directory, iteration = req["directory"], int(req["iteration"])
    return (directory, iteration, iter_dir(directory, iteration),
            bool(req.get("async")) and not args.no_async,
            bool(req.get("assume_constant_structure")) and not args.no_plan_cache)


def regroups(args):
    """Whether the process declares regroup (which needs reset)."""
    return not args.no_regroup and not args.no_reset


def storage_capabilities(args, strict_modes):
    """hello's capabilities of a storage adapter (add_storage_flags' `args`): resharding, objects,
    async saves, the plan cache, reset (protocol revision 2), poll (revision 3), packed files
    (revision 4) and regroup (revision 6) unless the flags turn them off; checksums and
    determinism never; Megatron's strict modes as `strict_modes` says."""
    return {"resharding": True, "objects": True, "async": not args.no_async, "checksums": False,
            "plan_cache": not args.no_plan_cache, "deterministic": False,
            "strict_modes": strict_modes, "reset": not args.no_reset, "poll": not args.no_async,
            "packed": True, "regroup": regroups(args)}


def serve_engine(adapter, engine, args, strict_modes, to_error):
    """Serves the requests (ckptspec_adapter_kit.serve) as the process's rank RANK, under
    `adapter`'s name and storage_capabilities, with `engine`'s save, load and finalize, its poll
    unless --no-async, its reset unless --no-reset, and its regroup; errors through `to_error`, an
    unexpected one shown to engine.group.check. Returns "shutdown" or "eof"."""
    ops = {"save": engine.save, "load": engine.load, "finalize": lambda req: engine.finalize()}
    if not args.no_async:
        ops["poll"] = engine.poll
    if not args.no_reset:
        ops["reset"] = lambda req: engine.reset()
    return serve(int(os.environ["RANK"]), adapter, storage_capabilities(args, strict_modes), ops,
                 to_error, engine.group.check, regroup=engine.regroup)
