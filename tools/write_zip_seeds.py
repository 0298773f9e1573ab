#!/usr/bin/env python3
"""Writes the real torch.save archives that seed zip_fuzzer and that formats/torch_save_archive_test
reads (corpus/zip_fuzzer_seed_corpus/).

  <torch env>/bin/python tools/write_zip_seeds.py corpus/zip_fuzzer_seed_corpus

The committed files were written with torch 2.14.1 (+cu130), the environment under
/root/.cache/ckptspec/envs/torch-2.14.1-*/. Rerunning gives the same entries and tensor bytes but
another .data/serialization_id (PyTorch's writer draws it afresh for every archive), so only
that entry's bytes and CRC change.

  fp32_tensor.pt        torch.save(torch.arange(16, dtype=torch.float32), buffer): prefix "archive"
  bf16_tensor.pt        torch.save(torch.arange(12, dtype=torch.float32).reshape(3, 4)
                                   .to(torch.bfloat16), buffer)
  common.pt             torch.save(COMMON, "common.pt"), a dict of objects as Megatron's common.pt
                        holds them, written to a path: prefix "common"
  fp32_tensor_zip64.pt  fp32_tensor.pt rewritten in zip64 form (every size and offset of the
                        central directory in a zip64 extra field, zip64 end record and locator;
                        data still aligned to 64 bytes), since torch.save writes zip64 only past
                        4 GiB
"""
import io
import os
import struct
import sys
import zipfile

import torch

COMMON = {
    "iteration": 100,
    "checkpoint_version": 3.0,
    "args": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1, "lr": 1e-4,
             "bf16": True, "name": "gpt"},
    "optimizer": {"param_groups": [{"lr": 1e-4, "weight_decay": 0.1, "params": [0, 1, 2]}]},
    "rng_state": [{"random_rng_state": (3, (1, 2, 3), None), "cuda_rng_state": None}],
    "num_floating_point_operations_so_far": 123456789,
    "step": torch.tensor(5, dtype=torch.int64),
}


def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def zip64_form(archive, alignment=64):
    """The stored entries of `archive` in zip64 form, as formats/zip_test_writer.h writes it."""
    out, central = bytearray(), bytearray()
    with zipfile.ZipFile(io.BytesIO(archive)) as source:
        infos = source.infolist()
        for info in infos:
            data = source.read(info)
            name = info.filename.encode()
            offset = len(out)
            unpadded = offset + 30 + len(name) + 4
            extra = b"FB" + struct.pack("<H", (-unpadded) % alignment) + b"Z" * ((-unpadded) % alignment)
            out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0x808, 0, 0, 0, 0, 0, 0, len(name),
                               len(extra)) + name + extra
            out += data + struct.pack("<IIQQ", 0x08074B50, info.CRC, len(data), len(data))
            zip64 = struct.pack("<HHQQQ", 1, 24, len(data), len(data), offset)
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0x808, 0, 0, 0, info.CRC,
                                   0xFFFFFFFF, 0xFFFFFFFF, len(name), len(zip64), 0, 0, 0, 0,
                                   0xFFFFFFFF) + name + zip64
    directory_offset = len(out)
    out += central
    record_offset = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(infos), len(infos),
                       len(central), directory_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, record_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(out)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory = argv[1]
    os.makedirs(directory, exist_ok=True)
    fp32 = saved(torch.arange(16, dtype=torch.float32))
    seeds = {
        "fp32_tensor.pt": fp32,
        "bf16_tensor.pt": saved(torch.arange(12, dtype=torch.float32).reshape(3, 4).to(torch.bfloat16)),
        "fp32_tensor_zip64.pt": zip64_form(fp32),
    }
    for name, data in seeds.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    torch.save(COMMON, os.path.join(directory, "common.pt"))
    with zipfile.ZipFile(os.path.join(directory, "fp32_tensor_zip64.pt")) as check:
        assert check.testzip() is None
    print(f"torch {torch.__version__}: wrote {', '.join(sorted([*seeds, 'common.pt']))} in {directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
