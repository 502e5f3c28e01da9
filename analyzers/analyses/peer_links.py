"""The GPU-to-GPU link a collective's bus bandwidth is held against: its datasheet bandwidth each way.

NVLink datasheets print the total of both directions over all links (H100/H200 SXM: 900 GB/s); a ring
or tree collective's bus bandwidth (tracetriage.analyzers.model.kernels.bus_factor) is one direction, so the figure
here is half of it. AMD's MI300X: seven Infinity Fabric links of 128 GB/s both ways (64 each way) to the
other GPUs of the platform, 448 GB/s each way in all. Cards without a GPU-to-GPU link talk over PCIe x16.
Within one node only: ranks on other nodes meet over the network, which a trace does not name.

First match wins, in order (so "H100 PCIe" is tried before "H100", "A100-PCIE" before "A100").
"""
from __future__ import annotations

from dataclasses import dataclass

# (a substring of the device name as torch reports it, GB/s each way, the link's name)
_LINKS = (
    ("H100 PCIe", 64.0, "PCIe Gen5 x16"), ("H100 NVL", 300.0, "NVLink bridge"), ("H200 NVL", 450.0, "NVLink bridge"),
    ("A100-PCIE", 32.0, "PCIe Gen4 x16"), ("A100 PCIe", 32.0, "PCIe Gen4 x16"),
    ("V100-PCIE", 16.0, "PCIe Gen3 x16"), ("V100 PCIe", 16.0, "PCIe Gen3 x16"),
    ("B200", 900.0, "NVLink 5"), ("GB200", 900.0, "NVLink 5"), ("B100", 900.0, "NVLink 5"),
    ("H800", 200.0, "NVLink 4 (H800)"), ("H200", 450.0, "NVLink 4"), ("H100", 450.0, "NVLink 4"),
    ("H20", 450.0, "NVLink 4"), ("A800", 200.0, "NVLink 3 (A800)"), ("A100", 300.0, "NVLink 3"),
    ("V100", 150.0, "NVLink 2"), ("MI300X", 448.0, "Infinity Fabric"), ("MI325X", 448.0, "Infinity Fabric"),
    ("L40", 32.0, "PCIe Gen4 x16"), ("L4", 32.0, "PCIe Gen4 x16"), ("A10", 32.0, "PCIe Gen4 x16"),
    ("RTX", 32.0, "PCIe Gen4 x16"), ("T4", 16.0, "PCIe Gen3 x16"),
)


@dataclass(frozen=True)
class PeerLink:
    name: str          # "NVLink 4"
    gbps: float        # each way, per GPU
    source: str = "datasheet"


def peer_link(device_name: str | None) -> PeerLink | None:
    """The GPU-to-GPU link of a device by its name; None for a device the table does not know."""
    if not device_name:
        return None
    for key, gbps, name in _LINKS:
        if key.lower() in device_name.lower():
            return PeerLink(name, gbps)
    return None
