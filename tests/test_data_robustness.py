"""Whatever bytes a CSV holds, reading it either succeeds or raises InputError naming the file."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringsched.errors import InputError
from ringsched.perfmodel.data import read_placements

cell = st.one_of(st.sampled_from(["1", "12", "2244", "0", "x", "", "nan", "-1", "inf", "3.5", "1e9", " 7 "]),
                 st.text(alphabet="0123456789.-eE,x \"", max_size=6))
header = st.sampled_from(["placement,local_bsz,step_time", "num_nodes,num_replicas,local_bsz,step_time",
                          "placement,local_bsz,step_time,sync_time", "num_nodes,local_bsz,step_time",
                          "local_bsz,step_time", "placement,step_time"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=header, rows=st.lists(st.lists(cell, min_size=1, max_size=5), max_size=6))
def test_reader_never_crashes_on_garbage(tmp_path_factory, head, rows):
    f = tmp_path_factory.mktemp("csv") / "data.csv"
    f.write_text(head + "\n" + "\n".join(",".join(r) for r in rows) + ("\n" if rows else ""))
    try:
        _, t = read_placements(f, require_step_time=True)
    except InputError as e:
        line = e.line()
        assert str(f) in line and "\n" not in line
        return
    # accepted: every value is valid
    assert len(t) > 0
    assert np.isfinite(t.step_time).all() and (t.step_time > 0).all()
    assert (t.local_bsz > 0).all() and (t.num_replicas >= t.num_nodes).all()
    assert (t.max_per_node >= np.ceil(t.num_replicas / t.num_nodes)).all()
    assert all(not math.isnan(v) for v in t.num_nodes)
