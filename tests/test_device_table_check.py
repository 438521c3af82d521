"""The device table checked against a live device (pure: attributes as the driver reports
them) and warned once per process with both numbers (engine discovery)."""

from __future__ import annotations

import logging

import pytest

from workbench.core.hardware import MIB, check_against_table, from_live, get_device
from workbench.engine import discovery
from workbench.engine.worker_messages import HelloReply

pytestmark = pytest.mark.timeout(30)


def _h200_attributes(l2_bytes: int) -> dict[str, int]:
    """H200 attributes: L2_CACHE_SIZE as the driver reported it on the lent H200s (60 MiB),
    the memory clock chosen to give the data sheet's 4800 GB/s."""
    return {
        "MULTIPROCESSOR_COUNT": 132, "WARP_SIZE": 32, "MAX_THREADS_PER_BLOCK": 1024,
        "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
        "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536, "MAX_REGISTERS_PER_BLOCK": 65536,
        "MAX_SHARED_MEMORY_PER_BLOCK": 49152, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024,
        "L2_CACHE_SIZE": l2_bytes, "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0,
        "MEMORY_CLOCK_RATE": 3125000, "GLOBAL_MEMORY_BUS_WIDTH": 6144,
    }


def test_the_h200_entry_has_the_l2_the_driver_reports() -> None:
    assert get_device("h200").l2_bytes == 60 * MIB
    live = from_live(_h200_attributes(62914560), "NVIDIA H200")
    check = check_against_table(live)
    assert check.table_key == "h200" and check.matches and check.lines() == []


def test_a_difference_names_the_fact_and_both_values() -> None:
    live = from_live(_h200_attributes(50 * MIB), "NVIDIA H200")
    check = check_against_table(live)
    assert not check.matches
    assert [d.field for d in check.differences] == ["l2_bytes"]
    assert check.differences[0].live == 50 * MIB and check.differences[0].table == 60 * MIB
    [line] = check.lines()
    assert "NVIDIA H200" in line and "h200" in line
    assert "live 52428800 (50.0 MiB)" in line and "table 62914560 (60.0 MiB)" in line


def test_a_device_without_an_entry_says_so() -> None:
    live = from_live(_h200_attributes(60 * MIB), "NVIDIA Mystery GPU")
    check = check_against_table(live)
    assert check.table_key is None and not check.matches
    assert "no table entry" in check.lines()[0]


def test_discovery_warns_once_per_process_with_both_numbers(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "_WARNED", set())
    hello = HelloReply(name="NVIDIA H200", attrs=_h200_attributes(48 * MIB),
                       compute_capability=(9, 0), total_memory_bytes=141 * 1024 * MIB,
                       cuda_driver_version="13.0", pycuda_cuda_version="13.0", pid=1)
    with caplog.at_level(logging.WARNING, logger=discovery.__name__):
        for _ in range(3):  # three runners in one process (a Dask worker's, a confirmation)
            assert discovery.spec_from_hello(hello).l2_bytes == 48 * MIB
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1
    assert "live 50331648 (48.0 MiB)" in warned[0] and "table 62914560 (60.0 MiB)" in warned[0]
