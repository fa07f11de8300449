"""The embedded default trace: a Philly-shaped synthetic workload that needs no files.

``generate(n_jobs, seed, **opts)`` draws, from independent streams of
``numpy.random.SeedSequence(seed).spawn(4)`` (so the same (n_jobs, seed, opts) always gives a
byte-identical frame, and a longer trace with the same seed and options starts with the
shorter one's jobs):

* arrivals: a Poisson process of ``rate_per_h`` jobs per hour (default: the rate that offers
  ``load`` x 128 GPUs, below), optionally modulated by a day cycle
  ``rate(t) = rate_per_h x (1 + diurnal x sin(2 pi t / 86,400 s))`` (thinning; the daily mean
  rate is unchanged); the first job arrives at 0;
* GPUs: Philly's job-size distribution, ``GPU_COUNTS`` (counts of ``num_gpus`` in Pollux's
  philly.csv, 82,247 jobs);
* durations: log-normal with Philly's median and 90th percentile (philly.csv ``duration``:
  p50 1,144 s, p90 11,266 s): mu = ln 1144, sigma = ln(11266/1144) / z_0.9 = 1.7848, rounded
  to whole seconds, at least 1 s and at most ``max_duration_s`` (default one week, 604,800 s:
  Philly has 236 jobs (0.29%) longer; the fitted log-normal puts 0.022% above it);
* tenants: ``tenants`` VCs named ``vc01``, ``vc02``, ... with Zipf shares p_k ~ k^-zipf
  (default 8 VCs, zipf 1.5: 52/18/10/6.5% for the top four, about Philly's 50/20/12/9% of
  6214e9/11cb48/6c71a0/b436b2);
* model '' (assigned later by ``traces.convert``), local_bsz 0, duration given, work NaN.

GPU counts, durations and tenants are drawn independently of each other and of arrivals.

Default rate (``load`` = 0.7 on 128 GPUs = the default 16x8 cluster)
-------------------------------------------------------------------
Offered load = rate x E[GPUs] x E[duration] / GPUs of the cluster.

* E[GPUs] = sum(g x count) / sum(count) = 107,235 / 82,247 = 1.30382;
* E[min(D, c)] of the log-normal capped at c = 604,800 s:
  exp(mu + sigma^2/2) Phi((ln c - mu - sigma^2)/sigma) + c (1 - Phi((ln c - mu)/sigma))
  = 5,624.9 x 0.99955 + 604,800 x 0.000221 = 5,522.8 s;
* rate = 0.7 x 128 / (1.30382 x 5,522.8 s) = 0.012443 jobs/s = 44.80 jobs/h.

``default_rate_per_h(load, max_duration_s)`` computes it (with the chosen cap), so
``synthetic:N,load=0.9`` or a different cap keep their meaning. The test suite checks the
formula against a large sample.

Options (the ``synthetic:N,key=value,...`` spec keys): ``rate_per_h`` (exclusive with
``load``), ``load`` (default 0.7 of 128 GPUs), ``diurnal`` (default 0), ``tenants`` (default 8),
``zipf`` (default 1.5), ``max_duration_s`` (default 604,800); their bounds are
``OPTION_BOUNDS`` (``validation.bounds.LIMITS``, docs/traces.md). An unknown or repeated key,
a value out of bounds, or N jobs whose arrivals would span more than a trace may (1e9 s) is
an InputError.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ringsched.errors import InputError
from ringsched.traces import _io
from ringsched.validation.bounds import LIMITS, Bound
from ringsched.validation.keyvalue import key_values

# Philly num_gpus counts (Pollux/adaptdl simulator/traces/philly.csv, 82,247 jobs).
GPU_COUNTS: dict[int, int] = {1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199, 24: 7,
                              32: 67, 64: 6, 128: 3}
DURATION_P50_S = 1_144.0    # philly.csv duration median
DURATION_P90_S = 11_266.0   # philly.csv duration 90th percentile
Z90 = 1.2815515655446004    # standard normal 0.9 quantile
MU = math.log(DURATION_P50_S)
SIGMA = math.log(DURATION_P90_S / DURATION_P50_S) / Z90
CLUSTER_GPUS = 128          # the default cluster 16x8
DAY_S = 86_400.0
MAX_JOBS = int(LIMITS["jobs"].hi)

DEFAULTS: dict[str, float] = {"load": 0.7, "diurnal": 0.0, "tenants": 8, "zipf": 1.5,
                              "max_duration_s": 604_800.0}
OPTIONS = ("rate_per_h", "load", "diurnal", "tenants", "zipf", "max_duration_s")
OPTION_BOUNDS = {k: LIMITS[k] for k in OPTIONS}


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def mean_gpus() -> float:
    return sum(g * c for g, c in GPU_COUNTS.items()) / sum(GPU_COUNTS.values())


def mean_duration_s(max_duration_s: float = DEFAULTS["max_duration_s"]) -> float:
    """E[min(D, cap)] for the log-normal D (rounding to whole seconds is ignored)."""
    c, m, s = float(max_duration_s), MU, SIGMA
    lc = math.log(c)
    return math.exp(m + s * s / 2) * _phi((lc - m - s * s) / s) + c * (1.0 - _phi((lc - m) / s))


def default_rate_per_h(load: float = DEFAULTS["load"], max_duration_s: float = DEFAULTS["max_duration_s"],
                       cluster_gpus: int = CLUSTER_GPUS) -> float:
    """Arrival rate (jobs/h) that offers ``load`` x ``cluster_gpus`` busy GPUs on average."""
    return load * cluster_gpus / (mean_gpus() * mean_duration_s(max_duration_s)) * 3600.0


def parse_count_and_options(text: str, bounds: dict[str, Bound], *, what: str) -> tuple[int, dict[str, float]]:
    """``N[,key=value...]`` of a generated workload (``what``: synthetic, or another shape) ->
    (N, options): N a whole number, keys from ``bounds``, each at most once and within its
    bound. InputError (field 'trace') on anything else."""
    head, *rest = [p.strip() for p in text.split(",")]
    try:
        n = int(head)
    except ValueError:
        raise InputError(f"{what}:N needs a whole number of jobs, got {head!r} "
                         f"(grammar: {what}:N[,key=value...])", field="trace") from None
    texts = key_values(rest, bounds, what=what, field="trace")
    return n, {k: bounds[k].parse(v, field="trace", what=f"{what} option {k}") for k, v in texts.items()}


def check_jobs(n_jobs) -> None:
    """N must be a whole job count within ``LIMITS``."""
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or LIMITS["jobs"].problem(int(n_jobs)):
        raise InputError(f"number of jobs must be {LIMITS['jobs'].describe()}, got {n_jobs!r}", field="trace")


def check_span(n_jobs: int, rate_per_h: float) -> None:
    """N arrivals at ``rate_per_h`` must fit in the time a trace may span (a tiny rate would
    otherwise make a simulation that never ends)."""
    span_s = n_jobs / rate_per_h * 3600.0
    if LIMITS["time_s"].problem(span_s):
        raise InputError(f"{n_jobs:,} jobs at {rate_per_h:g} jobs/h arrive over ~{span_s:.3g} s, beyond "
                         f"the {LIMITS['time_s'].hi:g} s a trace may span; raise the rate or the load",
                         field="trace")


def parse_options(text: str) -> tuple[int, dict[str, float]]:
    """``N[,key=value...]`` -> (N, options) of ``synthetic``; values are checked again by ``generate``."""
    return parse_count_and_options(text, OPTION_BOUNDS, what="synthetic")


def _check(n_jobs, opts: dict) -> dict[str, float]:
    check_jobs(n_jobs)
    unknown = sorted(set(opts) - set(OPTIONS))
    if unknown:
        raise InputError(f"unknown synthetic option {unknown[0]!r}; known: {', '.join(OPTIONS)}", field="trace")
    if "rate_per_h" in opts and "load" in opts:
        raise InputError("give rate_per_h or load, not both", field="trace")
    o = {**DEFAULTS, **opts}
    for k, v in o.items():
        o[k] = OPTION_BOUNDS[k].check(v, field="trace", what=f"synthetic option {k}")
    if "rate_per_h" not in o:
        o["rate_per_h"] = default_rate_per_h(o["load"], o["max_duration_s"])
    check_span(n_jobs, o["rate_per_h"])
    return o


def _arrivals(rng: np.random.Generator, n: int, rate_s: float, amp: float) -> np.ndarray:
    if amp == 0:
        t = np.cumsum(rng.exponential(1.0 / rate_s, size=n))
    else:
        # Thinning: candidates at the peak rate, kept with probability rate(t) / peak.
        # Fixed-size chunks keep a prefix of the stream independent of n.
        peak, chunk, out, t0 = rate_s * (1 + amp), 4096, [], 0.0
        have = 0
        while have < n:
            cand = t0 + np.cumsum(rng.exponential(1.0 / peak, size=chunk))
            u = rng.random(chunk)
            kept = cand[u * (1 + amp) < 1 + amp * np.sin(2 * np.pi * cand / DAY_S)]
            out.append(kept)
            have += len(kept)
            t0 = cand[-1]
        t = np.concatenate(out)[:n]
    return t - t[0]


def generate(n_jobs: int, seed: int = 0, **opts) -> pd.DataFrame:
    """A Philly-shaped synthetic trace of ``n_jobs`` jobs (see the module docstring)."""
    o = _check(n_jobs, opts)
    n = int(n_jobs)
    s_arr, s_gpu, s_dur, s_ten = (np.random.default_rng(s) for s in np.random.SeedSequence(int(seed)).spawn(4))
    arrival = _arrivals(s_arr, n, o["rate_per_h"] / 3600.0, o["diurnal"])
    sizes = np.array(list(GPU_COUNTS), dtype=np.int64)
    counts = np.array(list(GPU_COUNTS.values()), dtype=float)
    gpus = sizes[s_gpu.choice(len(sizes), size=n, p=counts / counts.sum())]
    dur = np.clip(np.round(s_dur.lognormal(MU, SIGMA, size=n)), 1.0, math.floor(o["max_duration_s"]))
    k = int(o["tenants"])
    w = np.arange(1, k + 1, dtype=float) ** -o["zipf"]
    names = np.array([f"vc{i:02d}" for i in range(1, k + 1)], dtype=object)
    tenant = names[s_ten.choice(k, size=n, p=w / w.sum())]
    ids = ("syn-" + pd.Series(np.arange(n)).astype(str)).to_numpy(dtype=object)
    df = _io.frame(job_id=ids, arrival_s=arrival, num_gpus=gpus, duration_s=dur, tenant=tenant)
    shown = {k2: (int(v) if k2 == "tenants" else v) for k2, v in o.items()}
    return _io.finish(df, "synthetic", fmt="synthetic", dropped={}, seed=int(seed), options=shown,
                      description=f"synthetic Philly-shaped trace, {n} jobs, seed {seed}")


# ------------------------------------------------------------------------------ demo workload
# The demo workload (``demo:N``): shaped like the busy periods of Philly (Pollux's philly.csv),
# not like its average. ``scripts/busy_period_stats.py`` recomputes every number below from
# ../shared/traces/philly-pollux/philly.csv: split the 109 days of submissions into 8-hour
# windows (Pollux's workload window), call the top 10% by submitted GPU-time (>= 909 GPUs
# offered) busy; 33 windows, 13,919 jobs. In them:
# * sizes: the GPU counts of those jobs (BUSY_GPU_COUNTS); 7.3% ask for more than one GPU and
#   hold 88% of the GPU-time;
# * durations depend on size (the default ``synthetic`` draws them independently, so its big
#   jobs are as short as its small ones): log-normal per size class with the class's p50 and
#   p90 (BUSY_DURATION_P50_P90_S); 1 GPU: 31 min / 2.7 h, 2-4 GPUs: 10 h / 97 h, 8+ GPUs:
#   39 h / 190 h;
# * load: busy windows offer 3.72x the trace's mean; the default synthetic's 0.7 of the cluster
#   is the mean, so the demo offers 0.7 x 3.72 = 2.6 of the cluster's GPUs while its jobs arrive
#   (a burst of N jobs, then the queue drains: one busy period).
# ``time_scale`` divides every duration (and multiplies the arrival rate by the same, keeping
# the load), so a busy period fits a demo that runs in seconds; the shape is unchanged. The
# default 4 keeps the median 1-GPU job (7.7 min) longer than the 300 s slot. It was chosen for
# run time, not for any policy: the best/worst mean-JCT ratio of the 9 policies is 5.9x at 10
# and 5.7x at 3 (docs/reports.md, "The demo").
BUSY_GPU_COUNTS: dict[int, int] = {1: 12_905, 2: 364, 4: 333, 8: 261, 12: 1, 16: 52, 32: 3}
BUSY_DURATION_P50_P90_S: tuple[tuple[int, int, float, float], ...] = (
    (1, 1, 1_844.0, 9_688.0), (2, 4, 36_133.0, 350_089.0), (8, 128, 141_841.0, 683_571.0))
BUSY_LOAD_RATIO = 3.72  # mean offered GPU load in busy windows / over the whole trace
DEMO_DEFAULTS: dict[str, float] = {"load": DEFAULTS["load"] * BUSY_LOAD_RATIO, "time_scale": 4.0,
                                   "max_duration_s": 604_800.0}


def _busy_class(g: int) -> tuple[float, float]:
    """(mu, sigma) of the log-normal duration of a job of ``g`` GPUs in a busy period."""
    for lo, hi, p50, p90 in BUSY_DURATION_P50_P90_S:
        if lo <= g <= hi:
            return math.log(p50), math.log(p90 / p50) / Z90
    raise ValueError(f"no duration class for {g} GPUs")


def demo_mean_gpu_s(max_duration_s: float) -> float:
    """E[GPUs x min(duration, cap)] of the demo's size-duration mix, GPU-seconds."""
    total = sum(BUSY_GPU_COUNTS.values())
    out = 0.0
    for g, c in BUSY_GPU_COUNTS.items():
        m, s = _busy_class(g)
        lc = math.log(max_duration_s)
        capped = math.exp(m + s * s / 2) * _phi((lc - m - s * s) / s) + max_duration_s * (1 - _phi((lc - m) / s))
        out += c / total * g * capped
    return out


