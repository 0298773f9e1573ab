"""Save and load of a training run through ms-swift's own checkpointing functions
(swift/megatron/utils/megatron_lm_utils.py): save_mcore_checkpoint and load_mcore_checkpoint, called
as ms-swift's Megatron trainer calls them (BaseMegatronTrainer.save_checkpoint and
_load_checkpoint), with the run's ms-swift args.

save(run, directory, group) -> {"iteration", "signature"}
load(run, directory, iteration, flags, group) -> the loop's iteration

Where the adapter departs from the trainer's calls:
  - the trainer saves each checkpoint into its own output_dir/checkpoint-<iteration> directory
    (with args.json beside it); the adapter passes the request's directory as output_dir, so that
    the iterations of one directory share a tracker (docs/PROTOCOL.md, save);
  - load_mcore_checkpoint reads the iteration the tracker names and has no other: a load of another
    iteration is NotSupported; the trainer's _load_iteration (which reads the iteration and the
    data position from args.model, a Hugging Face model directory) does not apply;
  - a save over the iteration the tracker names is refused (FailedPrecondition) before ms-swift is
    called, as the megatron-core framework adapter refuses it;
  - before a save, and before a load that loads optimizer state, an unstepped torch AdamW gets the
    state of its first step (cpu_shims.prime_torch_adam_state, the megatron-core framework
    adapter's CPU shim for megatron-core's torch fallback optimizer).
Every rank fails together: each step ends in an agreement (group.agree). ms-swift's save and load
strategies are its own (not gated as the megatron-core framework adapter gates its own): a rank
that fails alone inside their collectives leaves the others to the process group's timeout.

The signature (docs/SIGNATURE.md rank entry) is of the state dict ms-swift hands to
dist_checkpointing.save, recorded by a pass-through wrapper around that function for the duration
of the save (the megatron-core framework adapter's rank_signature).
"""
import contextlib

import torch.distributed as dist

import cpu_shims
from ckptspec_adapter_kit import AdapterError, iteration_to_load, refuse_overwrite, \
    tracked_iteration
from errors import attempt
from loop import enter_loop


def agree(group, error):
    """group.agree(error); where the agreement itself fails (the ranks fell out of step: a rank
    failed alone inside ms-swift's collectives, e.g. megatron-core's save planning, which runs on
    the coordinator only, while the others wait in a barrier), this rank's own error is the reply,
    with the failed agreement after it."""
    try:
        group.agree(error)
    except AdapterError:
        raise
    except Exception as e:
        if error is None:
            raise
        raise AdapterError(error.code, f"{error} (then the ranks fell out of step: "
                                       f"{type(e).__name__}: {e})") from e


@contextlib.contextmanager
def recording_signature(out):
    """While active, megatron.core.dist_checkpointing.save records this rank's signature of the
    state dict it is given (out["signature"]) before saving it unchanged."""
    from megatron.core import dist_checkpointing
    from checkpointing import rank_signature
    original = dist_checkpointing.save

    def save(sharded_state_dict, checkpoint_dir, *a, **k):
        content = k.get("content_metadata")
        if content is not None:
            content = {key: v for key, v in content.items() if key != "dp_cp_group"}
        out["signature"] = rank_signature(sharded_state_dict, content, dist.get_rank())
        return original(sharded_state_dict, checkpoint_dir, *a, **k)

    dist_checkpointing.save = save
    try:
        yield
    finally:
        dist_checkpointing.save = original


def save(run, directory, group):
    """ms-swift's save_mcore_checkpoint(args, models, optimizer, scheduler, iteration, output_dir)
    at the loop's iteration (the trainer sets args.consumed_train_samples first: the loop keeps it
    current in run.args)."""
    from swift.megatron.utils import megatron_lm_utils
    iteration = run.iteration

    def prepare():
        refuse_overwrite(directory, iteration)
        cpu_shims.prime_torch_adam_state(run.optimizer)  # an unstepped optimizer (iteration 0)

    _, error = attempt(prepare)
    group.agree(error)
    recorded = {}

    def call():
        with recording_signature(recorded):
            megatron_lm_utils.save_mcore_checkpoint(run.args, run.model, run.optimizer,
                                                    run.scheduler, iteration=iteration,
                                                    output_dir=str(directory))

    _, error = attempt(call)
    agree(group, error)
    if "signature" not in recorded:
        raise AdapterError("IOError", "save: ms-swift did not call dist_checkpointing.save")
    return {"iteration": iteration, "signature": recorded["signature"]}


def load(run, directory, iteration, flags, group):
    """ms-swift's load_mcore_checkpoint(args, models, optimizer, scheduler, load_arg='mcore_model')
    with args.mcore_model = the directory and args.finetune / no_load_optim / no_load_rng = the
    load's flags, as the trainer's _load_checkpoint calls it; the loop's iteration is what it
    returns (0 under finetune), the data position what it leaves in args.consumed_train_samples.
    Then the data iterator is made anew at the next train (ms-swift builds its iterators after the
    load) and the rerun state machine counts from the loaded iteration."""
    from swift.megatron.utils import megatron_lm_utils
    args = run.args

    def prepare():
        found, _ = iteration_to_load(directory, iteration)
        if iteration is not None and found != tracked_iteration(directory):
            raise AdapterError("NotSupported", f"load: iteration {iteration}: ms-swift's "
                                               "load_mcore_checkpoint loads the iteration the "
                                               "tracker names only")
        args.mcore_model = str(directory)
        args.finetune = flags["finetune"]
        args.no_load_optim = flags["no_load_optim"]
        args.no_load_rng = flags["no_load_rng"]
        if not args.finetune and not args.no_load_optim:
            cpu_shims.prime_torch_adam_state(run.optimizer)

    _, error = attempt(prepare)
    group.agree(error)

    def call():
        return megatron_lm_utils.load_mcore_checkpoint(args, run.model, run.optimizer,
                                                       run.scheduler, load_arg="mcore_model")

    loaded, error = attempt(call)
    agree(group, error)
    run.iteration = int(loaded)
    run.data_iterator = None
    enter_loop(run)
    return run.iteration
