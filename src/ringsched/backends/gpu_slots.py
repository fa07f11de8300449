"""Which GPU of which machine a rank uses: slots on servers, and the device a worker binds.

A *slot* is one GPU of one server of the cluster spec (server ``s`` has slots
``0 .. gpus[s]-1``). Each rank of an attempt gets a slot on its server that no other live
attempt holds (``assign_slots``; the controller passes the live attempts, so an ended
attempt's slots are free again without bookkeeping). A worker then maps its (server, slot) to
a device of the machine it runs on and picks its collective backend (``choose_device``): NCCL
on that one GPU when the machine has it, gloo on the CPU otherwise. Both are pure functions,
so the GPU path is tested on machines without GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ringsched.perfmodel.speed import Placement

MACHINE = "machine"  # every server of the spec is emulated on this one machine (local; Ray on one node)
NODE = "node"  # every server is its own machine (a Ray node): its GPUs are numbered from 0


def assign_slots(placement: Placement, held: Iterable[tuple[Placement, Sequence[int]]],
                 gpus_per_server: Sequence[int]) -> tuple[int, ...]:
    """The slot of each rank of ``placement``: the lowest slots of its server that none of the
    ``held`` (placement, slots) pairs of the other live attempts uses, in rank order.

    Raises ``ValueError`` when a server has no free slot left (an over-full allocation)."""
    taken: dict[int, set[int]] = {}
    for p, slots in held:
        for server, slot in zip(p, slots, strict=True):
            taken.setdefault(int(server), set()).add(int(slot))
    out = []
    for rank, server in enumerate(placement):
        used = taken.setdefault(int(server), set())
        free = next((s for s in range(int(gpus_per_server[server])) if s not in used), None)
        if free is None:
            raise ValueError(f"rank {rank}: server {server} has no free GPU slot "
                             f"({int(gpus_per_server[server])} held)")
        used.add(free)
        out.append(free)
    return tuple(out)


@dataclass(frozen=True)
class DeviceChoice:
    """How one rank runs: ``backend`` for ``init_process_group``; with NCCL, the value of
    ``CUDA_VISIBLE_DEVICES`` that leaves this rank its one GPU (then ``cuda:0``)."""

    backend: str  # "nccl" or "gloo"
    visible_devices: str | None  # None: the CPU, CUDA_VISIBLE_DEVICES left as it was

    @property
    def device(self) -> str:
        return "cuda:0" if self.visible_devices is not None else "cpu"


CPU = DeviceChoice("gloo", None)


def device_index(server: int, slot: int, gpus_per_server: Sequence[int], numbering: str) -> int:
    """The slot's GPU among those the worker's machine shows: on an emulated cluster the GPUs
    of the earlier servers come first; on a node of its own, the slot itself."""
    if not 0 <= slot < int(gpus_per_server[server]):
        raise ValueError(f"slot {slot} is not a GPU of server {server} ({int(gpus_per_server[server])} GPUs)")
    if numbering == MACHINE:
        return sum(int(g) for g in gpus_per_server[:server]) + slot
    if numbering == NODE:
        return slot
    raise ValueError(f"unknown GPU numbering {numbering!r} (expected {MACHINE!r} or {NODE!r})")


def choose_device(rank: int, placement: Placement, slots: Sequence[int], gpus_per_server: Sequence[int],
                  numbering: str, device_count: int, inherited_visible: str | None = None) -> DeviceChoice:
    """NCCL on rank ``rank``'s slot GPU when the machine shows it, gloo on the CPU otherwise (no
    slots, no GPUs, or fewer GPUs than the cluster spec puts on this machine).

    With ``MACHINE`` numbering every rank of the attempt is on this machine, so all ranks
    decide alike: NCCL only if every rank's GPU is there (one backend per group). With ``NODE``
    numbering each node decides for its own ranks.

    ``device_count`` counts the devices this process sees, i.e. those ``inherited_visible``
    (the CUDA_VISIBLE_DEVICES it was started with, e.g. by Slurm) names when it is set; the
    chosen GPU is then that list's entry, so the rank never escapes its allotment."""
    if not slots or device_count <= 0:
        return CPU
    names = None
    if inherited_visible is not None:
        names = [v.strip() for v in inherited_visible.split(",") if v.strip()]
        device_count = min(device_count, len(names))
    ranks = range(len(placement)) if numbering == MACHINE else (rank,)
    indices = [device_index(int(placement[r]), int(slots[r]), gpus_per_server, numbering) for r in ranks]
    if max(indices) >= device_count:
        return CPU
    index = indices[rank if numbering == MACHINE else 0]
    return DeviceChoice("nccl", names[index] if names is not None else str(index))
