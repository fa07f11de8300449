"""Text on the terminal: user strings (policy specs, submitters' names) are shown as typed, never
read as rich markup or emoji shortcodes (issue 19: a sweep title `synthetic:100` printed an
emoji); tables and lists are not cut."""

from __future__ import annotations


def test_simulate_progress_shows_the_policy_spec_as_plain_text():
    """The progress bar's label is the user's string: `[bold]`/`:smile:` stay as typed.
    Mutant caught: the old ``TextColumn("[bold]{task.description}")`` (reads markup)."""
    from ringsched.cli.simulate_cmd import LazyProgress

    bar = LazyProgress("x[bold]y[/bold]:smile:", 10)
    bar.t0 -= 5.0  # as if the run had lasted 5 s: the bar appears
    bar(0.0, 1, 10)
    try:
        task = bar.bar.tasks[0]
        assert bar.bar.columns[0].render(task).plain == "x[bold]y[/bold]:smile:"
    finally:
        bar.close()


def test_queue_shows_a_submitters_name_as_typed(cli, monkeypatch):
    """`ringsched queue` prints what other users submitted: `[blink]` or `:smile:` in a user
    name stays as typed. Mutant caught: cells passed to rich as plain (markup) strings."""
    import ringsched.cli.client_cmds as cc

    job = {"id": "digits", "state": "running", "user": "[blink]eve[/blink]:smile:", "priority": 0, "workers": 2,
           "placement": [0, 1], "done_samples": 1, "work_samples": 2, "loss_first": 2.0, "loss_last": 1.0}

    class Fake:
        def get(self, path):
            return [job]

    monkeypatch.setattr(cc, "_client", lambda url, token: Fake())
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = cli("queue")
    assert code == 0, err
    assert "[blink]eve[/blink]:smile:" in out


def test_run_summary_keeps_names_and_losses_whole_and_errors_plain():
    """`ringsched run`'s closing table at 100 columns (a pipe): job names and losses on one line,
    an error's brackets shown as typed. Mutant caught: the old table (cells wrapped and cut at
    80 columns, ``demo0-digits-c…``; strings read as markup)."""
    from rich.console import Console

    from ringsched.cli.run_cmd import print_summary

    job = {"job": "demo0-digits-cnn", "status": "completed", "workers": [2, 2, 2], "resizes": 0,
           "loss_first": 2.3, "loss_last": 0.000544, "median_step_error": 0.55}
    bad = {**job, "job": "demo1-synth-mlp", "status": "failed", "error": "[Errno 2] no such file: [red]x",
           "loss_last": 0.000233}
    s = {"policy": "gadget", "cluster": "2x2", "backend": "local", "wall_s": 55.2, "jobs": [job, bad],
         "completed": 1, "failed": 1, "resizes": 0, "median_step_error": 0.2, "median_step_error_informed": 0.3,
         "median_step_error_refit": 0.04}
    console = Console(width=100, record=True, color_system=None)
    print_summary(s, console)
    text = console.export_text()
    assert "demo0-digits-cnn" in text and "demo1-synth-mlp" in text and "2.3 -> 0.000544" in text
    assert "[Errno 2]" in text and "[red]x" in text  # the status may wrap; its brackets stay


def test_policies_lists_each_policy_with_a_whole_first_paragraph_aligned(cli):
    """`ringsched policies`: one line per policy, every description starting in the same column,
    whole (the docstring's first paragraph, joined) and ending with a full stop or a closing
    bracket. Mutant caught: the old first line of the docstring (sia's "... one MILP per round",
    sjf-bco's "(Yu, Liu et al.,") padded to 10 (fifo-strict's description one column out)."""
    import sys

    from ringsched.policies import policy_class, policy_names

    code, out, err = cli("policies")
    assert code == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == policy_names()
    starts = {len(line) - len(line.split(maxsplit=1)[1]) for line in lines}
    assert len(starts) == 1, out
    for line in lines:
        name, text = line.split(maxsplit=1)
        cls = policy_class(name)
        doc = " ".join((cls.__dict__.get("__doc__") or sys.modules[cls.__module__].__doc__ or "").split())
        assert text.endswith((".", ")")) and doc.startswith(text), (name, text)


def test_status_shows_sample_counts_as_whole_numbers(cli, monkeypatch):
    """`ringsched status JOB`: the samples done and to do as whole numbers with thousands
    separators, the same whether the service sent a float or an int. Mutant caught: the old
    ``_fmt`` (a float with ``.3g``: "1.5e+03/3e+03 samples" beside an int's "3000")."""
    import ringsched.cli.client_cmds as cc

    assert [cc.count_text(v) for v in (3000.0, 3000, 0.0, 2999.7, 1234567, None, float("nan"))] == [
        "3,000", "3,000", "0", "2,999", "1,234,567", "-", "-"]
    job = {"id": "j", "state": "running", "reason": "", "user": "eve", "done_samples": 1500.0, "work_samples": 3000,
           "loss_first": 2.0, "loss_last": 1.0, "attempts": []}

    class Fake:
        def get(self, path):
            return job

    monkeypatch.setattr(cc, "_client", lambda url, token: Fake())
    code, out, err = cli("status", "j")
    assert code == 0, err
    assert "1,500/3,000 samples" in out, out
