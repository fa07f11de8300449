"""The analytical ring-all-reduce model: limits, factors, and monotonicity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringsched.perfmodel.ring import (RingParams, compute_time_s, ring_time_s, scaling_efficiency,
                                      smooth_max, step_time_s)


def comm_only(**kw):
    base = dict(compute_base_s=0.01, compute_per_sample_s=1e-4)
    base.update(kw)
    return RingParams(**base)


def test_single_worker_costs_no_communication():
    p = comm_only(intra_transfer_s=1.0, inter_transfer_s=5.0, latency_intra_s=1e-3, server_overhead_s=2.0,
                  overlap_fraction=0.5, overlap_exponent=3.0)
    assert ring_time_s(p, 1, 1, 1) == 0.0
    assert step_time_s(p, 64, 1, 1) == pytest.approx(0.01 + 64e-4)


@pytest.mark.parametrize("w", [2, 3, 4, 8, 16, 64])
def test_bandwidth_term_has_the_2_w_minus_1_over_w_factor(w):
    S = 0.3
    p = comm_only(inter_transfer_s=S)
    assert ring_time_s(p, w, 2, int(np.ceil(w / 2))) == pytest.approx(2 * (w - 1) / w * S)
    # no overlap (phi = 0): step = compute + ring
    assert step_time_s(p, 10, w, 2) == pytest.approx(0.01 + 1e-3 + 2 * (w - 1) / w * S)


def test_latency_and_reduction_terms():
    p = comm_only(latency_inter_s=1e-3, reduce_s=0.2)
    w = 8
    assert ring_time_s(p, w, 4, 2) == pytest.approx(2 * (w - 1) * 1e-3 + (w - 1) / w * 0.2)


def test_one_server_versus_several():
    p = comm_only(intra_transfer_s=0.01, inter_transfer_s=0.1, latency_intra_s=1e-5, latency_inter_s=1e-4)
    one = step_time_s(p, 32, 8, 1, 8)
    two = step_time_s(p, 32, 8, 2, 4)
    assert one < two
    # across servers the bottleneck is the slower of the NIC share and the shared intra link
    q = comm_only(intra_transfer_s=0.05, inter_transfer_s=0.01, bus_share_exponent=1.0)
    assert ring_time_s(q, 8, 2, 4) == pytest.approx(2 * 7 / 8 * 0.05 * 4)


def test_rack_crossing_uses_the_rack_uplink_share():
    p = comm_only(inter_transfer_s=0.1, rack_transfer_s=0.4)
    assert ring_time_s(p, 4, 4, 1, racks=2) == pytest.approx(2 * 3 / 4 * 0.4)
    assert ring_time_s(p, 4, 4, 1, racks=1) == pytest.approx(2 * 3 / 4 * 0.1)


def test_from_physical_takes_min_of_intra_and_reserved():
    p = RingParams.from_physical(compute_base_s=0.0, compute_per_sample_s=1e-3, grad_bytes=1e9,
                                 intra_Bps=100e9, inter_Bps=1000e9, rack_Bps=5e9)
    assert p.inter_transfer_s == pytest.approx(1e9 / 100e9)  # min(b_in, beta) = b_in
    assert p.rack_transfer_s == pytest.approx(1e9 / 5e9)
    assert p.intra_transfer_s == pytest.approx(0.01)


def test_colocation_slowdown_scales_compute():
    p = comm_only(colocation_slowdown=0.1)
    assert compute_time_s(p, 100, 4) == pytest.approx((0.01 + 0.01) * 1.3)


def test_overlap_exponent_one_is_a_plain_sum():
    p = comm_only(inter_transfer_s=0.2, overlap_fraction=0.7, overlap_exponent=1.0)
    q = comm_only(inter_transfer_s=0.2)
    assert step_time_s(p, 32, 4, 4) == pytest.approx(step_time_s(q, 32, 4, 4))


def test_invalid_params_are_rejected():
    with pytest.raises(ValueError):
        RingParams(compute_base_s=-1, compute_per_sample_s=0)
    with pytest.raises(ValueError):
        RingParams(compute_base_s=1, compute_per_sample_s=0, overlap_fraction=1.5)
    with pytest.raises(ValueError):
        RingParams(compute_base_s=1, compute_per_sample_s=0, overlap_exponent=0.5)
    with pytest.raises(ValueError):
        RingParams(compute_base_s=float("nan"), compute_per_sample_s=0)


pos = st.floats(1e-6, 1.0)


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0, 10), b=st.floats(0, 10), g=st.floats(1, 30))
def test_smooth_max_lies_between_max_and_sum(a, b, g):
    m = float(smooth_max(a, b, g))
    assert max(a, b) * (1 - 1e-9) <= m <= (a + b) * (1 + 1e-9) + 1e-300


@settings(max_examples=60, deadline=None)
@given(S=pos, lat=st.floats(0, 1e-3), phi=st.floats(0, 1), g=st.floats(1, 16),
       w=st.integers(2, 64), k=st.integers(2, 8), bsz=st.integers(1, 512), factor=st.floats(1.01, 10))
def test_more_bandwidth_never_slows_a_job(S, lat, phi, g, w, k, bsz, factor):
    k = min(k, w)
    slow = comm_only(inter_transfer_s=S * factor, latency_inter_s=lat, overlap_fraction=phi, overlap_exponent=g)
    fast = comm_only(inter_transfer_s=S, latency_inter_s=lat, overlap_fraction=phi, overlap_exponent=g)
    assert step_time_s(fast, bsz, w, k) <= step_time_s(slow, bsz, w, k) * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(S=pos, phi=st.floats(0, 1), g=st.floats(1, 16), w=st.integers(1, 64), bsz=st.integers(1, 512))
def test_efficiency_is_at_most_one_and_positive(S, phi, g, w, bsz):
    p = comm_only(inter_transfer_s=S, intra_transfer_s=S / 10, overlap_fraction=phi, overlap_exponent=g)
    k = max(1, w // 8)
    e = float(scaling_efficiency(p, bsz, w, k))
    assert 0 < e <= 1 + 1e-12


def test_vectorised_over_placements():
    p = comm_only(inter_transfer_s=0.1, intra_transfer_s=0.01)
    out = step_time_s(p, np.array([32, 32, 64]), np.array([1, 8, 16]), np.array([1, 1, 2]))
    assert out.shape == (3,)
    assert out[0] == pytest.approx(0.01 + 32e-4)


def test_two_server_slowdown_scales_only_two_server_cross_transfer():
    p = comm_only(inter_transfer_s=0.1, intra_transfer_s=0.01, two_server_slowdown=0.5)
    assert ring_time_s(p, 8, 2, 4) == pytest.approx(2 * 7 / 8 * 0.15)
    assert ring_time_s(p, 12, 3, 4) == pytest.approx(2 * 11 / 12 * 0.1)
    assert ring_time_s(p, 4, 1, 4) == pytest.approx(2 * 3 / 4 * 0.01)
    assert ring_time_s(comm_only(inter_transfer_s=0.1), 8, 2, 4) == pytest.approx(2 * 7 / 8 * 0.1)


def test_batch_efficiency_knots_scale_compute_log_linearly_and_flat_outside():
    p = comm_only(compute_knots_bsz=(16, 64), compute_knot_factors=(1.2, 0.8))
    base = lambda m: 0.01 + 1e-4 * m  # noqa: E731
    assert compute_time_s(p, 16) == pytest.approx(base(16) * 1.2)
    assert compute_time_s(p, 64) == pytest.approx(base(64) * 0.8)
    # halfway in log batch: the geometric mean of the factors
    assert compute_time_s(p, 32) == pytest.approx(base(32) * np.sqrt(1.2 * 0.8))
    assert compute_time_s(p, 4) == pytest.approx(base(4) * 1.2)
    assert compute_time_s(p, 1024) == pytest.approx(base(1024) * 0.8)
    assert compute_time_s(comm_only(), 32) == pytest.approx(base(32))


def test_knot_parameters_roundtrip_through_dicts_and_are_validated():
    p = comm_only(compute_knots_bsz=[16, 64], compute_knot_factors=[1.1, 0.9], two_server_slowdown=0.2)
    assert p.compute_knots_bsz == (16.0, 64.0)
    assert RingParams.from_dict(p.to_dict()) == p
    for bad in (dict(compute_knots_bsz=(16, 64), compute_knot_factors=(1.0,)),
                dict(compute_knots_bsz=(64, 16), compute_knot_factors=(1.0, 1.0)),
                dict(compute_knots_bsz=(16,), compute_knot_factors=(0.0,)),
                dict(compute_knots_bsz=(16,), compute_knot_factors=(float("nan"),)),
                dict(two_server_slowdown=-0.1)):
        with pytest.raises(ValueError):
            comm_only(**bad)


def test_host_staging_adds_the_intra_transfer_to_cross_server_hops_only():
    p = comm_only(inter_transfer_s=0.1, intra_transfer_s=0.02, bus_share_exponent=1.0, host_staging=0.5)
    # 4 workers per server share the intra link: D = 4 * 0.02; hop = max(0.1, D) + 0.5 * D
    assert ring_time_s(p, 8, 2, 4) == pytest.approx(2 * 7 / 8 * (0.1 + 0.5 * 0.08))
    assert ring_time_s(p, 4, 1, 4) == pytest.approx(2 * 3 / 4 * 0.08)  # one server: no NIC, no staging
    plain = comm_only(inter_transfer_s=0.1, intra_transfer_s=0.02, bus_share_exponent=1.0)
    assert ring_time_s(plain, 8, 2, 4) == pytest.approx(2 * 7 / 8 * 0.1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 1e3)), min_size=1, max_size=20),
       st.floats(1.0, 32.0))
def test_smooth_max_is_bit_identical_to_the_symmetric_form(pairs, g):
    """The one-power form must not move a single bit (the simulator's decisions depend on it)."""
    a, b = (np.array(v, dtype=float) for v in zip(*pairs))
    m = np.maximum(a, b)
    safe = np.where(m > 0, m, 1.0)
    symmetric = np.where(m > 0, safe * ((a / safe) ** g + (b / safe) ** g) ** (1.0 / g), 0.0)
    assert np.array_equal(smooth_max(a, b, g), symmetric)
