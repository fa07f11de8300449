"""How the command line fails: one line on stderr, ``ringsched: error: ...``, exit code 2.

``run(app)`` runs the typer app without click's standalone mode, so that usage errors
(unknown option, missing argument, a value of the wrong type) come back as exceptions and are
printed as one line like any ``InputError``, instead of click's boxed panel. Before parsing,
``OPTION_BOUNDS`` is attached to every command's options of those names: each given value is
checked against its bound (``validation.bounds.LIMITS``) before the command runs; the checks
of ``COMMAND_CHECKS`` (output paths writable, ``--seeds``) too, so a bad ``--out`` costs one
line, not a run. It also points numba's cache at a temporary folder when neither the package
nor the home folder can hold it, so an unwritable HOME does not break every command.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from typer._click import exceptions as click  # typer (pinned) vendors click: its exception classes

from ringsched.backends import signals
from ringsched.errors import InputError
from ringsched.validation.bounds import LIMITS, Bound
from ringsched.validation.paths import output_file, output_folder

EXIT_INPUT = 2
EXIT_INTERRUPTED = 130

# option flag -> bound of its value (or of each comma-separated value, for the list options)
OPTION_BOUNDS: dict[str, Bound] = {
    "--seed": LIMITS["seed"], "--slot-s": LIMITS["slot_s"], "--restart-s": LIMITS["restart_s"],
    "--checkpoint-s": LIMITS["checkpoint_s"], "--mtbf": LIMITS["mtbf_h"], "--mttr": LIMITS["mttr_h"],
    "--horizon-s": LIMITS["horizon_s"], "--instances": LIMITS["instances"],
    "--time-limit": LIMITS["time_limit_s"], "--limit": LIMITS["jobs"], "--confidence": LIMITS["confidence"],
    "--train-frac": LIMITS["train_frac"], "--workers": LIMITS["workers"], "--priority": LIMITS["priority"],
    "--max-jobs": LIMITS["instance_jobs"], "--max-slots": LIMITS["instance_slots"],
}
LIST_BOUNDS: dict[str, Bound] = {"--loads": LIMITS["load_factor"]}
# (command, flag) -> check(value, flag), for what a flag means differently in different
# commands: output paths (a folder or a file), and --seeds (a list of seeds, or a count).
COMMAND_CHECKS = {("simulate", "--out"): output_folder, ("compare", "--out"): output_folder,
                  ("sweep", "--out"): output_folder, ("demo", "--out"): output_folder,
                  ("suite", "--out"): output_folder,
                  ("model fit", "--out"): output_file, ("model predict", "--out"): output_file,
                  ("optimum-check", "--details"): output_file,
                  ("sweep", "--seeds"): lambda v, flag: _check_seeds(v),
                  ("model fidelity", "--seeds"): lambda v, flag: v is None or LIMITS["seeds_count"].check(
                      v, field=flag)}
_SEEDS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def _check_value(bound: Bound, flag: str):
    def callback(ctx, param, value):
        if value is not None:
            bound.check(value, field=flag)
        return value
    return callback


def _check_list(bound: Bound, flag: str):
    def callback(ctx, param, value):
        if value is not None:
            for part in str(value).split(","):
                if part.strip():
                    bound.parse(part, field=flag)
        return value
    return callback


def _check_seeds(value) -> None:
    """``--seeds A,B,C-D``: every seed within the seed bound, at most ``seeds_count`` of them."""
    if value is None:
        return
    total = 0
    for part in (p for p in str(value).split(",") if p.strip()):
        m = _SEEDS.match(part)
        if not m:
            raise InputError(f"{part.strip()!r} is not a seed or a range A-B of seeds", field="--seeds")
        lo = LIMITS["seed"].check(int(m.group(1)), field="--seeds")
        hi = LIMITS["seed"].check(int(m.group(2) or m.group(1)), field="--seeds")
        if hi < lo:
            raise InputError(f"range {part.strip()!r} ends before it starts", field="--seeds")
        total += hi - lo + 1
    LIMITS["seeds_count"].check(total, field="--seeds", what="the number of seeds")


def _check_command(check, flag: str):
    def callback(ctx, param, value):
        check(value, flag)
        return value
    return callback


def _callback(path: str, flags: list[str]):
    """The check of one parameter of the command at ``path``, or None."""
    for flag in flags:
        if (path, flag) in COMMAND_CHECKS:
            return _check_command(COMMAND_CHECKS[(path, flag)], flag)
        if flag in LIST_BOUNDS:
            return _check_list(LIST_BOUNDS[flag], flag)
        if flag in OPTION_BOUNDS:
            return _check_value(OPTION_BOUNDS[flag], flag)
    return None


def attach_bounds(cmd, path: str = "") -> None:
    """Give every parameter named in the tables its check, in ``cmd`` and its subcommands."""
    for param in getattr(cmd, "params", []):
        check = _callback(path, list(param.opts))
        if check is not None and param.callback is None:
            param.callback = check
    for name, sub in getattr(cmd, "commands", {}).items():
        attach_bounds(sub, f"{path} {name}".strip())


def refuse_repeated_options(cmd, args: list[str]) -> None:
    """An option that takes one value given twice is refused (click would keep the last one
    silently); repeatable options (``--cluster`` of sweep, ``--profiles``, ...) may repeat."""
    i = 0
    while i < len(args) and args[i] in getattr(cmd, "commands", {}):  # down to the command run
        cmd = cmd.commands[args[i]]
        i += 1
    once = {opt: param for param in getattr(cmd, "params", []) if param.param_type_name == "option"
            and not param.multiple for opt in param.opts + param.secondary_opts}
    seen: dict[str, str] = {}
    for token in args[i:]:
        if token == "--":
            break
        flag = token.split("=", 1)[0] if token.startswith("--") else token
        param = once.get(flag)
        if param is None:
            continue
        name = max(param.opts, key=len)
        if name in seen:
            raise InputError(f"option {name} given twice; give it once", field=name)
        seen[name] = token


def usage_line(e: click.UsageError) -> str:
    """A click usage error in one line: the command, then click's message, whitespace folded."""
    msg = " ".join(e.format_message().split())
    where = e.ctx.command_path.partition(" ")[2] if e.ctx is not None else ""
    return f"{where}: {msg}" if where else msg


