"""Cluster vocabulary: servers, racks, bandwidths, and how users write them."""

from ringsched.cluster.model import Cluster, Rack, Server, load_cluster, parse_spec

__all__ = ["Cluster", "Rack", "Server", "load_cluster", "parse_spec"]
