"""The training process body, shared by the local and the Ray backends.

One worker = one process (a local subprocess or a Ray actor) = one rank of a PyTorch
DistributedDataParallel group: over NCCL on its slot's GPU when the machine has that GPU,
over gloo on the CPU otherwise (``bind_device``; both all-reduce in a ring). The job's entry point
``module:function`` receives a :class:`TrainContext` and trains through it::

    def main(ctx):
        torch.manual_seed(ctx.seed)
        net = Net()
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        model = ctx.prepare(net, opt)          # restores the checkpoint if any, wraps in DDP
        for idx in ctx.batches(len(dataset)):  # this rank's share of each global batch
            xb, yb = ctx.to_device(X[idx], y[idx])  # the rank's GPU, or the CPU
            loss = loss_fn(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            ctx.log(loss)

``ctx.batches`` owns the protocol: it stops when the job's work (samples) is done, saves a
checkpoint every ``ckpt_every_s`` seconds, and when the scheduler asks the job to stop (to
resize, move or preempt it) every rank agrees, by a one-element all-reduce each step, on the
step at which to stop, so rank 0 checkpoints and all ranks leave together. The data order is
a pure function of (seed, samples done), so a job resumed at another size sees the same
sample stream.

Events go back to the scheduler through ``emit`` (JSON-able dicts): ``started``, ``progress``
(rank 0: per-iteration times and losses), ``checkpoint`` (with the file's SHA-256),
``done``, ``stopped`` and ``error`` (with ``kind`` "user" for an exception from the entry
point, "comm" when the collective broke because a peer died, "ckpt" when the checkpoint to
resume from failed verification, "infra" when a checkpoint could not be written).
Checkpoints: ``ckpt_store`` (atomic, checksummed, loaded with ``weights_only=True``).

Rendezvous: rank 0 binds the PyTorch store's listening socket itself, on ``master_addr``
(127.0.0.1 locally), and hands it to ``TCPStore(master_listen_fd=...)``; torch's own server
would bind every interface.

The local backend's *zygote* (``zygote.py``) forks processes that run ``run_worker``; a Ray
actor runs the same ``run_worker`` with its own event list and stop flag.
"""

from __future__ import annotations

import collections
import importlib
import ipaddress
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

from ringsched.backends import ckpt_store, gpu_slots

PREFIX = "@@ringsched "
EXIT_USER_ERROR = 3
EXIT_COMM_ERROR = 4
EXIT_CKPT_ERROR = 5  # the checkpoint to resume from failed verification
EXIT_INFRA_ERROR = 6  # a checkpoint could not be written (disk full, I/O error)
EXIT_ABORTED = 7  # the launcher refused the connection of a worker it had written off
EXIT_ORPHANED = 8  # its scheduler died and it could not stop within the stop timeout

Emit = Callable[[dict], None]


class EntryError(Exception):
    """The entry point misused the context (a user error)."""


class CheckpointWriteError(Exception):
    """A checkpoint could not be written (an infrastructure failure, not the job's)."""


def is_comm_error(e: BaseException) -> bool:
    """True when ``e`` says the process group broke (a peer died), not the user's code."""
    try:
        import torch.distributed as dist

        if isinstance(e, getattr(dist, "DistError", ())):
            return True
    except ImportError:  # pragma: no cover
        pass
    msg = f"{type(e).__name__}: {e}"
    marks = ("Connection closed by peer", "Connection reset", "Broken pipe", "gloo", "Gloo", "ECONNRESET",
             "Socket Timeout", "connectFullMesh", "Timed out waiting", "Connection refused")
    return any(m in msg for m in marks)


