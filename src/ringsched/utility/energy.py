"""Energy accounting: busy GPUs, idle GPUs on powered servers, and powered servers.

A server is powered while it hosts at least one job; a server with nothing on it is taken to
be powered down (so consolidation that empties servers saves energy, design brief section 3).
Defaults: NVIDIA H200 SXM board power 700 W busy; about 75 W idle; 1,000 W for the rest of an
8-GPU server (CPUs, memory, NICs, fans) -- round figures, overridable.
"""

from __future__ import annotations

from dataclasses import dataclass

J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class EnergyModel:
    gpu_busy_W: float = 700.0
    gpu_idle_W: float = 75.0
    server_base_W: float = 1000.0

    def kwh(self, busy_gpu_s: float, powered_gpu_s: float, powered_server_s: float) -> float:
        """kWh from busy GPU-seconds, GPU-seconds on powered servers, and powered server-seconds."""
        idle_gpu_s = max(0.0, powered_gpu_s - busy_gpu_s)
        joules = (busy_gpu_s * self.gpu_busy_W + idle_gpu_s * self.gpu_idle_W
                  + powered_server_s * self.server_base_W)
        return joules / J_PER_KWH
