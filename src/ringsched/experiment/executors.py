"""Executors: run independent tasks (policies of a compare, cells of a sweep) in local worker
processes with live progress on stderr, and Ctrl-C that keeps what finished.

``run_parallel`` uses a ``ProcessPoolExecutor`` (fork start method on Linux); workers report the
simulator's progress through a multiprocessing queue and ignore SIGINT, which the parent
handles: it ends them and keeps every finished task. The Ray executor is ``ray_executor.py``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from queue import Empty
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

# ------------------------------------------------------------------------------ worker side
_QUEUE = None  # the parent's progress queue, set in each worker by worker_init


def worker_init(queue) -> None:
    """Runs once in every worker: keep the queue; leave Ctrl-C to the parent, which decides
    what to keep and ends the workers itself."""
    global _QUEUE
    _QUEUE = queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's clean stop: the parent ends us


def post(*msg) -> None:
    """Send a progress message to the parent (no-op outside a worker)."""
    if _QUEUE is not None:
        try:
            _QUEUE.put_nowait(msg)
        except Exception:  # noqa: BLE001 - progress is best effort
            pass


def progress_callback(key: str) -> Callable[[float, int, int], None]:
    """A simulator ``progress(sim_s, done, total)`` that forwards to the parent's queue."""
    def cb(sim_s: float, done: int, total: int) -> None:
        post("progress", key, float(sim_s), int(done), int(total))
    return cb


# ------------------------------------------------------------------------------ parent side
@dataclass
class Task:
    key: str  # unique; the progress messages name it
    fn: Callable[..., Any]  # a module-level function (pickled by reference)
    args: tuple
    total: int = 0  # jobs, for the progress bar
    cost: float = 0.0  # expected relative run time: tasks are submitted longest first


@dataclass
class RunOutcome:
    results: dict[str, Any] = field(default_factory=dict)  # key -> fn's return value, finished tasks
    errors: dict[str, str] = field(default_factory=dict)  # key -> "Type: message"
    unfinished: list[str] = field(default_factory=list)  # keys neither finished nor failed (interrupt)
    interrupted: bool = False
    wall_s: float = 0.0
    workers: int = 0
    warm_thread: threading.Thread | None = None  # join it before using what it warmed


def default_workers(n_tasks: int, workers: int | None) -> int:
    cpus = os.cpu_count() or 1
    return max(1, min(n_tasks, cpus, workers or cpus))


def _pool_context():
    # fork is cheapest (workers inherit the imported modules); elsewhere the platform default
    return mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()


