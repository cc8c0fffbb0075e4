"""A Proxmox-style thin pool as discovery sees it, from the lab's captured snapshots
(tests/fixtures/lab-thin): the pool is the device its admin names (pve/data), with what uses it;
a cache lvm2 put on its data LV is shown on the pool and refused in one sentence that says how to
take it off; cachewise plans no cache of a thin pool yet. Nothing runs."""

from __future__ import annotations

import pytest

from advisor.disks.collect import RawSystem
from advisor.disks.devices import Inventory
from advisor.disks.discovery import build_inventory, find_device
from cachewise.cli import main
from recipes.common import RecipeError
from recipes.removal import RemoveOptions, remove
from tests.conftest import FIXTURES

THIN = FIXTURES / "lab-thin" / "raw-thin.json"
CACHED = FIXTURES / "lab-thin" / "raw-cached.json"


def inventory(path: object) -> Inventory:
    return build_inventory(RawSystem.load(path))  # type: ignore[arg-type]


@pytest.mark.parametrize("raw", [THIN, CACHED])
def test_the_thin_pool_is_the_device_its_name_denotes_and_says_what_uses_it(raw: object) -> None:
    inv = inventory(raw)
    pool = find_device(inv, "/dev/pve/data")
    assert pool is not None and pool.dm_name == "pve-data" and find_device(inv, "pve/data") is pool
    assert not pool.hidden and pool.state == "in-use" and pool.in_use_reason == "in use because thin pool of pve/vm-100-disk-0"
    layer = find_device(inv, "/dev/mapper/pve-data-tpool")
    assert layer is not None and layer.hidden and layer.stable_path == "/dev/mapper/pve-data-tpool"


def test_a_bare_thin_pool_has_no_cache() -> None:
    pool = find_device(inventory(THIN), "/dev/pve/data")
    assert pool is not None and pool.caching is None


def test_the_gate_refuses_a_thin_pools_cache_in_one_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["plan", "lvmcache-attach", "--lv", "pve/data", "--ssd", "/dev/sdb", "--size", "64m",
               "--from-raw", str(THIN)])
    err = capsys.readouterr().err
    assert rc != 0 and "is a thin pool" in err and "Nothing was changed" in err and "Traceback" not in err


def test_a_cache_on_the_pools_data_is_shown_on_the_pool_and_its_removal_said_in_one_sentence() -> None:
    inv = inventory(CACHED)
    pool = find_device(inv, "/dev/pve/data")
    assert pool is not None and pool.caching is not None
    assert (pool.caching.kind, pool.caching.part, pool.caching.mode) == (
        "lvmcache", "thin pool whose data LV is cached", "writeback")
    assert pool.caching.remove is None
    with pytest.raises(RecipeError, match=r"`lvconvert --uncache pve/data` writes its dirty blocks back") as err:
        remove(inv, RemoveOptions(device="/dev/pve/data"))
    assert str(err.value).endswith("Nothing was changed.")


def test_the_pools_data_lv_is_no_name_a_plan_takes() -> None:
    """lvm2 refuses most commands on the hidden _tdata (the lab: "requires LV with properties:
    lv_is_visible"); an uncache or a move planned through it would leave the pool half done."""
    with pytest.raises(RecipeError, match="one of LVM's own sub-LVs"):
        remove(inventory(CACHED), RemoveOptions(device="pve/data_tdata"))
