"""From a model profile on a cluster to the step-time model's parameters.

This is how the schedulers use the model: bytes and bandwidths, not fitted time terms.
"""

from __future__ import annotations

from ringsched.cluster.model import Cluster, Server
from ringsched.perfmodel.profiles import ModelProfile
from ringsched.perfmodel.ring import RingParams

# DDP's overlap of bucketed all-reduce with the backward pass is smooth, not a hard max;
# fits on the Pollux measurements land between 2 and 16 (docs/model.md). 4 is the default.
DEFAULT_OVERLAP_EXPONENT = 4.0


def ring_params(profile: ModelProfile, cluster: Cluster, *, server: Server | None = None,
                reserved_Bps: float | None = None, rack_Bps: float | None = None,
                overlap_exponent: float = DEFAULT_OVERLAP_EXPONENT) -> RingParams:
    """RingParams of ``profile`` on ``cluster``.

    ``reserved_Bps`` is beta, the bandwidth reserved for the job on every NIC its ring crosses
    (default: the whole NIC); ``rack_Bps`` the share of a rack uplink reserved for it.
    Servers are taken as alike unless ``server`` names the one to use.
    """
    s = server or cluster.servers[0]
    beta = s.nic_Bps if reserved_Bps is None else reserved_Bps
    return RingParams.from_physical(
        compute_base_s=profile.compute_base_s,
        compute_per_sample_s=profile.compute_per_sample_s,
        grad_bytes=profile.grad_bytes,
        intra_Bps=s.intra_Bps,
        inter_Bps=beta,
        rack_Bps=rack_Bps,
        reduction_Bps=cluster.reduction_Bps,
        latency_intra_s=cluster.latency_intra_s,
        latency_inter_s=cluster.latency_inter_s,
        overlap_fraction=profile.overlap_fraction,
        overlap_exponent=overlap_exponent,
    )
