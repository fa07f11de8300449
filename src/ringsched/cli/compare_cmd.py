"""``ringsched compare``: every policy on the same trace and cluster, side by side.

Each policy runs in its own worker process (``ProcessPoolExecutor``, at most ``os.cpu_count()``
workers). Workers report the simulator's progress through a multiprocessing queue; the parent
draws one rich progress bar per policy (jobs done, simulated time, ETA), then prints a table
of the summary metrics with the best value per column marked, and writes ``summary.csv``,
``jobs.parquet``, ``timeline.parquet``, ``placements.parquet`` and ``report.html``
(docs/reports.md). Ctrl-C keeps and writes what finished, then exits 130.

``run_parallel`` (the worker pool, the progress queue and the Ctrl-C handling) is shared with
``ringsched sweep``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any, Callable, Sequence

import typer
from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from ringsched.cli import workload as w

# ------------------------------------------------------------------------------ worker side
_QUEUE = None  # the parent's progress queue, set in each worker by _worker_init


def _worker_init(queue) -> None:
    """Runs once in every worker: keep the queue; leave Ctrl-C to the parent, which decides
    what to keep and ends the workers itself."""
    global _QUEUE
    _QUEUE = queue
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _post(*msg) -> None:
    if _QUEUE is not None:
        try:
            _QUEUE.put_nowait(msg)
        except Exception:  # noqa: BLE001 - progress is best effort
            pass


def progress_callback(key: str) -> Callable[[float, int, int], None]:
    """A simulator ``progress(sim_s, done, total)`` that forwards to the parent's queue."""
    def cb(sim_s: float, done: int, total: int) -> None:
        _post("progress", key, float(sim_s), int(done), int(total))
    return cb


def run_policy(policy: str, jobs, cluster, sim_kwargs: dict, seed: int, objective: str = "jct") -> dict:
    """One policy on the jobs under ``objective``, in a worker: the result's tables and summary."""
    from ringsched.objectives.registry import run_with_objective
    from ringsched.simulator import SimConfig

    t0 = time.perf_counter()
    _post("start", policy, len(jobs))
    result = run_with_objective(objective, jobs, cluster, policy, SimConfig(seed=seed, **sim_kwargs),
                                progress=progress_callback(policy))
    s = dict(result.summary)
    s["sim_wall_s"] = s.pop("wall_s")
    s["wall_s"] = time.perf_counter() - t0
    return {"policy": policy, "summary": s, "jobs": result.jobs, "timeline": result.timeline,
            "changes": result.changes}


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


def run_parallel(tasks: Sequence[Task], *, workers: int | None = None, per_task_bars: bool = True,
                 label: str = "runs", console: Console | None = None,
                 on_done: Callable[[str, Any], str | None] | None = None,
                 warm: Callable[[], None] | None = None) -> RunOutcome:
    """Run ``tasks`` in worker processes with live progress; Ctrl-C stops early and keeps what
    finished. ``per_task_bars``: one bar per task (jobs, simulated day, ETA); otherwise one bar
    of tasks done. ``on_done(key, value)`` may return a line to print when a task finishes;
    ``warm()`` runs in a background thread of this process once the workers have started."""
    console = console or Console(stderr=True)
    out = RunOutcome(workers=default_workers(len(tasks), workers))
    t0 = time.perf_counter()
    live = console.is_terminal
    progress = Progress(TextColumn("[bold]{task.description:<12}"), BarColumn(bar_width=30),
                        MofNCompleteColumn(), TextColumn("{task.fields[unit]}"),
                        TextColumn("{task.fields[day]}"), TimeElapsedColumn(), TextColumn("ETA"),
                        TimeRemainingColumn(), TextColumn("{task.fields[state]}"),
                        console=console, disable=not live, transient=False)
    bars: dict[str, Any] = {}
    if per_task_bars:
        for t in tasks:
            bars[t.key] = progress.add_task(t.key, total=max(t.total, 1), start=False, unit="jobs",
                                            day="", state="queued")
    else:
        overall = progress.add_task(label, total=len(tasks), unit="", day="", state="")
    ctx = _pool_context()
    queue = ctx.Queue()
    started: set[str] = set()
    pending: dict[Future, str] = {}
    ex = ProcessPoolExecutor(max_workers=out.workers, mp_context=ctx, initializer=_worker_init,
                             initargs=(queue,))

    def note(text: str) -> None:
        if live:
            progress.console.print(text)
        else:
            console.print(text, soft_wrap=True)

    def drain() -> None:
        first = True
        while True:
            try:
                msg = queue.get(timeout=0.1) if first else queue.get_nowait()
            except Empty:
                return
            first = False
            kind, key = msg[0], msg[1]
            if kind == "start" and key not in started:
                started.add(key)
                if key in bars:
                    progress.start_task(bars[key])
                    progress.update(bars[key], state="running")
                if not live and per_task_bars:
                    note(f"{key}: started")
            elif kind == "progress" and key in bars:
                _, _, sim_s, done, total = msg
                progress.update(bars[key], completed=done, total=max(total, 1), day=f"sim day {sim_s / 86400:.1f}")

    try:
        for t in sorted(tasks, key=lambda t: -t.cost):  # longest first: less idle at the end
            pending[ex.submit(t.fn, *t.args)] = t.key
        progress.start()
        if warm is not None:
            out.warm_thread = threading.Thread(target=warm, name="warm-up", daemon=True)
            out.warm_thread.start()
        while pending:
            drain()
            done, _ = wait(list(pending), timeout=0, return_when=FIRST_COMPLETED)
            for f in done:
                key = pending.pop(f)
                _finish(f, key, out, progress, bars, note, on_done, per_task_bars)
                if not per_task_bars:
                    progress.update(overall, advance=1, state=f"{len(out.errors)} failed" if out.errors else "")
    except KeyboardInterrupt:
        out.interrupted = True
        # keep what had finished when the interrupt came
        for f, key in list(pending.items()):
            if f.done() and not f.cancelled() and f.exception() is None:
                pending.pop(f)
                _finish(f, key, out, progress, bars, note, on_done, per_task_bars)
        out.unfinished = [k for k in pending.values()]
        _end_workers(ex)
    else:
        ex.shutdown(wait=True)
    finally:
        progress.stop()
        queue.close()
        queue.cancel_join_thread()
    out.wall_s = time.perf_counter() - t0
    return out


