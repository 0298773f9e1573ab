"""A built training run and its training loop, in the order of Megatron-LM's pretrain/train/
train_step (megatron/training/training.py, not part of the megatron-core wheel), with synthetic
gradients in place of a forward and backward pass (docs/PROTOCOL.md, "Framework adapters", train).

Run holds what Megatron-LM's process holds after setup_model_and_optimizer: the model chunks,
the optimizer, the scheduler, its args (the ones a checkpoint stores: sizes, the data position),
the loop's iteration, the checkpointing context (save and load strategies kept across saves) and
the data iterator. train(run, steps, fault, group) runs the loop.

One iteration (train_step): while the rerun state machine asks for a forward-backward pass,
zero the grad buffers and the optimizer's grads, take the next microbatch from the data iterator,
draw once from python's, numpy's and torch's CPU generators (a forward pass with dropout would),
compute the synthetic loss and validate it as pretrain_gpt's loss_func does (NaN, Inf), write the
synthetic gradients into main_grad (the backward pass) and finalize_model_grads (the data-parallel
reduction, the tied-embedding all-reduce); then should_checkpoint_and_exit; every rank agrees
(the adapter's gate: a one-rank failure fails every rank here); then optimizer.step(), the
scheduler's step by the global batch size, the iteration and the data position.
"""
import argparse
import random
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import torch

from ckptspec_framework_kit import synthetic_gradient


@dataclass
class Run:
    job: Any
    framework: Any
    model: list
    optimizer: Any
    scheduler: Any
    table: Any          # params.ParamTable of the model chunk
    args: argparse.Namespace
    iteration: int = 0
    context: dict = field(default_factory=dict)  # Megatron-LM's checkpointing_context
    data_iterator: Optional[Any] = None


def run_args(job):
    """The args a Megatron-LM checkpoint stores ('args' of the common state) for this job, as an
    argparse.Namespace: the sizes load_checkpoint compares, the layout, the data position. The
    same on every rank (no rank-specific member)."""
    mod, m = job.module, job.module.model
    return argparse.Namespace(
        num_layers=m.num_layers, hidden_size=m.hidden_size,
        num_attention_heads=m.num_attention_heads, num_query_groups=m.num_query_groups,
        ffn_hidden_size=m.ffn_hidden_size, padded_vocab_size=m.vocab_size,
        swiglu=m.gated_linear_unit, add_bias_linear=m.add_bias,
        untie_embeddings_and_output_weights=not m.tie_embeddings,
        position_embedding_type="rope", add_position_embedding=False,
        normalization="RMSNorm", fp16=m.params_dtype == "fp16", bf16=m.params_dtype == "bf16",
        tensor_model_parallel_size=mod.tp, pipeline_model_parallel_size=mod.pp,
        context_parallel_size=mod.cp, expert_model_parallel_size=mod.ep,
        world_size=mod.world_size, data_parallel_size=mod.dp,
        use_distributed_optimizer=job.optimizer.distributed, ckpt_format="torch_dist",
        use_dist_ckpt=True, ckpt_assume_constant_structure=job.assume_constant_structure,
        global_batch_size=job.global_batch_size, seed=job.seed, rerun_mode=job.rerun_mode,
        no_save_optim=False, no_save_rng=False, consumed_train_samples=0,
        skipped_train_samples=0, consumed_valid_samples=0)


def microbatches(first_sample, global_batch_size):
    """The training data: one microbatch per iteration naming its samples, from the data
    position on (as Megatron-LM's sampler resumes at consumed_train_samples)."""
    position = first_sample
    while True:
        yield {"first_sample": position, "samples": global_batch_size}
        position += global_batch_size


def data_iterator(run):
    """The run's data iterator, made at the first iteration after a build or load (Megatron-LM
    builds its iterators after load_checkpoint), wrapped in megatron's RerunDataIterator."""
    from megatron.core.rerun_state_machine import RerunDataIterator
    if run.data_iterator is None:
        run.data_iterator = RerunDataIterator(
            microbatches(run.args.consumed_train_samples, run.job.global_batch_size))
    return run.data_iterator


def synthetic_loss(job, iteration, batch, fault):
    """The iteration's loss: a deterministic finite scalar of (seed, iteration, data position),
    NaN when the iteration is the faulted one (on every run of it: a persistent fault)."""
    if fault:
        return torch.tensor(float("nan"))
    g = synthetic_gradient(job.seed, iteration, "loss", [batch["first_sample"]])
    return torch.tensor(2.0 + float(g[0]))


