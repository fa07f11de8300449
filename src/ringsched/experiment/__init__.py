"""The experiment layer, above the simulator and the reports: objectives (``objectives/``),
running one (workload, policy, objective) (``run.py``), workloads (``workload.py``),
experiment files (``config.py``), compare and sweep (``compare.py``, ``sweep.py``), and the
executors that run them (``executors.py``: local process pool; ``ray_executor.py``: Ray).
The Python API (``api.py``, re-exported by ``ringsched``) lives here."""
