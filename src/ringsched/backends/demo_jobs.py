"""The built-in jobs of ``--jobs demo:N``: small real models on data that ships with the
installed packages or is generated from a seed (nothing is downloaded).

Three kinds, cycled through by ``demo:N`` (job i is kind i mod 3, seed i):

* ``digits-cnn``: a two-layer CNN on scikit-learn's bundled 8x8 handwritten digits
  (1,797 images, 10 classes), cross-entropy, SGD with momentum;
* ``synth-mlp``: an MLP classifier on 8,192 seeded synthetic points (32 features, 8 classes
  from a random teacher network);
* ``synth-wide``: a wide MLP regressor on seeded synthetic data (about 0.3 M parameters, so
  its gradient all-reduce is a visible part of a step).

Entry functions take a ``TrainContext`` (``ringsched.backends.worker``); torch is imported
inside them so that the scheduler process never pays for it. ``broken`` is an entry that
raises after a few steps, for trying failure handling.
"""

from __future__ import annotations

import importlib.util
import os

DIGITS_SAMPLES = 1797
SYNTH_SAMPLES = 8192

# name, entry, per-worker batch, work in samples at scale 1, most workers. The two short jobs
# (about half a minute each on this project's 2-core machine) take at most one server of the
# 2x2 default; the long MLP may take all four GPUs, so the cluster is shared at first and an
# elastic policy grows the MLP once the others are done: every demo shows a resize.
_KINDS = (
    ("digits-cnn", "digits_cnn", 32, 96_000, 2),
    ("synth-mlp", "synth_mlp", 64, 1_600_000, 4),
    ("synth-wide", "synth_wide", 32, 96_000, 2),
)


def demo_jobs(n: int, scale: float = 1.0) -> list:
    """``n`` built-in jobs (``RunJob``; kinds cycled), elastic from 1 worker to 2 or 4."""
    from ringsched.backends.jobs_file import RunJob  # not at import: workers import this module

    out = []
    for i in range(n):
        kind, fn, bsz, work, most = _KINDS[i % len(_KINDS)]
        out.append(RunJob(name=f"demo{i}-{kind}", entry=f"ringsched.backends.demo_jobs:{fn}", local_bsz=bsz,
                          work_samples=max(bsz, int(round(work * scale))), min_workers=1, max_workers=most,
                          arrival_s=0.0, seed=i, model=kind))
    return out


# ---------------------------------------------------------------------------- data
def _digits():
    """(X, y) of the bundled digits as float32 images (N, 1, 8, 8) scaled to [0, 1]."""
    import numpy as np
    import torch

    spec = importlib.util.find_spec("sklearn")
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data", "digits.csv.gz")
    if path and os.path.exists(path):
        # the file load_digits reads, without importing scikit-learn (seconds per process)
        data = np.loadtxt(path, delimiter=",", dtype=np.float32)
        x, y = data[:, :-1], data[:, -1].astype(np.int64)
    else:  # pragma: no cover - a scikit-learn that moved its data file
        from sklearn.datasets import load_digits

        d = load_digits()
        x, y = d.data.astype(np.float32), d.target.astype(np.int64)
    return torch.from_numpy(x / 16.0).reshape(-1, 1, 8, 8), torch.from_numpy(y)


def _synthetic_classes(n: int, features: int, classes: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(n, features, generator=g)
    w1 = torch.randn(features, 32, generator=g) / features**0.5
    w2 = torch.randn(32, classes, generator=g) / 32**0.5
    y = torch.tanh(x @ w1) @ w2
    return x, y.argmax(dim=1)


def _synthetic_regression(n: int, features: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(2000 + seed)
    x = torch.randn(n, features, generator=g)
    w = torch.randn(features, 1, generator=g) / features**0.5
    y = torch.sin(x @ w) + 0.1 * (x[:, :1] ** 2)
    return x, y


def _train(ctx, net, opt, x, y, loss_fn) -> None:
    model = ctx.prepare(net, opt)
    for idx in ctx.batches(len(x)):
        xb, yb = ctx.to_device(x[idx], y[idx])  # the rank's GPU under NCCL, else the CPU
        loss = loss_fn(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ctx.log(loss)


# ---------------------------------------------------------------------------- entries
def digits_cnn(ctx) -> None:
    import torch
    from torch import nn

    x, y = _digits()
    torch.manual_seed(ctx.seed)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(net.parameters(), lr=float(ctx.args.get("lr", 0.02)), momentum=0.9)
    _train(ctx, net, opt, x, y, nn.functional.cross_entropy)


digits_cnn.dataset_size = DIGITS_SAMPLES


def synth_mlp(ctx) -> None:
    import torch
    from torch import nn

    x, y = _synthetic_classes(SYNTH_SAMPLES, 32, 8, ctx.seed)
    torch.manual_seed(ctx.seed)
    net = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 8))
    opt = torch.optim.SGD(net.parameters(), lr=float(ctx.args.get("lr", 0.05)), momentum=0.9)
    _train(ctx, net, opt, x, y, nn.functional.cross_entropy)


synth_mlp.dataset_size = SYNTH_SAMPLES


def synth_wide(ctx) -> None:
    import torch
    from torch import nn

    x, y = _synthetic_regression(SYNTH_SAMPLES, 64, ctx.seed)
    torch.manual_seed(ctx.seed)
    net = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    opt = torch.optim.SGD(net.parameters(), lr=float(ctx.args.get("lr", 0.01)), momentum=0.9)
    _train(ctx, net, opt, x, y, nn.functional.mse_loss)


synth_wide.dataset_size = SYNTH_SAMPLES


def broken(ctx) -> None:
    """Trains a tiny model, then raises ``RuntimeError`` after ``args.fail_at_step`` steps
    (default 5): a job whose entry point fails."""
    import torch
    from torch import nn

    fail_at = int(ctx.args.get("fail_at_step", 5))
    x, y = _synthetic_classes(1024, 8, 2, ctx.seed)
    torch.manual_seed(ctx.seed)
    net = nn.Linear(8, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = ctx.prepare(net, opt)
    for n, idx in enumerate(ctx.batches(len(x))):
        if n >= fail_at:
            raise RuntimeError(f"broken on purpose at step {ctx.step}")
        xb, yb = ctx.to_device(x[idx], y[idx])
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ctx.log(loss)


broken.dataset_size = 1024
