#!/usr/bin/env python3
"""Writes a PyTorch DCP checkpoint of about GIB GiB of fp32 tensors (one process, torch's own
dcp.save): the input of bench/dcp_verify_bench's `verify --data` against a plain sequential read.

  write_dcp_data_bench_input.py OUT_DIR [--gib 1]

Run it with the torch environment of ci/setup:
  adapters/torch_dcp/run_with_torch_env.sh . @PYTHON@ tools/write_dcp_data_bench_input.py DIR
"""
import argparse
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--gib", type=float, default=1.0)
    args = p.parse_args()
    rows = 4096  # 64 MiB per 4096 x 4096 fp32 tensor
    count = max(1, round(args.gib * 1024 / 64))
    g = torch.Generator().manual_seed(1)
    state = {f"layers.{i}.weight": torch.randn(rows, rows, generator=g) for i in range(count)}
    dcp.save(state, checkpoint_id=args.out_dir)


if __name__ == "__main__":
    main()