def numba_cache_fallback(package: Path, home_cache: Path) -> Path | None:
    """The folder numba should cache in when neither ``package`` (numba's default, next to the
    code) nor ``home_cache`` (its fallback, ~/.cache) can be written; None when one can."""
    if _can_write(package) or _can_write(home_cache):
        return None
    return Path(tempfile.gettempdir()) / f"ringsched-numba-cache-{os.getuid()}"


def ensure_numba_cache() -> None:
    """Point numba's cache at a temporary folder when its usual places are not writable."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path(os.path.expanduser("~")) / ".cache")
    folder = numba_cache_fallback(Path(__file__).resolve().parents[1], home)
    if folder is None:
        return
    folder.mkdir(mode=0o700, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:  # already imported: make it read the variable again
        from numba.core import config

        config.reload_config()


def _can_write(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` or, if it does not exist, in its nearest parent."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def error_line(text: str) -> None:
    print(f"ringsched: error: {text}", file=sys.stderr)


def run(app, args: list[str] | None = None) -> int:
    """Run the typer ``app`` on ``args`` (default: the process's); returns the exit code."""
    import typer
    import typer.main

    ensure_numba_cache()
    cmd = typer.main.get_command(app)
    attach_bounds(cmd)
    args = sys.argv[1:] if args is None else list(args)
    try:
        refuse_repeated_options(cmd, args)
        rv = cmd.main(args=args, prog_name="ringsched", standalone_mode=False)
    except click.NoArgsIsHelpError as e:
        print(e.ctx.get_help() if e.ctx is not None else e.format_message())
        return EXIT_INPUT
    except click.UsageError as e:
        error_line(usage_line(e))
        return EXIT_INPUT
    except click.ClickException as e:
        error_line(" ".join(e.format_message().split()))
        return EXIT_INPUT
    except InputError as e:
        error_line(e.line())
        return EXIT_INPUT
    except (KeyboardInterrupt, typer.Abort):
        rv = EXIT_INTERRUPTED
        print("ringsched: interrupted", file=sys.stderr)
    rv = rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
    if rv == EXIT_INTERRUPTED and signals.received is not None:  # typer says 130 for SIGTERM too
        rv = signals.exit_code(signals.received)
    return rv
