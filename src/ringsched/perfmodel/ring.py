"""The analytical step-time model of a ring-all-reduce (RAR) data-parallel job.

Pure, vectorised functions: every argument may be a scalar or a numpy array, and the
result broadcasts. Time is in seconds, sizes in bytes, bandwidth in bytes per second.

    tau(y) = (1 - phi) * t_comp  +  smax_g(phi * t_comp, t_ring)

    t_comp = (compute_base_s + compute_per_sample_s * local_bsz) * eff(local_bsz) * (1 + colocation_slowdown * (d - 1))
    t_ring = 0                                                          if w == 1
           = 2 (w-1) lat_k + (w-1)/w * (2 x_k + reduce_s) + server_overhead_s * (k - 1)
    x_1    = d**sigma * intra_transfer_s                                (ring inside one server)
    x_k    = max(c_k * inter_transfer_s [or rack_transfer_s], D) + host_staging * D     (k > 1)
    D      = d**sigma * intra_transfer_s
    c_k    = 1 + two_server_slowdown if k == 2 else 1
    smax_g(a, b) = (a**g + b**g) ** (1/g)
    eff(M) = exp(interp(log M, log compute_knots_bsz, log compute_knot_factors))   (1 without knots)

w workers, k servers, d = the most workers on one server, phi the share of compute (the
backward pass) that bucketed all-reduce can hide behind, g >= 1 the smoothness of that
overlap (g = 1 is no overlap: a plain sum; g -> inf is a hard max). ``x`` is the time to push
one whole gradient through the ring's bottleneck link: m / b_in inside a server (a link that
``d`` workers share, hence d**sigma: sigma = 1 for a shared PCIe root, 0 for an NVSwitch),
m / beta across servers (beta = bandwidth reserved for the job on each NIC it crosses), and
m / uplink share when the ring crosses racks. ``eff`` is the measured efficiency of the GPU's
kernels at a batch size (tile quantisation and algorithm choice make compute time a ragged,
not straight, function of the batch); ``two_server_slowdown`` is the fitted excess of rings
over exactly two servers, whose two cross-server links join the same pair of NICs;
``host_staging`` is the share of the intra-server transfer that a cross-server hop pays on
top (without GPUDirect RDMA, e.g. NCCL over TCP sockets, the data cross the server's PCIe
fabric to host memory before the NIC sends them). All three are neutral (1, 0, 0) unless
fitted from measurements. See docs/model.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from ringsched.perfmodel.params_io import DictParams


@dataclass(frozen=True)
class RingParams(DictParams):
    """Parameters of one job type's step time on one kind of cluster (time form).

    The transfer terms are "seconds to move one whole gradient through the link", so the
    same dataclass holds parameters fitted from step times alone (gradient size unknown) and
    parameters derived from a model profile and a cluster (``from_physical``).
    """

    compute_base_s: float
    compute_per_sample_s: float
    colocation_slowdown: float = 0.0
    latency_intra_s: float = 0.0
    latency_inter_s: float = 0.0
    intra_transfer_s: float = 0.0
    bus_share_exponent: float = 0.0
    inter_transfer_s: float = 0.0
    rack_transfer_s: float | None = None
    server_overhead_s: float = 0.0
    overlap_fraction: float = 0.0
    overlap_exponent: float = 1.0
    reduce_s: float = 0.0
    two_server_slowdown: float = 0.0
    host_staging: float = 0.0
    compute_knots_bsz: tuple[float, ...] = ()
    compute_knot_factors: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        # Plain-Python checks: the fit builds one of these per residual evaluation.
        for name in ("compute_knots_bsz", "compute_knot_factors"):  # JSON gives lists
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        knots, factors = self.compute_knots_bsz, self.compute_knot_factors
        if len(knots) != len(factors):
            raise ValueError("compute_knots_bsz and compute_knot_factors must have the same length")
        if not all(math.isfinite(v) and v > 0 for v in knots) or any(b <= a for a, b in zip(knots, knots[1:])):
            raise ValueError("compute_knots_bsz must be positive and strictly increasing")
        if not all(math.isfinite(v) and v > 0 for v in factors):
            raise ValueError("compute_knot_factors must be finite positive numbers")
        for name in _SCALARS:
            v = getattr(self, name)
            if v is None:
                continue
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite non-negative number, got {v!r}")
        if not 0.0 <= self.overlap_fraction <= 1.0:
            raise ValueError(f"overlap_fraction must lie in [0, 1], got {self.overlap_fraction}")
        if self.overlap_exponent < 1.0:
            raise ValueError(f"overlap_exponent must be >= 1, got {self.overlap_exponent}")

    @classmethod
    def from_physical(
        cls,
        *,
        compute_base_s: float,
        compute_per_sample_s: float,
        grad_bytes: float,
        intra_Bps: float,
        inter_Bps: float,
        rack_Bps: float | None = None,
        reduction_Bps: float = 0.0,
        latency_intra_s: float = 0.0,
        latency_inter_s: float = 0.0,
        bus_share_exponent: float = 0.0,
        server_overhead_s: float = 0.0,
        colocation_slowdown: float = 0.0,
        overlap_fraction: float = 0.0,
        overlap_exponent: float = 1.0,
    ) -> "RingParams":
        """Parameters from bytes and bandwidths: a model profile on a cluster.

        ``inter_Bps`` is beta, the bandwidth reserved for the job on every NIC its ring
        crosses; the effective cross-server bandwidth is min(b_in, beta) as in the brief.
        ``reduction_Bps`` is C, the GPU's reduction speed (0 means: ignore that term).
        """
        if grad_bytes < 0 or intra_Bps <= 0 or inter_Bps <= 0:
            raise ValueError("grad_bytes must be >= 0 and bandwidths > 0")
        inter = min(intra_Bps, inter_Bps)
        rack = None if rack_Bps is None else min(inter, rack_Bps)
        return cls(
            compute_base_s=compute_base_s,
            compute_per_sample_s=compute_per_sample_s,
            colocation_slowdown=colocation_slowdown,
            latency_intra_s=latency_intra_s,
            latency_inter_s=latency_inter_s,
            intra_transfer_s=grad_bytes / intra_Bps,
            bus_share_exponent=bus_share_exponent,
            inter_transfer_s=grad_bytes / inter,
            rack_transfer_s=None if rack is None else grad_bytes / rack,
            server_overhead_s=server_overhead_s,
            overlap_fraction=overlap_fraction,
            overlap_exponent=overlap_exponent,
            reduce_s=grad_bytes / reduction_Bps if reduction_Bps > 0 else 0.0,
        )


_SCALARS = tuple(f.name for f in fields(RingParams) if not f.name.startswith("compute_knot"))


def smooth_max(a, b, g):
    """(a^g + b^g)^(1/g) for a, b >= 0, computed without overflow or underflow.

    As m * (1 + (lo/m)^g)^(1/g) with m = max, lo = min: (m/m)^g is exactly 1, so this is the
    same number as the symmetric form, for one power fewer.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    m = np.maximum(a, b)
    safe = np.where(m > 0, m, 1.0)
    return np.where(m > 0, safe * (1.0 + (np.minimum(a, b) / safe) ** g) ** (1.0 / g), 0.0)