def set_synthetic_gradients(run, iteration):
    """The backward pass: every trainable parameter's main_grad is its synthetic gradient for
    `iteration` (by the elements' indices in the whole parameter), times the loss scale (fp16);
    the last stage's copy of a tied embedding gets zero (params.ParamTable)."""
    scale = 1.0
    if run.args.fp16:
        scale = float(run.optimizer.get_loss_scale())
    for entry in run.table:
        if not entry.trainable:
            continue
        grad = entry.param.main_grad
        if entry.tied_copy:
            grad.zero_()
            continue
        values = synthetic_gradient(run.job.seed, iteration, entry.name,
                                    entry.index.reshape(-1).numpy())
        grad.copy_(torch.from_numpy(values).view(grad.shape).to(grad.dtype) * scale)


def forward_backward(run, iteration, fault):
    """One forward-backward pass of the iteration (see the module docstring)."""
    from megatron.core.distributed import finalize_model_grads
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    rsm = get_rerun_state_machine()
    batch = next(run.data_iterator)
    random.random()
    np.random.random()
    torch.rand(1)
    loss = synthetic_loss(run.job, iteration, batch, fault)
    rsm.validate_result(result=loss, rejection_func=torch.isnan,
                        message="found NaN in local forward loss calculation", tolerance=0.0,
                        fatal=True)
    rsm.validate_result(result=loss, rejection_func=torch.isinf,
                        message="found Inf in local forward loss calculation", tolerance=0.0,
                        fatal=True)
    set_synthetic_gradients(run, iteration)
    # Megatron-LM's config.finalize_model_grads_func: a framework may finalize its own way
    # (a MIMO run: each module over its own process groups, mimo.py).
    getattr(run.framework, "finalize_model_grads", finalize_model_grads)(run.model)


def forward_backward_passes(run, fault):
    """The forward-backward passes the rerun state machine asks for, then its verdict:
    (should_checkpoint, should_exit)."""
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    rsm = get_rerun_state_machine()
    iteration = run.iteration + 1
    while rsm.should_run_forward_backward(run.data_iterator):
        for chunk in run.model:
            chunk.zero_grad_buffer()
        run.optimizer.zero_grad()
        forward_backward(run, iteration, fault)
    should_checkpoint, should_exit, _ = rsm.should_checkpoint_and_exit()
    return should_checkpoint, should_exit


def optimizer_step(run):
    """optimizer.step(), the scheduler's step by the global batch size when the step succeeded,
    the iteration and the data position."""
    update_successful, _, _ = run.optimizer.step()
    if update_successful:
        run.scheduler.step(increment=run.job.global_batch_size)
    run.iteration += 1
    run.args.consumed_train_samples += run.job.global_batch_size


def train_step(run, fault, group):
    """Megatron-LM's train_step plus the loop's bookkeeping. Between the passes and the optimizer
    step every rank agrees (group.agree): a rank that failed in the passes (the rerun state
    machine raises on one rank only, e.g. its determinism report) fails every rank there instead
    of leaving them in the optimizer's collectives. Returns (should_checkpoint, should_exit); with
    an exit no step is taken."""
    from errors import attempt
    verdict, error = attempt(lambda: forward_backward_passes(run, fault))
    group.agree(error)
    should_checkpoint, should_exit = verdict
    if should_exit:
        return should_checkpoint, True
    optimizer_step(run)
    return False, False


def enter_loop(run):
    """Megatron-LM's train() before its first iteration: the rerun state machine's iteration is
    the loop's (it counts the iterations of the process otherwise, -1 before the first). Applied at
    every train request, and at the end of a build and of a load that did not restore the machine
    (so that an observation between them and the first train shows what train() starts from; a
    machine a load restored shows its saved iteration until train() sets it, as Megatron-LM's
    does)."""
    from megatron.core.rerun_state_machine import get_rerun_state_machine
    rsm = get_rerun_state_machine()
    if rsm.current_iteration != run.iteration:
        rsm.current_iteration = run.iteration


def train(run, steps, fault, group):
    """`steps` iterations, then with `fault` one more whose loss is NaN on every run, until the
    rerun state machine asks to exit. Returns the reply's fields."""
    enter_loop(run)
    data_iterator(run)
    for k in range(steps + (1 if fault else 0)):
        should_checkpoint, should_exit = train_step(run, fault and k == steps, group)
        if should_exit:
            return {"iteration": run.iteration, "checkpoint_and_exit": bool(should_checkpoint)}
    return {"iteration": run.iteration, "checkpoint_and_exit": False}
