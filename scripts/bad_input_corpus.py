"""Run the bad-input corpus (tests/bad_inputs/corpus.py) through the real CLI and count failures.

Every case must end with exactly one line ``ringsched: error: ...`` on stderr, exit code 2,
no traceback, within the time and memory limits, and the line must name the file, the row
(1-based, as in the file) and the field the case broke. Each case runs ``ringsched.cli.main``
in a forked child of this process (imports paid once), in its own folder, process group,
address-space limit and wall-clock limit.

    .venv/bin/python scripts/bad_input_corpus.py [--only TEXT] [--show N] [--timeout-s S] [--jobs J] [--dump FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bad_inputs import cases  # noqa: E402
from bad_inputs.corpus import SENTINEL, Case  # noqa: E402

CATEGORIES = ("traceback", "hang", "silently accepted", "wrong exit code", "not one line", "missing file",
              "missing row", "missing field", "unexpected usage error")
# click's words for a command line it could not parse: a case that is not a usage error but ends
# on one never reached the input it was written to break (a stale option, a renamed command)
USAGE_WORDS = ("No such option", "No such command", "unexpected extra argument", "Missing option",
               "Missing argument")


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def start_case(case: Case, folder: Path, *, extra_mem_bytes: int) -> dict:
    """Fork a child that runs the case; returns its handle (pid, start time, argv)."""
    from ringsched.cli.main import main

    argv = case.write(folder)
    out_f, err_f = folder / ".stdout", folder / ".stderr"
    limit = _vm_bytes() + extra_mem_bytes
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.setpgid(0, 0)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            fo, fe = os.open(out_f, os.O_WRONLY | os.O_CREAT), os.open(err_f, os.O_WRONLY | os.O_CREAT)
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            # streams on the new descriptors (under pytest sys.stderr is its capture, not fd 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            os.chdir(folder)
            os.environ.update(case.env)
            sys.argv = ["ringsched", *argv]
            try:
                main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:  # noqa: BLE001 - what main let through is what we measure
                import traceback

                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return {"pid": pid, "t0": time.monotonic(), "argv": argv, "err_f": err_f}


def poll_case(h: dict, *, timeout_s: float) -> dict | None:
    """The result once the child has ended (killed, with its group, past ``timeout_s``), else None."""
    done, status = os.waitpid(h["pid"], os.WNOHANG)
    timed_out = False
    if not done:
        if time.monotonic() - h["t0"] <= timeout_s:
            return None
        timed_out = True
        os.killpg(h["pid"], signal.SIGKILL)
        os.waitpid(h["pid"], 0)
    try:
        os.killpg(h["pid"], signal.SIGKILL)  # leftovers of the case (worker processes)
    except ProcessLookupError:
        pass
    rc = -9 if timed_out else os.waitstatus_to_exitcode(status)
    err = h["err_f"].read_text(errors="replace") if h["err_f"].exists() else ""
    return {"rc": rc, "stderr": err, "timed_out": timed_out, "wall_s": time.monotonic() - h["t0"], "argv": h["argv"]}


def run_all(todo: list[Case], tmp: Path, *, jobs: int, timeout_s: float, extra_mem_bytes: int):
    """Yield (case, folder, result) for every case, ``jobs`` children at a time."""
    running: list[tuple[Case, Path, dict]] = []
    queue = list(enumerate(todo))
    while queue or running:
        while queue and len(running) < jobs:
            i, case = queue.pop(0)
            folder = tmp / f"c{i:04d}"
            running.append((case, folder, start_case(case, folder, extra_mem_bytes=extra_mem_bytes)))
        still = []
        for case, folder, h in running:
            res = poll_case(h, timeout_s=timeout_s)
            if res is None:
                still.append((case, folder, h))
            else:
                yield case, folder, res
        running = still
        time.sleep(0.01)


def classify(case: Case, folder: Path, res: dict) -> list[str]:
    """The failure categories of one result (empty: the case passed)."""
    err, rc = res["stderr"], res["rc"]
    if res["timed_out"] or rc < 0 or "MemoryError" in err:
        return ["hang"]
    if "Traceback (most recent call last)" in err:
        return ["traceback"]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    line = lines[-1] if lines else ""
    sentinel = case.field != SENTINEL.lstrip("-") and SENTINEL in line and "not a directory" in line
    if rc == 0 or sentinel:
        return ["silently accepted"]
    bad = []
    if rc != 2:
        bad.append("wrong exit code")
    if len(lines) != 1 or not line.startswith("ringsched: error: "):
        bad.append("not one line")
    want_file = case.expected_file(folder)
    if want_file and want_file not in line:
        bad.append("missing file")
    if case.row is not None and f"row {case.row}" not in line:
        bad.append("missing row")
    if case.field and case.field.lower().lstrip("-") not in line.lower():
        bad.append("missing field")
    if not case.usage and any(w in line for w in USAGE_WORDS):
        bad.append("unexpected usage error")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="Run only the cases whose name contains this text.")
    ap.add_argument("--show", type=int, default=3, help="Failures shown per category.")
    ap.add_argument("--timeout-s", type=float, default=30.0, help="Wall-clock limit of one case.")
    ap.add_argument("--jobs", type=int, default=2, help="Cases run at once.")
    ap.add_argument("--mem-gib", type=float, default=2.0, help="Address space a case may add, GiB.")
    ap.add_argument("--dump", type=Path, help="Write each case's name and last stderr line here (for review).")
    args = ap.parse_args()
    import ringsched.cli.main  # noqa: F401  (paid once, before the forks)

    todo = [c for c in cases() if args.only in c.name]
    counts: Counter = Counter()
    failed: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    t0 = time.monotonic()
    dumped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ringsched-corpus-") as tmp:
        for case, folder, res in run_all(todo, Path(tmp), jobs=args.jobs, timeout_s=args.timeout_s,
                                         extra_mem_bytes=int(args.mem_gib * 2**30)):
            if args.dump:
                dumped.append(f"{case.name}\t{res['rc']}\t{(res['stderr'].strip().splitlines() or [''])[-1]}")
            for cat in classify(case, folder, res):
                counts[cat] += 1
                last = res["stderr"].strip().splitlines()[-1:] or ["(no stderr)"]
                failed[cat].append(f"{case.name}: rc={res['rc']} {last[0][:160]}")
            for p in folder.rglob("*"):  # let the cleanup remove read-only folders
                if p.is_dir():
                    p.chmod(0o700)
    if args.dump:
        args.dump.write_text("\n".join(dumped) + "\n")
    bad_cases = sum(1 for c in CATEGORIES for _ in failed[c])
    print(f"bad-input corpus: {len(todo)} cases in {time.monotonic() - t0:.0f} s")
    for cat in CATEGORIES:
        print(f"  {cat:18s} {counts[cat]:4d}")
        for line in failed[cat][:args.show]:
            print(f"      {line}")
    print(f"  cases passed       {len(todo) - len({f.split(':')[0] for c in CATEGORIES for f in failed[c]})} "
          f"/ {len(todo)} ({bad_cases} failures)")
    sys.exit(1 if bad_cases else 0)


if __name__ == "__main__":
    main()