def _finish(f: Future, key: str, out: RunOutcome, progress: Progress, bars: dict, note, on_done,
            per_task_bars: bool) -> None:
    exc = f.exception()
    if exc is not None:
        out.errors[key] = f"{type(exc).__name__}: {exc}"
        if key in bars:
            progress.update(bars[key], state="[red]failed")
        note(f"[red]{key}: failed: {out.errors[key]}")
        return
    value = f.result()
    out.results[key] = value
    if key in bars:
        total = next((t.total for t in progress.tasks if t.id == bars[key]), None)
        progress.update(bars[key], completed=total, state="[green]done")
        progress.stop_task(bars[key])
    line = on_done(key, value) if on_done else None
    if line:
        note(line)


def _warm_report() -> None:
    try:
        from ringsched.reports.html import warm_up

        warm_up()
    except Exception:  # noqa: BLE001 - only an optimisation
        pass


def policy_cost(name: str) -> float:
    """A rough relative run time, to start the slow policies first: elastic policies that
    re-plan every slot (GADGET, OASIS) are the slowest, then periodic ones, then the rest."""
    from ringsched.policies import policy_class

    cls = policy_class(name)
    return 1.0 + 2.0 * bool(getattr(cls, "periodic", False)) + 4.0 * (not getattr(cls, "rigid", True))


# ------------------------------------------------------------------------------ outputs
def _fmt_cell(m, v, best: bool) -> str:
    text = m.show(v)
    return f"[bold green]{text} *[/]" if best else text


def summary_table(rows: list[dict], title: str) -> Table:
    from ringsched.reports import TABLE_METRICS, best_rows

    table = Table(title=title, caption="* best value per column", header_style="bold")
    table.add_column("policy", no_wrap=True)
    for m in TABLE_METRICS:
        table.add_column(m.label, justify="right")
    best = {m.key: best_rows([r.get(m.key) for r in rows], m.better, m) for m in TABLE_METRICS}
    for i, r in enumerate(rows):
        table.add_row(str(r["policy"]), *(_fmt_cell(m, r.get(m.key), i in best[m.key]) for m in TABLE_METRICS))
    return table


def write_compare(out_dir: Path, results: list[dict], meta: dict) -> Path:
    """summary.csv, jobs.parquet, timeline.parquet, placements.parquet and report.html."""
    import pandas as pd

    from ringsched.reports import render_compare

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for r in results:
        s = {"policy": r["policy"], "trace": meta["trace"], "objective": meta["objective"]}
        s.update({k: v for k, v in r["summary"].items() if k != "policy"})
        rows.append(s)
    summary = pd.DataFrame(rows)
    if summary.empty:
        summary = pd.DataFrame(columns=["policy", "trace", "objective"])

    def stack(name: str) -> pd.DataFrame:
        frames = []
        for r in results:
            df = r[name].copy()
            df.insert(0, "policy", pd.array([r["policy"]] * len(df), dtype="string"))
            frames.append(df)
        if not frames:
            return pd.DataFrame({"policy": pd.array([], dtype="string")})
        return pd.concat(frames, ignore_index=True)

    jobs, timeline, changes = stack("jobs"), stack("timeline"), stack("changes")
    summary.to_csv(out_dir / "summary.csv", index=False)
    jobs.to_parquet(out_dir / "jobs.parquet", index=False)
    timeline.to_parquet(out_dir / "timeline.parquet", index=False)
    changes.to_parquet(out_dir / "placements.parquet", index=False)
    report = out_dir / "report.html"
    report.write_text(render_compare(summary, jobs, timeline, changes, meta), encoding="utf-8")
    return report


