"""The full tier's list (tests/full_tier.py): what the README's command leaves out."""

from __future__ import annotations

import re
from pathlib import Path

from full_tier import LIST, choose, listed, read_durations

ROOT = Path(__file__).resolve().parents[1]


def test_every_listed_test_is_a_test_function_of_its_file() -> None:
    entries = listed()
    assert entries, f"{LIST} lists nothing"
    missing = []
    for nodeid in sorted(entries):
        path, _, name = nodeid.partition("::")
        function = name.split("[", 1)[0]
        source = ROOT / path
        if not source.exists() or not re.search(rf"^\s*def {re.escape(function)}\(",
                                                 source.read_text(encoding="utf-8"), re.M):
            missing.append(nodeid)
    assert missing == [], f"{LIST.name} names tests that no longer exist: {missing[:5]}"


def test_no_security_or_quality_test_is_left_out_of_the_default_run() -> None:
    assert not [n for n in listed() if n.startswith(("tests/adversarial/", "tests/test_quality"))]


def test_a_parametrized_test_keeps_its_fastest_instance_and_short_ones() -> None:
    timings = [(9.0, "tests/test_templater_x.py::test_a[one]"),
               (3.0, "tests/test_templater_x.py::test_a[two]"),
               (5.0, "tests/test_templater_x.py::test_a[three]"),
               (1.0, "tests/test_templater_x.py::test_a[four]"),
               (1.4, "tests/test_templater_x.py::test_a[five]"),
               (30.0, "tests/adversarial/test_adv_y.py::test_b[one]"),
               (40.0, "tests/adversarial/test_adv_y.py::test_b[two]")]
    assert choose(timings) == ["tests/test_templater_x.py::test_a[one]",
                               "tests/test_templater_x.py::test_a[three]",
                               "tests/test_templater_x.py::test_a[two]"]


def test_heavy_host_tests_of_one_file_keep_their_fastest() -> None:
    timings = [(12.0, "tests/test_templater_k.py::test_slow"),
               (9.0, "tests/test_templater_k.py::test_slower_not"),
               (20.0, "tests/test_templater_k.py::test_slowest"),
               (3.0, "tests/test_templater_k.py::test_quick"),
               (50.0, "tests/test_cli.py::test_alone"),
               (50.0, "tests/test_dask_x.py::test_one"),
               (60.0, "tests/test_dask_x.py::test_two")]
    assert choose(timings) == ["tests/test_templater_k.py::test_slow",
                               "tests/test_templater_k.py::test_slowest"]


def test_durations_are_read_from_pytest_report_lines() -> None:
    text = ("============ slowest 600 durations ============\n"
            "12.50s call     tests/test_a.py::test_x[p-1]\n"
            "3.10s setup    tests/test_a.py::test_y\n"
            "0.90s call     tests/test_b.py::test_z\n")
    assert read_durations(text) == [(12.5, "tests/test_a.py::test_x[p-1]"),
                                    (0.9, "tests/test_b.py::test_z")]
