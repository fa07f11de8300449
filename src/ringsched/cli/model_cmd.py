"""``ringsched model ...``: calibrate, predict, measure fidelity, tabulate the catalogue."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ringsched.errors import InputError

app = typer.Typer(help="The ring-all-reduce performance model: fit, predict, fidelity.", no_args_is_help=True,
                  epilog="Example: ringsched model table --cluster examples/cluster.yaml -m resnet50")

def working(text: str):
    """A spinner with the elapsed time on stderr while a long step runs (terminals only)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    bar = Progress(SpinnerColumn(), TextColumn(text, markup=False), TimeElapsedColumn(), console=err,
                   transient=True, disable=not err.is_terminal)
    bar.add_task(text, total=None)
    return bar


# Placements shown by the model table: (workers, servers).
DEMO_PLACEMENTS = ((8, 1), (8, 2), (16, 2), (16, 4), (32, 4), (64, 8), (128, 16))


@app.command("fit", epilog="Example: ringsched model fit DATA.csv --out PARAMS.json --model ring")
def fit_cmd(
    data: Path = typer.Argument(..., help="Measured step times (Pollux or num_nodes format CSV)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the parameters here (JSON); default stdout."),
    model: str = typer.Option("ring", help="Which model to fit: ring (ringsched) or pollux."),
) -> None:
    """Fit a step-time model to measured step times."""
    from ringsched.perfmodel.data import read_placements
    from ringsched.perfmodel.fit import MODELS, fit

    if model not in MODELS:
        raise InputError(f"unknown model {model!r}; known: {', '.join(MODELS)}", field="--model")
    _, table = read_placements(data, require_step_time=True)
    with working(f"fitting {model} on {len(table.step_time):,} rows"):
        res = fit(MODELS[model], table)
    text = json.dumps(res.checked_json(str(data)), indent=2, sort_keys=True, allow_nan=False) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        Console(stderr=True).print(
            f"fitted [bold]{model}[/] on {res.rows} rows: median error {res.median_ape:.1%}, "
            f"p90 {res.p90_ape:.1%} -> {out}")


@app.command("predict", epilog="Example: ringsched model predict PARAMS.json QUERY.csv --out PRED.csv")
def predict_cmd(
    params: Path = typer.Argument(..., help="Parameters written by `ringsched model fit`."),
    query: Path = typer.Argument(..., help="Placements to predict (same formats, without step_time)."),
    out: Path = typer.Option(None, "--out", "-o", help="Write the CSV here; default stdout."),
) -> None:
    """Predict step times: every query column plus step_time_pred (seconds)."""
    from ringsched.perfmodel.data import read_placements
    from ringsched.perfmodel.fit import load_fitted
    from ringsched.perfmodel.params_io import read_params_json

    doc = read_params_json(params)
    try:
        model, p = load_fitted(doc)
    except (ValueError, TypeError) as e:
        raise InputError(str(e), file=str(params), field="params") from None
    df, table = read_placements(query, require_step_time=False)
    df = df.copy()
    df["step_time_pred"] = model.predict(p, table)
    target = sys.stdout if out is None else open(out, "w", newline="")
    try:
        df.to_csv(target, index=False, lineterminator="\n")
    finally:
        if out is not None:
            target.close()


def _profile_dirs(dirs: list[Path]) -> list[Path]:
    found = []
    for d in dirs:
        if not d.is_dir():
            raise InputError("no such directory", file=str(d))
        if (d / "placements.csv").exists() or (d / "scalability.csv").exists():
            found.append(d)
        else:
            subs = sorted(s for s in d.iterdir() if (s / "placements.csv").exists() or (s / "scalability.csv").exists())
            if not subs:
                raise InputError("has no placements.csv or scalability.csv (nor subfolders with them)", file=str(d))
            found.extend(subs)
    return found


