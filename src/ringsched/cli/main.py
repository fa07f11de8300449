"""The ``ringsched`` command line. Thin: parse, call the library, print.

Bad input raises ``InputError`` anywhere below; ``main`` turns it, and every usage error, into
one line on stderr and exit code 2, with no traceback (``cli.errors``).
"""

from __future__ import annotations

import sys

import typer

from ringsched.cli import compare_cmd, model_cmd, simulate_cmd, sweep_cmd
from ringsched.cli import run_cmd
from ringsched.cli import errors, optimum_cmd

app = typer.Typer(
    name="ringsched",
    help="GADGET online scheduling of ring-all-reduce training jobs: model, policies, simulator.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(model_cmd.app, name="model")
app.command("simulate")(simulate_cmd.simulate)
app.command("compare")(compare_cmd.compare)
app.command("sweep")(sweep_cmd.sweep)
app.command("run")(run_cmd.run)
app.command("optimum-check")(optimum_cmd.optimum_check)


@app.command("policies")
def policies() -> None:
    """List the scheduling policies."""
    from ringsched.policies import policy_class, policy_names

    for name in policy_names():
        cls = policy_class(name)
        doc = (cls.__dict__.get("__doc__") or sys.modules[cls.__module__].__doc__ or "").strip()
        print(f"{name:10s} {doc.splitlines()[0] if doc else ''}")


@app.command()
def demo(
    cluster: str = typer.Option("16x8", help="Cluster spec NxG[,key=value...] or a YAML file."),
) -> None:
    """Predicted iteration time, throughput and scaling of the built-in models on a cluster."""
    model_cmd.print_catalogue_tables(cluster)


def main() -> None:
    sys.exit(errors.run(app))


if __name__ == "__main__":
    main()