class TrainContext:
    """What an entry point sees: its rank, batch, seed, args, and the training protocol."""

    def __init__(self, cfg: dict, emit: Emit, stop: threading.Event, device: str = "cpu"):
        self.job: str = cfg["job"]
        self.attempt: int = int(cfg.get("attempt", 0))
        self.rank: int = int(cfg["rank"])
        self.world_size: int = int(cfg["world"])
        self.local_bsz: int = int(cfg["local_bsz"])
        self.global_bsz: int = self.local_bsz * self.world_size
        self.work_samples: int = int(cfg["work_samples"])
        self.seed: int = int(cfg.get("seed", 0))
        self.args: dict = dict(cfg.get("args", {}))
        self.placement: list[int] = list(cfg.get("placement", []))
        self.server: int | None = self.placement[self.rank] if self.placement else None
        self.device: str = device  # "cuda:0" (its one visible GPU, under NCCL) or "cpu"
        self.step = 0
        self.samples_done = 0
        self.resumed = False
        self.state: dict = {}  # the entry's own state, saved in checkpoints
        self._emit = emit
        self._stop = stop
        self._ckpt_dir = cfg.get("ckpt_dir")
        self._resume = cfg.get("resume")
        self._saved_step: int | None = None  # the step of the last checkpoint written or resumed from
        self._ckpt_every_s = float(cfg.get("ckpt_every_s", 10.0))
        self._report_every_s = float(cfg.get("report_every_s", 0.5))
        self._model = None
        self._ddp = None
        self._opt = None
        self._blob = None
        self._loss: float | None = None
        self._times: list[float] = []
        self._losses: list[float] = []
        # this attempt's reported losses, for the checkpoint's sidecar (ckpt_store.loss_record)
        self._points: list[list] = []
        self._first: list[float] = []
        self._last: collections.deque = collections.deque(maxlen=10)
        self._ended: str | None = None
        self._perm_epoch = -1
        self._perm = None
        self._load()

    # ------------------------------------------------------------------ checkpoint
    def _load(self) -> None:
        """Restore the checkpoint the journal names (``cfg["resume"]``); nothing else is read."""
        if not self._resume:
            return
        blob = ckpt_store.load(self._resume)
        self._blob = blob
        self.step = int(blob["step"])
        self.samples_done = int(blob["samples"])
        self.state = dict(blob.get("state") or {})
        self.resumed = True
        self._saved_step = self.step

    def _save(self, *, done: bool = False) -> None:
        """Rank 0 writes a checkpoint; a periodic one that fails (disk full) is reported and
        training goes on, a final one that fails ends the attempt (``CheckpointWriteError``)."""
        if self.rank != 0 or not self._ckpt_dir or self._model is None:
            return
        if not done and self.step == self._saved_step:
            return  # this very step is checkpointed already (a stop right after a periodic save)
        t0 = time.perf_counter()
        blob = {"format": ckpt_store.CKPT_FORMAT, "job": self.job, "step": self.step, "samples": self.samples_done,
                "done": done, "world": self.world_size, "model": self._model.state_dict(),
                "optim": self._opt.state_dict() if self._opt is not None else None, "state": self.state}
        try:
            info = ckpt_store.save(Path(self._ckpt_dir), self.attempt, blob, self._loss_record())
        except OSError as e:
            self._emit({"ev": "ckpt-failed", "step": self.step, "errno": e.errno, "path": str(self._ckpt_dir),
                        "error": f"{type(e).__name__}: {e}"[:300]})
            raise CheckpointWriteError(f"checkpoint at step {self.step} not written: {e.strerror or e}") from None
        self._saved_step = self.step
        self._emit(dict(info, ev="checkpoint", save_s=round(time.perf_counter() - t0, 4)))

    # ------------------------------------------------------------------ public API
    def prepare(self, model, optimizer=None):
        """Move ``model`` to the rank's device, restore it (and ``optimizer``) from the job's
        checkpoint if there is one, then wrap it in DistributedDataParallel. Call once, before
        ``batches``. (Moved first: the optimizer's restored state follows its parameters.)"""
        from torch.nn.parallel import DistributedDataParallel as DDP

        if self._model is not None:
            raise EntryError("ctx.prepare was called twice")
        model.to(self.device)
        if self._blob is not None:
            model.load_state_dict(self._blob["model"])
            if optimizer is not None and self._blob.get("optim") is not None:
                optimizer.load_state_dict(self._blob["optim"])
            self._blob = None
        self._model, self._opt = model, optimizer
        self._ddp = DDP(model, device_ids=[0]) if self.device.startswith("cuda") else DDP(model)
        return self._ddp

    def to_device(self, *tensors):
        """The tensors on the rank's device (one tensor alone, several as a tuple)."""
        moved = tuple(t.to(self.device, non_blocking=True) for t in tensors)
        return moved[0] if len(moved) == 1 else moved

    def log(self, loss) -> None:
        """Record this step's loss (a float or a one-element tensor)."""
        self._loss = float(loss.detach().item() if hasattr(loss, "detach") else loss)

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def batches(self, dataset_size: int) -> Iterator:
        """This rank's sample indices (a LongTensor) for each step until the job's work is done
        or the scheduler stops it; checkpoints on the way."""
        import torch
        import torch.distributed as dist

        if self._model is None:
            raise EntryError("call ctx.prepare(model, optimizer) before ctx.batches()")
        if dataset_size < 1:
            raise EntryError("ctx.batches needs a dataset of at least one sample")
        last_ckpt = time.monotonic()
        last_report = time.monotonic()
        warm = 0
        prev_yield = None  # an iteration: from one yield to the next, checkpoint saves excluded
        saved_s = 0.0
        flag = torch.zeros(2, dtype=torch.int64, device=self.device)  # NCCL reduces GPU tensors only
        while True:
            if prev_yield is not None:  # the entry finished a step
                self.step += 1
                self.samples_done += self.global_bsz
                warm += 1
                if self._loss is not None and warm > 2:
                    self._losses.append(self._loss)
                self._loss = None
            if self.samples_done >= self.work_samples:
                self._report()
                self._save(done=True)
                self._ended = "done"
                self._emit({"ev": "done", "step": self.step, "samples": self.samples_done})
                return
            now = time.monotonic()
            flag[0] = 1 if self._stop.is_set() else 0
            flag[1] = 1 if (self.rank == 0 and now - last_ckpt >= self._ckpt_every_s) else 0
            if self.world_size > 1:
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            if flag[0]:
                self._report()
                self._save()
                self._ended = "stopped"
                self._emit({"ev": "stopped", "step": self.step, "samples": self.samples_done})
                return
            if flag[1]:
                t0 = time.monotonic()
                try:
                    self._save()
                except CheckpointWriteError:
                    pass  # reported; the next periodic checkpoint tries again
                last_ckpt = time.monotonic()
                saved_s += last_ckpt - t0
            idx = self._indices(dataset_size)
            now = time.monotonic()
            if prev_yield is not None and warm > 2:  # the first iterations build DDP buckets: not steady
                self._times.append(now - prev_yield - saved_s)
            if self.rank == 0 and now - last_report >= self._report_every_s:
                self._report()
                last_report = now
            saved_s = 0.0
            prev_yield = time.monotonic()
            yield idx

    # ------------------------------------------------------------------ internals
    def _report(self) -> None:
        if self.rank != 0:
            return
        if self._times or self._losses:
            self._emit({"ev": "progress", "step": self.step, "samples": self.samples_done,
                        "times": [round(t, 6) for t in self._times], "losses": [round(x, 6) for x in self._losses]})
        if self._losses:
            self._points.append([self.step, round(sum(self._losses) / len(self._losses), 6)])
            self._first.extend(self._losses[:10 - len(self._first)])
            self._last.extend(self._losses)
        self._times, self._losses = [], []

    def _loss_record(self) -> dict | None:
        """The losses this attempt reported so far (``ckpt_store.loss_record``), or None."""
        if not self._points:
            return None
        return {"points": self._points, "first": round(sum(self._first) / len(self._first), 6),
                "last": round(sum(self._last) / len(self._last), 6)}

    def _indices(self, n: int):
        import torch

        start = self.samples_done + self.rank * self.local_bsz
        pos = torch.arange(start, start + self.local_bsz, dtype=torch.int64)
        epochs = pos // n
        out = torch.empty_like(pos)
        for e in torch.unique(epochs).tolist():
            if e != self._perm_epoch:
                g = torch.Generator().manual_seed((self.seed * 1_000_003 + int(e)) % (2**63 - 1))
                self._perm, self._perm_epoch = torch.randperm(n, generator=g), int(e)
            sel = epochs == e
            out[sel] = self._perm[pos[sel] % n]
        return out

    def finish(self) -> None:
        """After the entry returned: a job that ends on its own terms is done."""
        if self._ended is None:
            self._report()
            self._save(done=True)
            self._ended = "done"
            self._emit({"ev": "done", "step": self.step, "samples": self.samples_done, "early": True})


