"""What the CLI turns into one line on stderr instead of a traceback, and its exit code:

- HarnessError: bad input (a config, a spec, a path, a device); the user fixes it. Exit 2.
- EnvironmentFault: the machine, not the input (a full or read-only disk, an unreachable
  cluster); the same command works once it is fixed. Exit 1. An OSError of that kind
  (`environment_fault`) means the same thing wherever it is raised.
- Terminated: SIGTERM, raised as a KeyboardInterrupt so Ctrl-C's cleanup runs for it too.
  Exit 130 (SIGINT) or 143 (SIGTERM).
"""

import errno


class HarnessError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


class ConfigError(HarnessError):
    """An invalid, unknown or mistyped configuration value."""


class DataError(HarnessError):
    """A missing, empty or unreadable corpus, or an unusable tokenizer."""


class EnvironmentFault(Exception):
    """A problem with the machine the command runs on; the message names it and the fix."""


class Terminated(KeyboardInterrupt):
    """The process got SIGTERM."""


# errno values that say the disk or the permissions are at fault, not this run or its input.
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
DENIED = (errno.EROFS, errno.EACCES, errno.EPERM)
RESUME = "run the same command again (finished runs are kept, unfinished ones resume)"


def environment_fault(error: BaseException) -> EnvironmentFault | None:
    """The fault an OSError of a full or unwritable disk means; None for any other error."""
    if not isinstance(error, OSError) or error.errno not in FULL + DENIED:
        return None
    where = f" ({error.filename})" if error.filename else ""
    if error.errno in FULL:
        return EnvironmentFault(
            f"no space left on the device{where}; free some space, then {RESUME}"
        )
    reason = (error.strerror or "permission denied").lower()
    return EnvironmentFault(
        f"cannot write{where}: {reason}; make it writable or "
        f"choose another directory (--runs-dir, --out, QKNORM_DATA_DIR)"
    )


# What a CUDA error that breaks the process's context says (torch raises them as
# torch.AcceleratorError or RuntimeError "CUDA error: ..."; MLX's CUDA backend says the same).
BROKEN_DEVICE = (
    "cuda error",
    "device-side assert",
    "illegal memory access",
    "illegal instruction",
    "misaligned address",
    "unspecified launch failure",
)


def breaks_device(error: BaseException) -> bool:
    """Whether error leaves this process's GPU context unusable: after a device-side assert
    or an illegal address every later CUDA call of the process fails too, so the worker that
    saw it must exit (and be replaced) instead of taking the next run."""
    text = f"{type(error).__name__}: {error}".lower()
    return type(error).__name__ == "AcceleratorError" or any(p in text for p in BROKEN_DEVICE)


ONE_LINE = (HarnessError, EnvironmentFault, OSError, MemoryError)  # what one_line describes


def one_line(error: BaseException) -> tuple[str, int]:
    """(message, exit code) of one of the ONE_LINE errors."""
    if isinstance(error, HarnessError):
        return str(error), 2
    if isinstance(error, EnvironmentFault):
        return str(error), 1
    fault = environment_fault(error)
    if fault is not None:
        return str(fault), 1
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror or type(error).__name__}{where}; fix the path, then {RESUME}", 1
    if isinstance(error, MemoryError):
        return f"out of memory; use a smaller model or batch, or free memory, then {RESUME}", 1
    raise TypeError(f"not one of ONE_LINE: {error!r}")


def interrupted_code(error: KeyboardInterrupt) -> int:
    """The shell's exit code for death by the signal: 128 + SIGTERM (15) or SIGINT (2)."""
    return 143 if isinstance(error, Terminated) else 130
