"""The host<->device link a pinned copy is priced at where the trace measures none: PCIe by the card's generation,
and a GH200's NVLink-C2C to its Grace CPU (before: a name match by substring read "NVIDIA GH200 480GB" as an H200
on PCIe Gen5, 64 GB/s, against the 450 GB/s each way its datasheet gives)."""
from tracetriage.analyzers.analyses.peaks import host_link
from tracetriage.analyzers.whatif.levers.async_copies import CopiesPinned, says


def test_a_gh200_reaches_its_host_over_nvlink_c2c_not_pcie():
    link = host_link("NVIDIA GH200 480GB")
    assert (link.gbps, link.kind) == (450.0, "nvlink-c2c")
    assert host_link("NVIDIA GH200 144G HBM3e").kind == "nvlink-c2c"


def test_pcie_cards_get_their_generations_link():
    assert (host_link("NVIDIA H200").gbps, host_link("NVIDIA H200").generation) == (64.0, 5)
    assert host_link("NVIDIA A100-SXM4-80GB").gbps == 32.0
    assert host_link("Tesla T4").gbps == 16.0
    assert host_link("AMD Instinct MI300A") is None and host_link("Some Future GPU") is None


def test_the_copy_lever_names_the_link_and_its_source():
    words = says(CopiesPinned("async_copies", 3, h2d_gbps=450.0, h2d_source="c2c", d2h_gbps=450.0, d2h_source="c2c"))
    assert "450 GB/s to the device (NVLink-C2C to the Grace CPU, 900 GB/s both ways: NVIDIA GH200 Grace Hopper " \
           "Superchip datasheet)" in words
    assert "datasheet PCIe Gen5 x16 link" in says(CopiesPinned("async_copies", 1, h2d_gbps=64.0, h2d_source="pcie5",
                                                             d2h_gbps=64.0, d2h_source="pcie5"))