def resolve_entry(entry: str, paths=()):
    for p in paths:
        if p not in sys.path:
            sys.path.insert(0, p)
    module, fn = entry.split(":", 1)
    return getattr(importlib.import_module(module), fn)


_STORE_SOCKETS: list = []


def rendezvous_store(cfg: dict):
    """The gloo group's key-value store. Rank 0 serves it on a socket it binds itself on
    ``master_addr`` only (torch's own server would listen on every interface)."""
    import socket
    from datetime import timedelta

    import torch.distributed as dist

    rank, world = int(cfg["rank"]), int(cfg["world"])
    addr, port = str(cfg["master_addr"]), int(cfg["master_port"])
    if ipaddress.ip_address(addr).is_loopback:  # gloo's own pair sockets too
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    timeout = timedelta(seconds=float(cfg.get("timeout_s", 120)))
    if rank != 0:
        return dist.TCPStore(addr, port, world, False, timeout)
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((addr, port))
    sock.listen(max(16, world))
    store = dist.TCPStore(addr, port, world, True, timeout, wait_for_workers=False, master_listen_fd=sock.fileno())
    _STORE_SOCKETS.append(sock)  # the store serves this descriptor: it stays open for the process's life
    return store


def _error_kind(e: BaseException, stage: str) -> tuple[str, int]:
    if isinstance(e, ckpt_store.CheckpointError):
        return "ckpt", EXIT_CKPT_ERROR
    if isinstance(e, CheckpointWriteError):
        return "infra", EXIT_INFRA_ERROR
    if stage == "init" or is_comm_error(e):
        return "comm", EXIT_COMM_ERROR
    return "user", EXIT_USER_ERROR


