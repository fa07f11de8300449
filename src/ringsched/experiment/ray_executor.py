"""The Ray executor: the cells of a sweep or of the suite as Ray tasks, the same cells as the
local pool (``executors.run_parallel``) and the same results (tests check they are identical),
with the same progress (a bar, ``on_done`` lines) and the same Ctrl-C / SIGTERM rule: the cells
finished by then are kept, the others cancelled."""

from __future__ import annotations

import os
import time

from rich.console import Console

from ringsched.errors import InputError
from ringsched.experiment.executors import RunOutcome, default_workers

RAY_OBJECT_STORE_BYTES = 128 * 1024 * 1024  # a local Ray instance only moves small summaries


def run_ray(cells: list[dict], run_cell, *, address: str | None, workers: int | None, console: Console,
            on_done=None) -> RunOutcome:
    """The cells as Ray tasks of ``run_cell`` (a module-level function). Joins the Ray instance
    already initialised in this process, else
    ``address`` (``auto``, ``ray://host:port``, ...) or $RAY_ADDRESS, else starts a local one with
    ``workers`` CPUs (``--address local`` too). A remote cluster needs ringsched installed on its
    nodes. ``on_done(key, value)`` may return a line to print when a cell finishes."""
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs the 'ray' package (pip install ray)", field="engine") from None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = RunOutcome()
    t0 = time.perf_counter()
    started_here = False
    if not ray.is_initialized():
        kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address == "local" or (not address and not os.environ.get("RAY_ADDRESS")):
            kw.update(address="local", num_cpus=default_workers(len(cells), workers),
                      object_store_memory=RAY_OBJECT_STORE_BYTES)
        else:
            kw["address"] = address
        try:
            ray.init(**kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise InputError(f"cannot start or reach Ray at {address or 'a new local instance'}: {e}",
                             field="address") from None
        started_here = True
    out.workers = int(ray.cluster_resources().get("CPU", 0))
    task = ray.remote(num_cpus=1, max_retries=0)(run_cell)
    refs = {task.remote(c): c["key"] for c in cells}
    pending = list(refs)
    progress = Progress(TextColumn("ray cells", style="bold"), BarColumn(bar_width=30), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, disable=not console.is_terminal)
    bar = progress.add_task("cells", total=len(cells))
    try:
        progress.start()
        while pending:
            done, pending = ray.wait(pending, num_returns=1, timeout=0.5)
            for ref in done:
                key = refs[ref]
                try:
                    out.results[key] = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a failed cell is reported, the others go on
                    cause = getattr(e, "cause", None) or e
                    out.errors[key] = f"{type(cause).__name__}: {cause}"
                    progress.console.print(f"{key}: failed: {out.errors[key]}", style="red", markup=False,
                                           emoji=False)
                else:
                    line = on_done(key, out.results[key]) if on_done else None
                    if line:
                        progress.console.print(line, markup=False, emoji=False, highlight=False)
                progress.update(bar, advance=1)
    except KeyboardInterrupt:
        out.interrupted = True
        out.unfinished = [refs[r] for r in pending]
        for r in pending:
            try:
                ray.cancel(r, force=True)
            except Exception:  # noqa: BLE001
                pass
    finally:
        progress.stop()
        if started_here:
            ray.shutdown()
    out.wall_s = time.perf_counter() - t0
    return out
