"""Real execution (design brief, section 8): the same policies drive real PyTorch
DistributedDataParallel jobs, on local processes (``local``) or on a Ray cluster
(``ray_backend``), through one scheduling loop (``controller``).

Nothing here imports torch or ray at package import: workers import torch, the Ray launcher
imports ray, the scheduler process needs neither for the local backend.
"""