def bind_device(cfg: dict, environ=os.environ) -> gpu_slots.DeviceChoice:
    """Choose this rank's device (``gpu_slots.choose_device``) and, for NCCL, leave it its one
    GPU in CUDA_VISIBLE_DEVICES. Called in the worker process before CUDA is initialised:
    ``torch.cuda.device_count`` counts through NVML without initialising CUDA, so the
    variable set here still takes effect (the zygote imports torch but never touches CUDA)."""
    import torch

    slots = cfg.get("slots") or ()
    if not slots:
        return gpu_slots.CPU
    choice = gpu_slots.choose_device(int(cfg["rank"]), cfg["placement"], slots, cfg["gpus_per_server"],
                                     str(cfg.get("gpu_numbering", gpu_slots.MACHINE)), torch.cuda.device_count(),
                                     environ.get("CUDA_VISIBLE_DEVICES"))
    if choice.visible_devices is None:
        return choice
    inherited = environ.get("CUDA_VISIBLE_DEVICES")
    environ["CUDA_VISIBLE_DEVICES"] = choice.visible_devices
    if torch.cuda.device_count() != 1:  # CUDA read the variable before us (no NVML): cuda:0 is not ours
        print("ringsched: CUDA was initialised before CUDA_VISIBLE_DEVICES could be set; gloo on the CPU",
              flush=True)
        if inherited is None:
            del environ["CUDA_VISIBLE_DEVICES"]
        else:
            environ["CUDA_VISIBLE_DEVICES"] = inherited
        return gpu_slots.CPU
    return choice


def run_worker(cfg: dict, emit: Emit, stop: threading.Event) -> int:
    """One rank of one attempt of a job: join the group (NCCL or gloo), run the entry, report.

    Returns the exit status: 0, EXIT_USER_ERROR, EXIT_COMM_ERROR, EXIT_CKPT_ERROR or
    EXIT_INFRA_ERROR (an ``error`` event says what happened)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(int(cfg.get("threads", 1)))
    rank, world = int(cfg["rank"]), int(cfg["world"])
    stage = "init"
    try:
        choice = bind_device(cfg)
        if choice.backend == "nccl":  # said in the rank's log (the CPU path writes nothing)
            print(f"ringsched: rank {rank} on GPU {choice.visible_devices} (CUDA_VISIBLE_DEVICES), nccl", flush=True)
            torch.cuda.set_device(0)
        store = rendezvous_store(cfg)
        dist.init_process_group(choice.backend, store=store, rank=rank, world_size=world,
                                timeout=timedelta(seconds=float(cfg.get("timeout_s", 120))))
        stage = "entry"  # importing the entry module is the user's code (and may allow-list checkpoint types)
        fn = resolve_entry(cfg["entry"], cfg.get("paths", ()))
        stage = "setup"
        ctx = TrainContext(cfg, emit, stop, device=choice.device)
        emit({"ev": "started", "pid": os.getpid(), "step": ctx.step, "samples": ctx.samples_done})
        stage = "entry"
        fn(ctx)
        ctx.finish()
        return 0
    except BaseException as e:  # noqa: BLE001 - everything is reported, nothing escapes silently
        kind, rc = _error_kind(e, stage)
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        emit({"ev": "error", "kind": kind, "error": f"{type(e).__name__}: {e}".strip()[:500],
              "traceback": "".join(tb)[-4000:]})
        return rc
    # no destroy_process_group: the process ends right after (a local worker exits, a Ray
    # actor is killed), and tearing down a gloo group whose peers are gone can block


def output_to_log(log_path: str | None) -> None:
    """Send this process's stdout and stderr to ``log_path`` (appended; /dev/null without one):
    file descriptors 1 and 2, so what native code and a dying interpreter write lands there
    too. The rank's log under ``STATE/logs/JOB/`` (``ringsched logs``), on either backend."""
    if log_path:
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    else:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def warm_up() -> None:
    """The slow imports of a training process (seconds each), done once in the zygote: torch,
    torch.distributed, DDP, torch._dynamo (which the first optimizer pulls in), the demo jobs."""
    import torch
    import torch.distributed  # noqa: F401
    from torch.nn.parallel import DistributedDataParallel  # noqa: F401

    torch.set_num_threads(1)
    torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    import ringsched.backends.demo_jobs  # noqa: F401
