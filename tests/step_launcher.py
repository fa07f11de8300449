"""A launcher without processes, for running the real controller in milliseconds.

Every ``poll`` advances a fake clock by ``tick_s``; each running attempt then makes the steps
its placement's true step time allows (``true_speed``, a SpeedModel the test sets, e.g. slower
than the controller's prior, so the controller refits it mid-run) and reports them as the
workers do (``started``, ``progress`` with measured step times, ``checkpoint`` files with their
checksum, ``done`` or ``stopped``, one ``exit`` per rank). It also checks, as it goes, what no
launcher may be asked: a job started twice at once, a server given more workers than GPUs, or
a GPU slot given to two live ranks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FakeRun:
    attempt: object
    config: dict
    step_s: float
    samples: float
    step: int
    stopping: bool = False
    killed: bool = False
    carry_s: float = 0.0
    events: list = field(default_factory=list)


class StepLauncher:
    name = "fake"

    def __init__(self, cluster, true_speed, tick_s: float = 0.25):
        self.cluster, self.true_speed, self.tick_s = cluster, true_speed, tick_s
        self.t = 0.0
        self.runs: dict[int, FakeRun] = {}
        self.pending: list = []
        self.starts: list[tuple[float, str, tuple]] = []  # (clock, job, placement) of every start
        self.violations: list[str] = []
        self.max_shared_server = 0  # the most live ranks one server held at once

    def clock(self) -> float:
        return self.t

    def start(self, attempt, config) -> None:
        job = config["job"]
        if any(r.config["job"] == job for r in self.runs.values()):
            self.violations.append(f"{job} started at {self.t} while an attempt of it runs")
        used = [0] * self.cluster.num_servers
        for r in list(self.runs.values()) + [None]:
            for s in (r.attempt.placement if r is not None else attempt.placement):
                used[s] += 1
        over = [s for s, n in enumerate(used) if n > int(self.cluster.gpus[s])]
        self.max_shared_server = max(self.max_shared_server, *used)
        if over:
            self.violations.append(f"server {over[0]} over capacity at {self.t} starting {job}")
        held = {(s, k) for r in self.runs.values() for s, k in zip(r.attempt.placement, r.config["slots"])}
        mine = list(zip(attempt.placement, config["slots"], strict=True))
        if len(set(mine)) < len(mine) or held & set(mine):
            self.violations.append(f"{job} given GPU slots {mine} at {self.t} while others hold {sorted(held)}")
        j = attempt.job
        step_s = self.true_speed.step_time_s(j.model, j.local_bsz, self.true_speed.shape(attempt.placement))
        resume = config["resume"] or {"samples": 0, "step": 0}
        run = self.runs[attempt.id] = FakeRun(attempt, config, step_s, float(resume["samples"]), int(resume["step"]))
        self.starts.append((self.t, job, tuple(attempt.placement)))
        self.pending += [(attempt.id, r, {"ev": "started", "step": run.step, "samples": run.samples})
                         for r in range(attempt.world)]

    def stop(self, attempt) -> None:
        if attempt.id in self.runs:
            self.runs[attempt.id].stopping = True

    def kill(self, attempt) -> None:
        if attempt.id in self.runs:
            self.runs[attempt.id].killed = True

    def poll(self, timeout_s: float) -> list:
        self.t += self.tick_s
        out, self.pending = self.pending, []
        for aid, run in list(self.runs.items()):
            out += self._advance(aid, run)
        return out

    def _checkpoint(self, aid: int, run: FakeRun, done: bool) -> dict:
        folder = Path(run.config["ckpt_dir"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"a{aid}-s{run.step}{'-done' if done else ''}.pt"
        data = f"{run.config['job']} {run.step} {run.samples}".encode()
        path.write_bytes(data)
        return {"ev": "checkpoint", "step": run.step, "samples": int(run.samples), "done": done, "path": str(path),
                "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}

    def _end(self, aid: int, run: FakeRun, rank0: list[dict], rc: int) -> list:
        del self.runs[aid]
        world = run.attempt.world
        return [(aid, 0, ev) for ev in rank0] + [(aid, r, {"ev": "exit", "rc": rc}) for r in range(world)]

    def _advance(self, aid: int, run: FakeRun) -> list:
        if run.killed:
            return self._end(aid, run, [], -9)
        if run.stopping:
            return self._end(aid, run, [self._checkpoint(aid, run, False),
                                        {"ev": "stopped", "step": run.step, "samples": run.samples}], 0)
        work, batch = run.config["work_samples"], run.attempt.world * run.config["local_bsz"]
        run.carry_s += self.tick_s
        steps = min(int(run.carry_s / run.step_s), -(-int(work - run.samples) // batch))
        run.carry_s -= steps * run.step_s
        run.step += steps
        run.samples = min(float(work), run.samples + steps * batch)
        out = [(aid, 0, {"ev": "progress", "step": run.step, "samples": run.samples,
                         "times": [run.step_s] * min(steps, 50)})] if steps else []
        if run.samples >= work:
            out += self._end(aid, run, [self._checkpoint(aid, run, True),
                                        {"ev": "done", "step": run.step, "samples": run.samples}], 0)
        return out

    def reap(self, stale) -> None:
        pass

    def close(self) -> None:
        self.runs.clear()