def _end_workers(ex: ProcessPoolExecutor) -> None:
    """Terminate this pool's worker processes (by their own handles) and release the pool."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
    ex.shutdown(wait=True, cancel_futures=True)


class _Board:
    """The parent's view of a run: the progress bars (one per task, or one of tasks done), the
    lines printed as tasks start and end, and the workers' progress messages drained into them."""

    def __init__(self, tasks: Sequence[Task], per_task_bars: bool, label: str, console: Console, show: bool):
        self.console, self.show, self.per_task_bars = console, show, per_task_bars
        self.live = console.is_terminal and show
        self.progress = Progress(
            TextColumn("{task.description:<12}", markup=False, style="bold"), BarColumn(bar_width=30),
            MofNCompleteColumn(), TextColumn("{task.fields[unit]}"), TextColumn("{task.fields[day]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[state]}"),
            console=console, disable=not self.live, transient=False)
        self.bars: dict[str, Any] = {}
        self.overall = None
        if per_task_bars:
            for t in tasks:
                self.bars[t.key] = self.progress.add_task(t.key, total=max(t.total, 1), start=False, unit="jobs",
                                                          day="", state="queued")
        else:
            self.overall = self.progress.add_task(label, total=len(tasks), unit="", day="", state="")
        self.started: set[str] = set()

    def note(self, text: str, style: str | None = None) -> None:
        # user strings (policy specs, error messages) are printed as they are: no markup, no emoji
        if not self.show:
            return
        target = self.progress.console if self.live else self.console
        target.print(text, style=style, markup=False, emoji=False, highlight=False, soft_wrap=not self.live)

    def drain(self, queue) -> None:
        """The workers' messages so far (waiting up to 0.1 s for the first)."""
        first = True
        while True:
            try:
                msg = queue.get(timeout=0.1) if first else queue.get_nowait()
            except Empty:
                return
            first = False
            kind, key = msg[0], msg[1]
            if kind == "start" and key not in self.started:
                self.started.add(key)
                if key in self.bars:
                    self.progress.start_task(self.bars[key])
                    self.progress.update(self.bars[key], state="running")
                if not self.live and self.per_task_bars:
                    self.note(f"{key}: started")
            elif kind == "progress" and key in self.bars:
                _, _, sim_s, done, total = msg
                self.progress.update(self.bars[key], completed=done, total=max(total, 1),
                                     day=f"sim day {sim_s / 86400:.1f}")

    def finish(self, f: Future, key: str, out: RunOutcome, on_done, advance: bool = True) -> None:
        """A finished task: its result or error kept, its bar closed, ``on_done``'s line printed;
        the bar of tasks done advanced unless the task is kept after Ctrl-C (``advance``)."""
        progress, bars = self.progress, self.bars
        exc = f.exception()
        if exc is not None:
            out.errors[key] = f"{type(exc).__name__}: {exc}"
            if key in bars:
                progress.update(bars[key], state="[red]failed")
            self.note(f"{key}: failed: {out.errors[key]}", "red")
        else:
            value = f.result()
            out.results[key] = value
            if key in bars:
                total = next((t.total for t in progress.tasks if t.id == bars[key]), None)
                progress.update(bars[key], completed=total, state="[green]done")
                progress.stop_task(bars[key])
            line = on_done(key, value) if on_done else None
            if line:
                self.note(line)
        if advance and self.overall is not None:
            progress.update(self.overall, advance=1, state=f"{len(out.errors)} failed" if out.errors else "")


def run_parallel(tasks: Sequence[Task], *, workers: int | None = None, per_task_bars: bool = True,
                 label: str = "runs", console: Console | None = None,
                 on_done: Callable[[str, Any], str | None] | None = None,
                 warm: Callable[[], None] | None = None, show: bool = True) -> RunOutcome:
    """Run ``tasks`` in worker processes with live progress; Ctrl-C stops early and keeps what
    finished. ``per_task_bars``: one bar per task (jobs, simulated day, ETA); otherwise one bar
    of tasks done. ``on_done(key, value)`` may return a line to print when a task finishes;
    ``warm()`` runs in a background thread of this process once the workers have started;
    ``show=False``: no bars and no lines (the Python API)."""
    out = RunOutcome(workers=default_workers(len(tasks), workers))
    t0 = time.perf_counter()
    board = _Board(tasks, per_task_bars, label, console or Console(stderr=True), show)
    ctx = _pool_context()
    queue = ctx.Queue()
    pending: dict[Future, str] = {}
    ex = ProcessPoolExecutor(max_workers=out.workers, mp_context=ctx, initializer=worker_init,
                             initargs=(queue,))
    try:
        for t in sorted(tasks, key=lambda t: -t.cost):  # longest first: less idle at the end
            pending[ex.submit(t.fn, *t.args)] = t.key
        board.progress.start()
        if warm is not None:
            out.warm_thread = threading.Thread(target=warm, name="warm-up", daemon=True)
            out.warm_thread.start()
        while pending:
            board.drain(queue)
            done, _ = wait(list(pending), timeout=0, return_when=FIRST_COMPLETED)
            for f in done:
                board.finish(f, pending.pop(f), out, on_done)
    except KeyboardInterrupt:
        out.interrupted = True
        # keep what had finished when the interrupt came
        for f, key in list(pending.items()):
            if f.done() and not f.cancelled() and f.exception() is None:
                pending.pop(f)
                board.finish(f, key, out, on_done, advance=False)
        out.unfinished = [k for k in pending.values()]
        _end_workers(ex)
    else:
        ex.shutdown(wait=True)
    finally:
        board.progress.stop()
        queue.close()
        queue.cancel_join_thread()
    out.wall_s = time.perf_counter() - t0
    return out
