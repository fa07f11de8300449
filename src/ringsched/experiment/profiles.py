"""Fitted step-time parameters in a run: ``--profiles MODEL=PARAMS.json`` makes the jobs of a
catalogue model run at the step times of a ``ringsched model fit`` file (ring model) instead of
the catalogue's, both where a trace's durations become work and in the simulated world. The
documents themselves go into the experiment config, so ``experiment.yaml`` is self-contained."""

from __future__ import annotations

import json
from pathlib import Path

from ringsched.errors import InputError


def read_profile(text: str) -> tuple[str, dict]:
    """``MODEL=PARAMS.json`` -> (canonical model name, the parameter document), checked."""
    from ringsched.perfmodel.catalogue import get_profile
    from ringsched.perfmodel.params_io import read_params_json

    model, eq, path = text.partition("=")
    if not eq or not model.strip() or not path.strip():
        raise InputError(f"{text!r} is not MODEL=PARAMS.json", field="profiles")
    try:
        name = get_profile(model.strip()).name
    except InputError as e:
        raise InputError(e.message, field="profiles") from None
    try:
        doc = read_params_json(Path(path.strip()).expanduser())
    except InputError as e:
        raise InputError(e.message, file=e.file, row=e.row, field="profiles") from None
    ring_params(doc, source=path.strip())
    return name, doc


def ring_params(doc: dict, source: str = "profiles"):
    """The RingParams of a parameter document (only the ring model drives the simulator)."""
    from ringsched.perfmodel.fit import load_fitted
    from ringsched.perfmodel.ring import RingParams

    try:
        _, params = load_fitted(doc)
    except (ValueError, TypeError) as e:
        raise InputError(str(e), file=source, field="profiles") from None
    if not isinstance(params, RingParams):
        raise InputError(f"a {doc.get('model')} model file; the simulator needs the ring model (model fit --model "
                         "ring)", file=source, field="profiles")
    return params


def speed_model(cluster, profiles: dict[str, dict] | None):
    """A SpeedModel of ``cluster`` with the fitted parameters of ``profiles`` set."""
    from ringsched.perfmodel.speed import SpeedModel

    speed = SpeedModel(cluster)
    for model, doc in sorted((profiles or {}).items()):
        speed.set_params(model, ring_params(doc))
    return speed


def profiles_key(profiles: dict[str, dict] | None) -> str:
    """A hashable, order-independent form (for caches)."""
    return json.dumps(profiles or {}, sort_keys=True)
