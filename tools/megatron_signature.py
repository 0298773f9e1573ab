"""Dump the structure signature (docs/SIGNATURE.md) of a Megatron-core sharded state dict.

rank_signature(sharded_sd, rank) is one rank's entry; dump_signature(sharded_sd, path) gathers every
rank's entry and writes the signature on rank 0. The state dict is split the way megatron-core's
save_preprocess splits it: ShardedTensorFactory objects are built, LocalNonpersistentObject values
are left out, ShardedTensor and ShardedObject become entries, and the rest is the common state,
with megatron's rules for containers (a dict or list left empty by the extraction disappears, one
that was empty stays, None stays). The state dict itself is not modified.
"""
import hashlib, json, math, numbers, re
import torch
import torch.distributed as dist
from megatron.core.dist_checkpointing.mapping import (
    LocalNonpersistentObject, ShardedBase, ShardedObject, ShardedTensor, ShardedTensorFactory)

def _ints(t):
    return [int(x) for x in t]

def _replica(r):
    return [int(x) for x in r] if isinstance(r, (tuple, list)) else int(r)

def _dtype(d):
    return str(d).replace("torch.", "")  # torch.bfloat16 -> "bfloat16"

def _digest(t):
    data = t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    return hashlib.blake2b(data, digest_size=8).hexdigest()

def _leaf(v):
    """A common-state value as JSON: non-finite floats become "inf", "-inf", "nan"; other values
    JSON cannot hold become their repr, without the " at 0x..." address of a default repr."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        v = float(v)
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (tuple, list)):  # a tuple is one common value for megatron, never split
        return [_leaf(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _leaf(x) for k, x in v.items()}
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v))  # tensors in common state, enums, ...

def rank_signature(sharded_sd, rank, with_digests=False):
    tensors, objects = [], []

    def sharded(node):  # True when node is saved as sharded data (recorded) or not at all
        if isinstance(node, LocalNonpersistentObject):  # never saved
            return True
        if isinstance(node, ShardedTensor):
            entry = {"key": node.key, "dtype": _dtype(node.dtype),
                     "global_shape": _ints(node.global_shape),
                     "global_offset": _ints(node.global_offset),
                     "local_shape": _ints(node.local_shape),
                     "axis_fragmentations": (None if node.axis_fragmentations is None
                                             else _ints(node.axis_fragmentations)),
                     "prepend_axis_num": int(node.prepend_axis_num),
                     "replica_id": _replica(node.replica_id)}
            if with_digests and node.data is not None:
                entry["digest"] = _digest(node.data)
            tensors.append(entry)
            return True
        if isinstance(node, ShardedObject):
            objects.append({"key": node.key, "global_shape": _ints(node.global_shape),
                            "global_offset": _ints(node.global_offset),
                            "replica_id": _replica(node.replica_id)})
            return True
        if isinstance(node, ShardedBase):
            raise TypeError(f"{type(node).__name__} {node.key!r}: no signature entry for this type")
        return False

    def common_of(node):  # megatron's extract_matching_values, keeping the non-sharded part
        in_dict = isinstance(node, dict)
        kept = {} if in_dict else []
        for k, v in (node.items() if in_dict else enumerate(node)):
            if isinstance(v, ShardedTensorFactory):  # e.g. SwiGLU's linear_fc1
                v = v.build()
            if isinstance(v, (dict, list)) and (v or in_dict):
                c = common_of(v)
                if not c and v:  # only sharded or non-persistent values: gone
                    continue
            elif sharded(v):
                continue
            else:
                c = _leaf(v)
            if in_dict:
                kept[str(k)] = c
            else:
                kept.append(c)
        return kept

    common = common_of(sharded_sd)
    return {"rank": rank, "tensors": tensors, "objects": objects, "common": common}

def dump_signature(sharded_sd, path, with_digests=False):
    """Collective: every rank calls it; rank 0 writes the signature to path."""
    entry = rank_signature(sharded_sd, dist.get_rank(), with_digests)
    ranks = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, entry)
    if dist.get_rank() == 0:
        with open(path, "w") as f:
            json.dump({"format": "ckptspec.signature", "version": 1, "ranks": ranks}, f,
                      allow_nan=False)