def batch_efficiency(p: RingParams, local_bsz):
    """Compute-time factor at a batch size: measured at the knots, log-linear between, flat outside."""
    local_bsz = np.asarray(local_bsz, dtype=float)
    if not p.compute_knots_bsz:
        return np.ones_like(local_bsz)
    return np.exp(np.interp(np.log(np.maximum(local_bsz, 1e-9)), np.log(p.compute_knots_bsz),
                            np.log(p.compute_knot_factors)))


def compute_time_s(p: RingParams, local_bsz, max_per_server=1):
    """Per-iteration forward+backward+update time of one worker, with co-location slowdown."""
    local_bsz = np.asarray(local_bsz, dtype=float)
    d = np.asarray(max_per_server, dtype=float)
    t = (p.compute_base_s + p.compute_per_sample_s * local_bsz) * (1.0 + p.colocation_slowdown * (d - 1.0))
    return t * batch_efficiency(p, local_bsz) if p.compute_knots_bsz else t


def ring_time_s(p: RingParams, workers, servers, max_per_server, racks=1):
    """Per-iteration ring all-reduce time (0 for a single worker)."""
    w = np.asarray(workers, dtype=float)
    k = np.asarray(servers, dtype=float)
    d = np.asarray(max_per_server, dtype=float)
    r = np.asarray(racks, dtype=float)
    frac = np.where(w > 0, (w - 1.0) / np.maximum(w, 1.0), 0.0)
    intra = d ** p.bus_share_exponent * p.intra_transfer_s
    rack_x = p.inter_transfer_s if p.rack_transfer_s is None else p.rack_transfer_s
    cross = np.where(r > 1, rack_x, p.inter_transfer_s)
    if p.two_server_slowdown:
        cross = cross * np.where(k == 2, 1.0 + p.two_server_slowdown, 1.0)
    multi = k > 1
    hop = np.maximum(cross, intra)
    if p.host_staging:
        hop = hop + p.host_staging * intra
    x = np.where(multi, hop, intra)
    lat = np.where(multi, p.latency_inter_s, p.latency_intra_s)
    t = 2.0 * (w - 1.0) * lat + frac * (2.0 * x + p.reduce_s) + p.server_overhead_s * np.maximum(k - 1.0, 0.0)
    return np.where(w > 1, t, 0.0)


def step_time_s(p: RingParams, local_bsz, workers, servers, max_per_server=None, racks=1):
    """Seconds per training iteration of a RAR job on a placement.

    ``max_per_server`` defaults to the consolidated value ceil(workers / servers).
    """
    w = np.asarray(workers, dtype=float)
    k = np.asarray(servers, dtype=float)
    if max_per_server is None:
        max_per_server = np.ceil(w / np.maximum(k, 1.0))
    comp = compute_time_s(p, local_bsz, max_per_server)
    return overlapped_s(p, comp, ring_time_s(p, w, k, max_per_server, racks))


def overlapped_s(p: RingParams, compute_s, ring_s):
    """Step time from its compute and ring parts: the backward share phi hides communication."""
    phi = p.overlap_fraction
    return (1.0 - phi) * compute_s + smooth_max(phi * compute_s, ring_s, p.overlap_exponent)


def throughput_sps(p: RingParams, local_bsz, workers, servers, max_per_server=None, racks=1):
    """Samples per second: w * M / tau."""
    w = np.asarray(workers, dtype=float)
    return w * np.asarray(local_bsz, dtype=float) / step_time_s(p, local_bsz, workers, servers, max_per_server, racks)


def scaling_efficiency(p: RingParams, local_bsz, workers, servers, max_per_server=None, racks=1):
    """Throughput on the placement over w times single-worker throughput (1.0 = linear scaling)."""
    w = np.asarray(workers, dtype=float)
    one = throughput_sps(p, local_bsz, 1, 1, 1)
    return throughput_sps(p, local_bsz, workers, servers, max_per_server, racks) / (w * one)
