"""Ring embedding: where a job's ring of workers goes in the cluster.

A placement is a sorted tuple of server indices, one per worker (``perfmodel.speed.Placement``).
Workers of one server sit consecutively on the ring, so a placement over k servers has
exactly k cross-server ring edges (design brief, section 1).
"""

from ringsched.embedding.consolidated import consolidated, counts_to_placement, placement_counts

__all__ = ["consolidated", "counts_to_placement", "placement_counts"]
