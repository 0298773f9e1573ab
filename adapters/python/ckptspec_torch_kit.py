"""What the torch-based adapters of ckptspec (torch_dcp, megatron_core) share: the protocol's
dtypes as torch dtypes, tensor entries read from and written to the harness's files, and the gloo
process group with its agreement step. Imported by path beside ckptspec_adapter_kit.
"""
import datetime
import json
import math
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from ckptspec_adapter_kit import AdapterError, attempt, entry_bytes, write_entry

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


class GlooGroup:
    """The gloo default process group over MASTER_ADDR:MASTER_PORT, created at the first operation
    that needs it (hello stays fast). A collective that failed (a timeout, a peer gone) leaves the
    group out of step: `broken` says why, and the adapter then refuses reset so that the harness
    replaces the whole group."""

    def __init__(self, rank, world, timeout_s):
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self.broken = None
        self.async_pg = None

    def check(self, e):
        """Records e if it is a failed collective."""
        text = str(e)
        if "gloo" in text or "Connection closed" in text or "timeout" in text.lower():
            self.broken = text[:300]

    def ensure(self):
        if not dist.is_initialized():
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world,
                                    timeout=datetime.timedelta(seconds=self.timeout_s))

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
        self.ensure()
        gathered = [None] * self.world
        try:
            dist.all_gather_object(gathered, None if error is None else [error.code, str(error)])
        except Exception as e:
            self.broken = f"{type(e).__name__}: {e}"[:300]
            raise
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
