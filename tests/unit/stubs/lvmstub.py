#!/usr/bin/env python3
"""A stand-in for pvs, lvs, blkid, lsblk and the lvm commands an attach runs, for the playbook
test: it answers the playbook's read-only checks from a JSON model ($CW_STUB_STATE) and changes
the model the way the real command changes the system (the same model as FakeLvm in
test_execute.py). Every changing command is appended to the model's "ran" list."""

import json
import os
import sys

path = os.environ["CW_STUB_STATE"]
with open(path) as fh:
    st = json.load(fh)
tool, a = os.path.basename(sys.argv[0]), sys.argv[1:]
pvs, lvs = st["pvs"], st["lvs"]
rc = 0
if tool == "lsblk":
    if "SIZE" in a:
        if a[-1] not in st["sizes"]:
            sys.exit(32)
        print(st["sizes"][a[-1]])
    else:  # MOUNTPOINT
        print("")
elif tool == "blkid":
    if a[-1] in pvs:
        print(f'{a[-1]}: TYPE="LVM2_member"')
    else:
        rc = 2
elif tool == "pvs":
    if a[-1] not in pvs:
        rc = 5
    else:
        print("  " + (pvs[a[-1]] if "vg_name" in a else a[-1]))
elif tool == "lvs":
    if a[-1] not in lvs:
        rc = 5
    elif "-o" in a:
        print("  " + lvs[a[-1]][a[a.index("-o") + 1]])
else:
    st["ran"].append([tool, *a])
    if tool == "pvcreate":
        pvs[a[-1]] = ""
    elif tool == "vgextend":
        pvs[a[-1]] = a[0]
    elif tool == "lvcreate":
        lvs[f"{a[-2]}/{a[a.index('-n') + 1]}"] = {"segtype": "linear", "cache_mode": ""}
    elif tool == "lvconvert" and "cache-pool" in a:
        del lvs[a[a.index("--poolmetadata") + 1]]
        lvs[a[-1]] = {"segtype": "cache-pool", "cache_mode": a[a.index("--cachemode") + 1]}
    elif tool == "lvconvert" and "--cachepool" in a:
        pool = lvs.pop(a[a.index("--cachepool") + 1])  # lvm2 renames it <name>_cpool, hidden
        lvs[a[-1]] = {"segtype": "cache", "cache_mode": pool["cache_mode"]}
    else:
        sys.exit(f"lvmstub: {tool} {a} is not modelled")
    with open(path, "w") as fh:
        json.dump(st, fh)
sys.exit(rc)
