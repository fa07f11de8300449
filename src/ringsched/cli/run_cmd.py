"""``ringsched run``: a policy drives real PyTorch DDP jobs, on local processes or on Ray."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ringsched.backends import signals
from ringsched.backends.journal import StateWriteError
from ringsched.backends.state_lock import StateLock
from ringsched.errors import InputError
from ringsched.validation.paths import state_folder

BACKENDS = ("local", "ray")


def require_run_extra(*modules: str) -> None:
    """One line naming the ``[run]`` extra when a module real execution needs is not installed
    (a simulator-only install leaves them out); the workers would fail one by one instead."""
    import importlib.util

    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ImportError:
            return True

    missing = [m for m in modules if absent(m)]
    if missing:
        raise InputError(f"real execution needs {', '.join(missing)}, which a simulator-only install leaves out: "
                         "pip install 'ringsched[run]'", field="install")


def check_execution_options(backend: str, address: str | None) -> None:
    """The options ``run`` and ``serve`` share, checked before any work (one line, exit 2; the
    slot and checkpoint lengths are bounded at parsing, ``cli/errors.OPTION_BOUNDS``)."""
    if backend not in BACKENDS:
        raise InputError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}", field="backend")
    require_run_extra("torch", *(("ray",) if backend == "ray" else ()))
    if address is not None and backend != "ray":
        raise InputError("--address applies to --backend ray only", field="address")
EXIT_STATE_ERROR = 3  # the state directory refused a write, or the backend cannot run workers


class RunProgress:
    """Per-job progress bars on stderr (samples done / work), plus one line per notable event."""

    def __init__(self, console: Console):
        self.console = console
        self.bar: Progress | None = None
        self.tasks: dict[str, int] = {}
        self.last = 0.0
        self.t0 = time.monotonic()
        self.ctl = None

    def notify(self, msg: str) -> None:
        line = f"[dim]{time.monotonic() - self.t0:7.1f}s[/dim] {escape(msg)}"
        if self.bar is not None:
            self.bar.console.print(line, highlight=False)
        else:
            self.console.print(line, highlight=False)

    def tick(self, ctl, force: bool = False) -> None:
        self.ctl = ctl
        now = time.monotonic()
        if now - self.last < 0.25 and not force:
            return
        self.last = now
        if self.bar is None:
            self.bar = Progress(TextColumn("{task.description:<22}", markup=False, style="bold"), BarColumn(),
                                TaskProgressColumn(),
                                TextColumn("{task.fields[status]:<9} w={task.fields[workers]} loss {task.fields[loss]}"),
                                TimeElapsedColumn(), console=self.console, transient=False)
            self.bar.start()
            for jid, js in sorted(ctl.states.items(), key=lambda kv: kv[1].index):
                self.tasks[jid] = self.bar.add_task(jid, total=js.job.work_samples, status=js.status, workers=0, loss="-")
        for jid, js in ctl.states.items():
            att = ctl.by_job.get(jid)
            done = js.done_samples if att is None else max(att.samples, att.start_samples)
            loss = ctl.loss_last.get(jid)
            self.bar.update(self.tasks[jid], completed=min(done, js.job.work_samples), status=js.status,
                            workers=att.world if att else 0, loss=f"{loss:.3g}" if loss is not None else "-")

    def close(self) -> None:
        if self.bar is not None:
            if self.ctl is not None:
                self.tick(self.ctl, force=True)
            self.bar.stop()


def _fmt(v, digits=3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def print_summary(s: dict, console: Console) -> None:
    """One row per job: names and losses whole (only the status, which may carry an error, wraps);
    every cell plain text, never markup (an error message may hold brackets)."""
    from rich.text import Text

    t = Table(title=Text(f"{s['policy']} on {s['cluster']} ({s['backend']}), {s['wall_s']:.1f} s wall"))
    for col in ("job", "status", "workers", "resizes", "loss", "step err"):
        t.add_column(col, no_wrap=col != "status")
    for j in s["jobs"]:
        status = j["status"] + (f": {j['error']}" if j.get("error") else "")
        cells = (j["job"], status, " ".join(map(str, j["workers"])) or "-", str(j["resizes"]),
                 f"{_fmt(j['loss_first'])} -> {_fmt(j['loss_last'])}",
                 f"{j['median_step_error'] * 100:.0f}%" if j["median_step_error"] is not None else "-")
        t.add_row(*(Text(c) for c in cells))
    console.print(t)
    pct = lambda v: "-" if v is None else f"{v * 100:.0f}%"  # noqa: E731
    console.print(f"completed {s['completed']}, failed {s['failed']}, resizes {s['resizes']}. Median step-time "
                  f"error, predicted at launch vs measured: {pct(s['median_step_error'])} over all launches, "
                  f"{pct(s['median_step_error_informed'])} once the job type had been measured; "
                  f"final refitted model: {pct(s['median_step_error_refit'])}. Per-launch detail: --json.")


def run(
    backend: str = typer.Option("local", "--backend", help="Where workers run: local (processes) or ray."),
    cluster: str = typer.Option("2x2", "--cluster", help="Cluster spec NxG[,key=value...] or a YAML file; "
                                "servers and GPU slots are emulated (local) or Ray nodes (ray)."),
    jobs: str = typer.Option("demo:3", "--jobs", help="A YAML jobs file, or demo:N[,scale=F] (built-in jobs)."),
    policy: str = typer.Option("optimus", "--policy", help="Policy NAME[:key=value,...] (ringsched policies lists them; "
                               "options: docs/policies.md)."),
    slot_s: float = typer.Option(5.0, "--slot-s", help="Scheduling slot: the policy decides every S seconds."),
    state: Path = typer.Option(None, "--state", help="Durable state directory (journal, checkpoints, logs); "
                               "rerun with the same one to resume. Default: a temporary directory."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object on stdout."),
    address: str = typer.Option(None, "--address", help="Ray cluster address (ray backend); default: start "
                                "a local Ray instance emulating the cluster's servers."),
    checkpoint_s: float = typer.Option(10.0, "--checkpoint-s", help="Checkpoint every S seconds while running."),
) -> None:
    """Run jobs for real: the policy decides workers and placements every slot; jobs are PyTorch
    DDP (gloo) processes that checkpoint and restart when resized."""
    from ringsched.backends.controller import LauncherError, RunConfig
    from ringsched.backends.jobs_file import load_jobs
    from ringsched.cluster.model import load_cluster
    from ringsched.policies import make_policy

    check_execution_options(backend, address)
    pol = make_policy(policy)
    cl = load_cluster(cluster)
    run_jobs = load_jobs(jobs)
    state_folder(state)  # a file, or a folder we cannot create or write: one line, before any work
    tmp = None
    state_dir = state.resolve() if state is not None else None  # workers (Ray actors) have other cwds
    if state_dir is None:
        tmp = tempfile.mkdtemp(prefix="ringsched-run-")
        state_dir = Path(tmp)
    err = Console(stderr=True)
    prog = RunProgress(err)
    try:
        summary = _run_locked(state_dir, backend, cl, cluster, pol, run_jobs, jobs, address,
                              RunConfig(slot_s=slot_s, ckpt_every_s=checkpoint_s), prog)
    except (StateWriteError, LauncherError) as e:
        err.print(f"ringsched: error: {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_STATE_ERROR) from None
    except signals.Interrupted as e:  # before the run loop took over (it handles the rest itself)
        err.print(f"ringsched: interrupted ({signal.Signals(e.signum).name})", highlight=False)
        raise typer.Exit(signals.exit_code(e.signum)) from None
    finally:
        prog.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if tmp is not None:
        summary["state"] = None
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        from ringsched.reports.terminal import stdout_console

        print_summary(summary, stdout_console())
    raise typer.Exit(exit_code(summary))


def exit_code(summary: dict) -> int:
    """0: every job completed; 1: a job failed, was rejected or never ran; 128 + signal when a
    signal ended the run (130 SIGINT, 143 SIGTERM: running jobs were checkpointed first)."""
    if summary["interrupted"]:
        return signals.exit_code(summary["interrupted"])
    if summary["failed"] or summary["rejected"] or summary["unfinished"]:
        return 1
    return 0


def _run_locked(state_dir: Path, backend: str, cl, cluster_spec: str, pol, run_jobs, jobs_source: str,
                address: str | None, cfg, prog: RunProgress) -> dict:
    """Take the state directory's lock before reading anything in it, open (check) the
    journal, check it belongs to this run, then start workers and run."""
    from ringsched.backends.controller import Controller, check_journal
    from ringsched.backends.journal import Journal

    lock = StateLock(state_dir).acquire()
    previous = signals.terminate_gracefully()
    launcher = None
    journal = None
    try:
        journal = Journal(state_dir)
        check_journal(journal, run_jobs, cluster_spec)  # before starting any worker
        if lock.previous_owner:  # its owner died without releasing it (the kernel did)
            owner = lock.previous_owner
            prog.notify(f"state directory lock of pid {owner.get('pid', '?')} on {owner.get('host', '?')} "
                        f"(no longer running) taken over")
        if backend == "local":
            from ringsched.backends.local import LocalLauncher

            launcher = LocalLauncher(state_dir)
        else:
            from ringsched.backends.ray_backend import RayLauncher

            launcher = RayLauncher(cl, state_dir, address=address)
            signals.terminate_gracefully()  # again: ray.init installs its own SIGTERM handler (it aborts)
        ctl = Controller(run_jobs, cl, cluster_spec, pol, launcher, journal, cfg, jobs_source=jobs_source,
                         notify=prog.notify, on_tick=prog.tick)
        return ctl.run()
    except BaseException:
        if launcher is not None:
            launcher.close()
        raise
    finally:
        signals.restore(previous)
        if journal is not None:
            journal.close()
        lock.release()
