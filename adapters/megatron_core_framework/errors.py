"""Errors of the framework adapter: every exception becomes an AdapterError with one of the
protocol's codes (the megatron_core storage adapter's from_exception), and one that is not an
AdapterError (a defect of megatron-core or of the adapter) leaves its traceback on stderr.

attempt(fn) -> (fn(), None) or (None, the error): every rank of a collective step must reach the
step's agreement (GlooGroup.agree), so nothing escapes (BaseExceptions included: torch's
CheckpointException is one; interrupts and exits excepted).
"""
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "megatron_core"))

from ckptspec_adapter_kit import AdapterError  # noqa: E402
from ckptspec_megatron_core_adapter import from_exception  # noqa: E402,F401


def failure(e):
    """Whether e is a failure to report (torch.distributed.checkpoint's CheckpointException is a
    BaseException) rather than an interrupt or an exit."""
    return not isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit))


def attempt(fn):
    try:
        return fn(), None
    except BaseException as e:
        if not failure(e):
            raise
        if not isinstance(e, AdapterError):
            traceback.print_exc(file=sys.stderr)
        return None, from_exception(e)