def simulator_description(kw: dict) -> str:
    parts = [f"slot {kw['slot_s']:g} s", f"restart {kw['restart_s']:g} s", f"checkpoint {kw['checkpoint_s']:g} s"]
    parts.append(f"failures MTBF {kw['mtbf_h']:g} h, MTTR {kw['mttr_h']:g} h" if kw.get("mtbf_h") else "no failures")
    if kw.get("contention"):
        parts.append("network contention")
    if kw.get("horizon_s") is not None:
        parts.append(f"horizon {kw['horizon_s']:g} s")
    return ", ".join(parts)


# ------------------------------------------------------------------------------ command
def compare(
    trace: str = w.TraceOpt,
    cluster: str = w.ClusterOpt,
    policies: str = w.PoliciesOpt,
    objective: str = w.ObjectiveOpt,
    profiles: list[Path] = w.ProfilesOpt,
    seed: int = w.SeedOpt,
    out: Path = typer.Option(..., "--out", help="Folder for summary.csv, jobs.parquet, timeline.parquet, "
                             "placements.parquet and report.html."),
    vc: str = w.VcOpt,
    skip_bad_rows: bool = w.SkipBadRowsOpt,
    window: str = w.WindowOpt,
    limit: int = w.LimitOpt,
    rigid: bool = w.RigidOpt,
    slot_s: float = w.SlotSOpt,
    restart_s: float = w.RestartSOpt,
    checkpoint_s: float = w.CheckpointSOpt,
    mtbf: float = w.MtbfOpt,
    mttr: float = w.MttrOpt,
    contention: bool = w.ContentionOpt,
    horizon_s: float = w.HorizonSOpt,
    workers: int = w.WorkersOpt,
) -> None:
    """Run several policies on the same trace and cluster in parallel; table, files and an HTML report."""
    if profiles:
        from ringsched.perfmodel.gpus import use_profiles

        use_profiles(profiles)
    t0 = time.perf_counter()
    err = Console(stderr=True)
    names = w.parse_policies(policies)
    objective = w.check_objective(objective)
    sim_kwargs = w.sim_config_kwargs(slot_s=slot_s, restart_s=restart_s, checkpoint_s=checkpoint_s, mtbf=mtbf,
                                     mttr=mttr, contention=contention, horizon_s=horizon_s)
    wl = w.load_workload(trace, cluster, vc=vc, window=window, limit=limit, seed=seed, rigid=rigid,
                         skip_bad_rows=skip_bad_rows)
    wl.report_bad_rows(err)
    n_workers = default_workers(len(names), workers)
    err.print(f"{len(names)} policies on {len(wl.jobs)} jobs of {trace}, cluster {wl.cluster.describe()}, "
              f"{n_workers} worker processes")
    tasks = [Task(p, run_policy, (p, wl.jobs, wl.cluster, sim_kwargs, seed, objective), len(wl.jobs), policy_cost(p))
             for p in names]
    outcome = run_parallel(
        tasks, workers=n_workers, console=err, warm=_warm_report,
        on_done=lambda k, v: f"{k}: finished in {v['summary']['wall_s']:.1f} s "
                             f"({v['summary']['completed']}/{v['summary']['jobs']} jobs completed)")
    results = [outcome.results[p] for p in names if p in outcome.results]
    if outcome.warm_thread is not None:
        outcome.warm_thread.join()
    meta = {"trace": trace, "cluster": cluster, "cluster_description": wl.cluster.describe(), "seed": seed,
            "objective": objective, "policies": names, "jobs": len(wl.jobs),
            "simulator": simulator_description(sim_kwargs) + (", rigid jobs" if rigid else ", elastic jobs"),
            "unfinished": outcome.unfinished + [f"{k} (failed)" for k in outcome.errors],
            "workers": outcome.workers, "wall_s": time.perf_counter() - t0}
    report = write_compare(out, results, meta)
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 200))
    if results:
        console.print(summary_table([{"policy": r["policy"], **r["summary"]} for r in results],
                                    f"{trace} on {wl.cluster.describe()} (seed {seed}, objective {objective})"))
    for k, e in outcome.errors.items():
        err.print(f"[red]{k} failed: {e}")
    if outcome.interrupted:
        err.print(f"interrupted: kept {len(results)} finished policies"
                  + (f"; not finished: {', '.join(outcome.unfinished)}" if outcome.unfinished else ""))
    print(f"report: {report}")
    if outcome.interrupted:
        raise typer.Exit(130)
    if outcome.errors:
        raise typer.Exit(1)
