"""ringsched: GADGET online scheduling of ring-all-reduce (RAR) training jobs on GPU clusters.

The Python API (docs/api.md): ``ringsched.simulate``, ``ringsched.compare``, ``ringsched.sweep``
(from ``ringsched.experiment.api``, imported on first use so that ``import ringsched.errors``
and the command line stay light). The layers are in docs/architecture.md.
"""

from ringsched.version import __version__

_API = ("simulate", "compare", "sweep", "SimulationResult", "CompareResult", "SweepResult")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from ringsched.experiment import api

        return getattr(api, name)
    raise AttributeError(f"module 'ringsched' has no attribute {name!r}")
