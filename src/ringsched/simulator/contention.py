"""Max-min fair sharing of NICs and rack uplinks among rings that cross servers.

Used only for the simulated world with ``contention=True``: a ring over k > 1 servers sends
one stream out of (and into) each of its servers' NICs, and one through the uplink of each
rack it spans when it spans several. Progressive filling: the most constrained link fixes
the share of every ring on it, those rings are frozen, repeat.
"""

from __future__ import annotations

from collections.abc import Mapping

from ringsched.cluster.model import Cluster
from ringsched.perfmodel.speed import Placement


def fair_shares(rings: Mapping[str, Placement], cluster: Cluster) -> dict[str, float]:
    """Bandwidth (bytes/s) each cross-server ring gets; ``rings`` maps job id -> placement."""
    cap: dict[tuple, float] = {}
    uses: dict[str, list[tuple]] = {}
    rack_of = cluster.rack_index
    racks_by_name = {i: r for i, r in enumerate(cluster.racks)}
    for jid, p in rings.items():
        servers = sorted(set(p))
        links = [("nic", s) for s in servers]
        if cluster.racks:
            rs = sorted({int(rack_of[s]) for s in servers})
            if len(rs) > 1:
                links += [("rack", r) for r in rs]
        uses[jid] = links
        for link in links:
            if link not in cap:
                kind, i = link
                cap[link] = cluster.servers[i].nic_Bps if kind == "nic" else racks_by_name[i].uplink_Bps
    users: dict[tuple, set[str]] = {}
    for jid, links in uses.items():
        for link in links:
            users.setdefault(link, set()).add(jid)
    share: dict[str, float] = {}
    left = dict(cap)
    while len(share) < len(uses):
        best_link, best = None, None
        for link, us in users.items():
            n = sum(1 for u in us if u not in share)
            if n:
                v = left[link] / n
                if best is None or v < best or (v == best and link < best_link):
                    best_link, best = link, v
        for u in sorted(users[best_link]):
            if u in share:
                continue
            share[u] = best
            for link in uses[u]:
                left[link] -= best
    return share
