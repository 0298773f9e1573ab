"""Where each element of a rank's parameters lies in the whole (unsharded) parameter, and which
rank counts it (docs/PROTOCOL.md, "Framework adapters", observe: every element of a copy is
counted by exactly one rank of the world).

ParamTable lists the model parameters of this rank's model chunk (gpt_param_table(job, chunk); a
MIMO run's module: mimo.mimo_param_table), each with
  name          its full name (the job's module prefix, megatron's name, layers numbered globally)
  param         the megatron parameter
  index         an int64 tensor of the parameter's local shape: each local element's row-major
                index in the whole parameter (tensor-parallel shards placed by their TP rank; the
                gated-linear-unit fc1, whose TP shard holds [its gate rows; its up rows], placed as
                megatron's checkpoint places them: gate rows first, then up rows)
  counted       whether this rank counts the parameter's model copy: data-parallel (and context-
                parallel) rank 0, and tensor-parallel rank 0 for a parameter TP does not split
  tied_copy     the last pipeline stage's copy of a tied word embedding (the output layer of a
                PP > 1 model with tied embeddings): never counted (the embedding is), and its
                synthetic gradient is zero (the embedding's gradient reaches it through Megatron's
                embedding all-reduce, so the tied pair gets the one gradient a PP = 1 model gives)
  checkpoint_name  the name the checkpoint stores it under where that is not `name`: a tied
                copy's is the word embedding's (megatron's tie_embeddings_and_output_weights_state_dict),
                so its param group names the one parameter a PP = 1 model has ("" otherwise)
"""
import math
from dataclasses import dataclass

import torch

from gpt import global_param_names, gpt_model


@dataclass
class ParamEntry:
    name: str
    param: torch.nn.Parameter
    index: torch.Tensor
    global_shape: tuple
    counted: bool
    tied_copy: bool
    checkpoint_name: str = ""

    @property
    def trainable(self):
        return self.param.requires_grad


def _is_glu_fc1(name, gated):
    return gated and name.endswith(("mlp.linear_fc1.weight", "mlp.linear_fc1.bias"))


def local_index(param, name, tp_rank, tp_size, gated):
    """(the local elements' row-major indices in the whole parameter, the whole shape)."""
    shape = list(param.shape)
    if not getattr(param, "tensor_model_parallel", False) or tp_size == 1:
        return torch.arange(math.prod(shape), dtype=torch.int64).view(shape), tuple(shape)
    dim = param.partition_dim
    whole = list(shape)
    whole[dim] *= tp_size
    index = torch.arange(math.prod(whole), dtype=torch.int64).view(whole)
    if _is_glu_fc1(name, gated):
        half, ffn = shape[0] // 2, whole[0] // 2
        gate = index.narrow(0, tp_rank * half, half)
        up = index.narrow(0, ffn + tp_rank * half, half)
        return torch.cat([gate, up], 0), tuple(whole)
    return index.narrow(dim, tp_rank * shape[dim], shape[dim]).contiguous(), tuple(whole)


class ParamTable:
    """The model parameters of this rank (see the module docstring), in megatron's order."""

    def __init__(self, model, full_names, *, gated, tp_rank, tp_size, dp_rank, first_stage,
                 embedding_name):
        """`model`'s parameters (the unwrapped model of the rank's chunk), each named
        full_names[id(param)]; `gated`: the model's gated linear unit; the rank's TP rank and
        size, data-parallel (with context-parallel) rank and whether it is the first pipeline
        stage, in the model's own process groups; `embedding_name`: the full name of the word
        embedding (a tied copy's checkpoint name)."""
        self.entries = []
        self.by_param = {}
        for _, param in model.named_parameters():
            name = full_names[id(param)]
            index, whole = local_index(param, name, tp_rank, tp_size, gated)
            tied_copy = bool(getattr(param, "shared_embedding", False)) and not first_stage
            split = bool(getattr(param, "tensor_model_parallel", False))
            counted = dp_rank == 0 and (split or tp_rank == 0) and not tied_copy
            shared = embedding_name if tied_copy else ""
            entry = ParamEntry(name, param, index, whole, counted, tied_copy, shared)
            self.entries.append(entry)
            self.by_param[id(param)] = entry

    def __iter__(self):
        return iter(self.entries)

    def of(self, param):
        return self.by_param[id(param)]


def gpt_param_table(job, chunk):
    """The ParamTable of a GPT model chunk: full names as the job names them (job.param_name of
    global_param_names), placed and counted by megatron's global model-parallel ranks."""
    from megatron.core import parallel_state as ps
    tp_rank = ps.get_tensor_model_parallel_rank()
    tp_size = ps.get_tensor_model_parallel_world_size()
    dp_rank = ps.get_data_parallel_rank(with_context_parallel=True)
    first_stage = ps.is_pipeline_first_stage()
    names = global_param_names(chunk)
    return ParamTable(gpt_model(chunk), {k: job.param_name(v) for k, v in names.items()},
                      gated=job.module.model.gated_linear_unit, tp_rank=tp_rank, tp_size=tp_size,
                      dp_rank=dp_rank, first_stage=first_stage,
                      embedding_name=job.param_name("embedding.word_embeddings.weight"))
