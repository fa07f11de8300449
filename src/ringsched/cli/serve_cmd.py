"""``ringsched serve``: the online scheduler service (HTTP API, live page) over a real cluster."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from ringsched.cli.run_cmd import EXIT_STATE_ERROR, check_execution_options, require_run_extra
from ringsched.validation.paths import state_folder

EPILOG = "Example: ringsched serve --backend local --cluster 2x2 --state state/ --port 8642"


def serve(
    backend: str = typer.Option("local", "--backend", help="Where workers run: local (processes) or ray."),
    cluster: str = typer.Option("2x2", "--cluster", help="Cluster spec NxG[,key=value...] or a YAML file."),
    state: Path = typer.Option(..., "--state", help="Durable state directory (journal, command log, "
                               "checkpoints, logs); restart with the same one to resume every job."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on; a non-loopback one needs a token."),
    port: int = typer.Option(8642, "--port", min=0, max=65535, help="TCP port (0: any free one, written to "
                             "STATE/service.url)."),
    policy: str = typer.Option("optimus", "--policy", help="Policy NAME[:key=value,...] (ringsched policies)."),
    token: str = typer.Option(None, "--token", envvar="RINGSCHED_TOKEN", show_envvar=True,
                              help="Bearer token every request must carry."),
    slot_s: float = typer.Option(5.0, "--slot-s", help="Scheduling slot: the policy decides every S seconds "
                                 "(and at once on a submission or a release)."),
    checkpoint_s: float = typer.Option(10.0, "--checkpoint-s", help="Checkpoint every S seconds while running."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (ray backend), e.g. HOST:6379; "
                                "default: start a local Ray instance emulating the cluster's servers."),
) -> None:
    """Run the scheduler as a service: submit, list, cancel, hold and release jobs over HTTP
    (ringsched submit/queue/status/cancel/logs), until SIGTERM or Ctrl-C checkpoints them."""
    check_execution_options(backend, address)
    require_run_extra("fastapi", "uvicorn")
    from ringsched.backends import signals
    from ringsched.backends.controller import LauncherError
    from ringsched.backends.journal import StateWriteError
    from ringsched.service.server import ServeOptions, serve as run_service

    state_folder(state)
    err = Console(stderr=True)
    t0 = time.monotonic()

    def notify(msg: str) -> None:
        err.print(f"[dim]{time.monotonic() - t0:7.1f}s[/dim] {escape(msg)}", highlight=False)

    opts = ServeOptions(backend, cluster, state.resolve(), host, port, policy, token or None, slot_s, checkpoint_s,
                        address)
    try:
        summary = run_service(opts, notify)
    except (StateWriteError, LauncherError) as e:
        err.print(f"ringsched: error: {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_STATE_ERROR) from None
    except signals.Interrupted as e:  # before the controller's loop took over (it handles the rest itself)
        err.print(f"ringsched: interrupted ({signal.Signals(e.signum).name})", highlight=False)
        raise typer.Exit(signals.exit_code(e.signum)) from None
    if summary["interrupted"]:
        notify(f"stopped ({signal.Signals(summary['interrupted']).name}): running jobs checkpointed; "
               f"{summary['completed']} completed, {summary['unfinished']} to resume (pid {os.getpid()})")
    sys.stdout.flush()