@app.command("fidelity", epilog="Example: ringsched model fidelity ../shared/profiles/pollux-measured --seeds 5 --json")
def fidelity_cmd(
    dirs: list[Path] = typer.Argument(..., help="Pollux-format profile folder(s), or a folder of them."),
    seeds: int = typer.Option(5, min=1, help="Number of random shape splits."),
    train_frac: float = typer.Option(0.25, min=0.01, max=0.99, help="Share of placement shapes used for fitting."),
    as_json: bool = typer.Option(False, "--json", metavar="", help="Flag: print one JSON object instead of a table."),
) -> None:
    """Cross-validated step-time error of ringsched's model vs Pollux's (docs/model.md)."""
    from ringsched.perfmodel.data import read_pollux_profile_dir
    from ringsched.perfmodel.fidelity import cross_validate

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    folders = _profile_dirs(dirs)
    results = []
    err = Console(stderr=True)
    with Progress(TextColumn("fidelity"), BarColumn(), MofNCompleteColumn(), TextColumn("profiles"),
                  TimeElapsedColumn(), TextColumn("{task.fields[name]}", markup=False), console=err,
                  disable=not err.is_terminal, transient=True) as bar:
        task = bar.add_task("fidelity", total=len(folders), name="")
        for d in folders:
            bar.update(task, name=d.name)
            if not err.is_terminal:
                err.print(f"fidelity: {d.name} ({seeds} seeds)", markup=False, highlight=False)
            results.append(cross_validate(read_pollux_profile_dir(d), d.name, seeds=seeds, train_frac=train_frac))
            bar.advance(task)
    if as_json:
        print(json.dumps({"seeds": seeds, "train_frac": train_frac, "profiles": [r.to_json() for r in results]},
                         indent=2, sort_keys=True))
        return
    t = Table(title=f"Step-time error on held-out placement shapes ({train_frac:.0%} of shapes fitted, {seeds} seeds)")
    for col in ("profile", "rows", "shapes", "ringsched median", "ringsched p90", "Pollux median", "Pollux p90"):
        t.add_column(col, justify="left" if col == "profile" else "right")
    for r in results:
        ours_m, ours_p = r.median_ape["ring"], r.p90_ape["ring"]
        pol_m, pol_p = r.median_ape["pollux"], r.p90_ape["pollux"]
        fmt = lambda v, other: f"[bold green]{v:.1%}[/]" if v < other else f"{v:.1%}"  # noqa: E731
        cells = [fmt(ours_m, pol_m), fmt(ours_p, pol_p), fmt(pol_m, ours_m), fmt(pol_p, ours_p)]
        t.add_row(Text(r.name), str(r.rows), str(r.shapes), *cells)  # a folder name: plain text
    Console().print(t)


def print_catalogue_tables(cluster_spec: str, models: list[str] | None = None, width: int | None = None) -> None:
    """The demo: iteration time, scaling efficiency and throughput for the built-in models, as
    many placements as fit the terminal (100 columns when piped; ``width`` overrides)."""
    import numpy as np

    from ringsched.cluster import load_cluster
    from ringsched.perfmodel import catalogue
    from ringsched.perfmodel.ring import scaling_efficiency, step_time_s, throughput_sps
    from ringsched.perfmodel.speed import SpeedModel
    from ringsched.reports.terminal import fit_to_width, stdout_console

    cluster = load_cluster(cluster_spec)
    g = int(cluster.gpus.max())
    n = cluster.num_servers
    places = [(w, k) for w, k in DEMO_PLACEMENTS if k <= n and w <= k * g and w >= k]
    if not places:
        places = [(min(g, cluster.total_gpus), 1)]
    w = np.array([1] + [p[0] for p in places])
    k = np.array([1] + [p[1] for p in places])
    speed = SpeedModel(cluster)  # the first server's GPU type (docs/catalogue.md, "GPU types")
    step_rows, eff_rows = [], []
    for name in models or catalogue.profile_names():
        prof = catalogue.get_profile(name)
        p = speed.params(prof.name)
        b = prof.default_local_bsz
        step_rows.append([prof.name, str(b), *[f"{1e3 * x:.1f}" for x in step_time_s(p, b, w, k)]])
        eff_rows.append([prof.name, str(b), *[f"{e:.0%}" for e in scaling_efficiency(p, b, w, k)],
                         f"{throughput_sps(p, b, w, k).max():,.0f}"])
    heads = ["1 GPU", *[f"{a} on {c}" for a, c in places]]

    def builder(title: str, rows: list[list[str]], last: str | None):
        def build(m: int) -> Table:
            left = len(heads) - m
            t = Table(title=Text(title), caption=Text(f"{left} more placement{'s' if left > 1 else ''}: a wider "
                                                      "terminal shows them") if left else None)
            for h in ["model", "batch", *heads[:m]] + ([last] if last else []):
                t.add_column(Text(h), justify="left" if h == "model" else "right", no_wrap=True)
            for r in rows:
                cells = r[:2 + m] + ([r[-1]] if last else [])
                t.add_row(*(Text(c) for c in cells))
            return t
        return build

    con = stdout_console() if width is None else Console(width=width, emoji=False, highlight=False)
    width = con.width
    con.print(Text.assemble(("Cluster", "bold"), f" {cluster_spec}: {cluster.describe()}"))
    con.print(fit_to_width(builder("Predicted iteration time, ms (per-worker batch = profile default)",
                                   step_rows, None), len(heads), width))
    con.print(fit_to_width(builder("Scaling efficiency (throughput / (workers x 1-GPU throughput))",
                                   eff_rows, "best samples/s"), len(heads), width))


@app.command("table", epilog="Example: ringsched model table --cluster examples/cluster.yaml -m resnet50 -m bert_base")
def table_cmd(
    cluster: str = typer.Option("16x8", help="Cluster spec NxG[,key=value...] or a YAML file."),
    model: list[str] = typer.Option(None, "--model", "-m", help="Only these built-in models (repeatable)."),
) -> None:
    """Tabulate the built-in models' predicted step time and scaling on a cluster (what make table prints)."""
    print_catalogue_tables(cluster, model or None)
