"""The ``ringsched`` command line. Thin: parse, call the library, print.

Bad input raises ``InputError`` anywhere below; ``main`` turns it, and every usage error, into
one line on stderr and exit code 2, with no traceback (``cli.errors``).
"""

from __future__ import annotations

import sys

import typer

from ringsched.backends import signals

from ringsched.cli import compare_cmd, model_cmd, simulate_cmd, sweep_cmd
from ringsched.cli import run_cmd
from ringsched.cli import errors, optimum_cmd
from ringsched.cli import suite_cmd
from ringsched.cli import client_cmds, serve_cmd

app = typer.Typer(
    name="ringsched",
    help="GADGET online scheduling of ring-all-reduce training jobs: model, policies, simulator.",
    epilog="Example: ringsched demo   (every policy on the built-in demo workload; report in results/demo)",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(model_cmd.app, name="model")
app.command("simulate", epilog=simulate_cmd.EPILOG)(simulate_cmd.simulate)
app.command("compare", epilog=compare_cmd.EPILOG)(compare_cmd.compare)
app.command("sweep", epilog=sweep_cmd.EPILOG)(sweep_cmd.sweep)
app.command("run", epilog="Example: ringsched run --backend local --cluster 2x2 --jobs demo:3 --policy gadget")(
    run_cmd.run)
app.command("optimum-check", epilog="Example: ringsched optimum-check --instances 20 --seed 0")(
    optimum_cmd.optimum_check)
app.command("suite", epilog="Example: ringsched suite --quick --out results/suite")(suite_cmd.suite)
app.command("serve", epilog=serve_cmd.EPILOG)(serve_cmd.serve)
for _verb, _example in (("submit", "jobs.yaml"), ("queue", "--all"), ("status", "digits"), ("cancel", "digits"),
                        ("hold", "digits"), ("release", "digits"), ("logs", "digits")):
    app.command(_verb, epilog=f"Example: ringsched {_verb} {_example}   (service at --url or RINGSCHED_URL)")(
        getattr(client_cmds, _verb))


def _version(value: bool) -> None:
    if value:
        from ringsched.version import __version__

        print(f"ringsched {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", metavar="", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """GADGET online scheduling of ring-all-reduce training jobs: model, policies, simulator."""


@app.command("policies", epilog="Example: ringsched policies")
def policies() -> None:
    """List the scheduling policies (built in, and from installed packages' ringsched.policies entry points)."""
    from ringsched.experiment.plugins import load_policy_plugins
    from ringsched.policies import policy_names
    from ringsched.policies.registry import policy_summary

    load_policy_plugins()
    names = policy_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:{width}s}  {policy_summary(name)}")


@app.command(epilog="Example: ringsched demo --out results/demo")
def demo(
    out: str = typer.Option("results/demo", "--out", help="Folder for the demo's tables and report.html."),
    workers: int = typer.Option(None, "--workers", min=1, help="Worker processes (default: min(policies, CPUs))."),
) -> None:
    """What `make demo` runs: every policy on the built-in demo workload (demo:1000 on 16x8); table and report."""
    args = ["compare", "--trace", DEMO_TRACE, "--cluster", "16x8", "--policies", "all", "--out", out]
    if workers:
        args += ["--workers", str(workers)]
    code = app(args, standalone_mode=False)
    if code:
        raise typer.Exit(code)


DEMO_TRACE = "demo:1000"


def main() -> None:
    signals.terminate_gracefully()  # SIGTERM: the clean stop Ctrl-C gets, for every command
    code = errors.run(app)
    sys.stdout.flush()
    sys.stderr.flush()
    signals.exit_at_signal(code)  # a signal during teardown keeps this outcome
    sys.exit(code)


if __name__ == "__main__":
    main()
