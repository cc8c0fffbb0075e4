"""What the package ships for monitoring (packaging/prometheus/): the alert rules pass
`promtool check rules` and their own `promtool test rules`, and every expression of the rules and
of the Grafana dashboard names only metrics the exporter writes (status, watch and doctor
--prometheus: advisor/watch/export.py, advisor/health/export.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from advisor.health.doctor import examine
from advisor.health.export import METRICS, DoctorCollector
from advisor.health.findings import Finding
from advisor.health.look import CacheLook, Look, SsdLook
from advisor.readers.smart import Endurance
from advisor.watch.export import COUNTERS, GAUGES, SamplesCollector, registry, textfile
from advisor.watch.sampler import Sample

PROMETHEUS = Path(__file__).parents[2] / "packaging" / "prometheus"
RULES = PROMETHEUS / "cachewise-alerts.yml"
DASHBOARD = PROMETHEUS / "cachewise-dashboard.json"
METRIC = re.compile(r"\bcachewise_[a-z_]+\b")


def exported() -> set[str]:
    """Every metric name the textfile can hold."""
    names = {"cachewise_caches", "cachewise_cache_info"}
    names |= {f"cachewise_cache_{n}_total" for n, _ in COUNTERS} | {f"cachewise_cache_{n}" for n, _ in GAUGES}
    return names | set(METRICS)


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: packaging/test.sh installs Debian's prometheus package "
                    "(packaging/deb-packages.txt)")
    return found


def test_promtool_checks_the_rules() -> None:
    run = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout + run.stderr


def test_promtool_tests_the_rules_on_doctors_series() -> None:
    run = subprocess.run([promtool(), "test", "rules", "cachewise-alerts.test.yml"], cwd=PROMETHEUS,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout + run.stderr


def test_every_rule_names_exported_metrics_and_the_doctor() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) >= 10
    for rule in rules:
        names = set(METRIC.findall(rule["expr"]))
        assert names and names <= exported(), (rule["alert"], names - exported())
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert "cachewise" in rule["annotations"]["description"], rule["alert"]


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for p in dashboard["panels"]:
        found.append(p)
        found += p.get("panels", [])  # a row's own panels
    return found


def test_the_dashboard_loads_and_every_panel_reads_exported_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["templating"]["list"][0]["name"] == "instance"
    shown = panels(dashboard)
    assert len(shown) >= 10 and len({p["id"] for p in shown}) == len(shown)
    read: set[str] = set()
    for p in shown:
        exprs = [t["expr"] for t in p["targets"]]
        assert exprs, p["title"]
        for expr in exprs:
            names = set(METRIC.findall(expr))
            assert names and names <= exported(), (p["title"], names - exported())
            read |= names
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 and p["description"], p["title"]
    # the panels show doctor's gauges and the samples' alike
    assert {"cachewise_cache_failed", "cachewise_ssd_percentage_used", "cachewise_ssd_days_left",
            "cachewise_cache_dirty_stuck_seconds", "cachewise_cache_dirty_bytes", "cachewise_cache_hits_total"} <= read


def test_doctors_metrics_are_all_written_with_their_help() -> None:
    """A report with a cache, an SSD and the boot and tunables sources registered writes every
    metric METRICS names (so the rules and the dashboard name what a real run writes)."""
    s = Sample(1.0, "labvg/wc", "dm-writecache", "writeback", "dirty", None, 1 << 30, 1 << 29, 1 << 29, None, None,
               block_bytes=4096)
    look = Look(100.0, True, True, None, (CacheLook("labvg/wc", "dm-writecache", sample=s,
                                                    io_errors={"cache": 0}),),
                (SsdLook("sdc", "/dev/sdc", ("labvg/wc",), Endurance(percentage_used=5, data_written_bytes=10**12),
                         1e5, "sampler"),), 8 << 30)

    def boot(look: Look, settings: object) -> list[Finding]:
        return []

    report = examine(look, sources=[("boot", boot), ("tunables", boot)])
    text = textfile(registry(SamplesCollector([s]), DoctorCollector(report, 100.0, 8 << 30)))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    written = {sample.name for f in families.values() for sample in f.samples}
    assert set(METRICS) - {"cachewise_doctor_findings"} <= written  # no finding: the family is there, empty
    assert "cachewise_doctor_findings" in families
    assert families["cachewise_boot_ready"].samples[0].value == 1
    assert families["cachewise_ssd_days_left"].samples[0].value == pytest.approx(95 * 10**12 / 5 / 1e5 / 86400)
    assert all(families[n].documentation == METRICS[n] for n in METRICS)