def _demo_rate_s(n_jobs, load: float, time_scale: float, max_duration_s: float) -> float:
    """The demo's arrival rate, jobs/s, once N and every option are within their bounds."""
    check_jobs(n_jobs)
    for name, v in (("load", load), ("time_scale", time_scale), ("max_duration_s", max_duration_s)):
        LIMITS[name].check(v, field="trace", what=f"demo option {name}")
    rate_s = load * CLUSTER_GPUS / demo_mean_gpu_s(max_duration_s) * time_scale
    check_span(int(n_jobs), rate_s * 3600.0)
    return rate_s


def generate_demo(n_jobs: int, seed: int = 0, *, load: float = DEMO_DEFAULTS["load"],
                  time_scale: float = DEMO_DEFAULTS["time_scale"],
                  max_duration_s: float = DEMO_DEFAULTS["max_duration_s"]) -> pd.DataFrame:
    """The demo workload: ``n_jobs`` jobs of Philly's busy-period shape (see above)."""
    rate_s = _demo_rate_s(n_jobs, load, time_scale, max_duration_s)
    n = int(n_jobs)
    s_arr, s_gpu, s_dur, s_ten = (np.random.default_rng(s) for s in np.random.SeedSequence(int(seed)).spawn(4))
    arrival = _arrivals(s_arr, n, rate_s, 0.0)
    sizes = np.array(list(BUSY_GPU_COUNTS), dtype=np.int64)
    counts = np.array(list(BUSY_GPU_COUNTS.values()), dtype=float)
    gpus = sizes[s_gpu.choice(len(sizes), size=n, p=counts / counts.sum())]
    z = s_dur.standard_normal(n)
    mu_sigma = np.array([_busy_class(int(g)) for g in gpus]).reshape(n, 2)
    dur = np.minimum(np.exp(mu_sigma[:, 0] + mu_sigma[:, 1] * z), max_duration_s) / time_scale
    dur = np.maximum(np.round(dur), 1.0)
    k = int(DEFAULTS["tenants"])
    w = np.arange(1, k + 1, dtype=float) ** -DEFAULTS["zipf"]
    names = np.array([f"vc{i:02d}" for i in range(1, k + 1)], dtype=object)
    tenant = names[s_ten.choice(k, size=n, p=w / w.sum())]
    ids = ("demo-" + pd.Series(np.arange(n)).astype(str)).to_numpy(dtype=object)
    df = _io.frame(job_id=ids, arrival_s=arrival, num_gpus=gpus, duration_s=dur, tenant=tenant)
    opts = {"load": load, "time_scale": time_scale, "max_duration_s": max_duration_s}
    return _io.finish(df, "demo", fmt="demo", dropped={}, seed=int(seed), options=opts,
                      description=f"demo workload (Philly busy-period shape), {n} jobs, seed {seed}")


DEMO_BOUNDS = {k: LIMITS[k] for k in DEMO_DEFAULTS}


def parse_demo_options(text: str) -> tuple[int, dict[str, float]]:
    """``N[,load=L,time_scale=S,max_duration_s=C]`` -> (N, options), each within ``LIMITS``."""
    return parse_count_and_options(text, DEMO_BOUNDS, what="demo")


def check_options(text: str) -> None:
    """A ``synthetic:`` argument checked as ``generate`` checks it, without generating."""
    _check(*parse_options(text))


def check_demo_options(text: str) -> None:
    """A ``demo:`` argument checked as ``generate_demo`` checks it, without generating."""
    n, opts = parse_demo_options(text)
    _demo_rate_s(n, **{**DEMO_DEFAULTS, **opts})
