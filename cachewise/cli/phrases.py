"""How the command line words what cachewise says: every next step as the command or flag that
takes it, and the facts whose domain wording names an option the CLI spells differently.

The domain raises codes with facts (advisor/errors.py); the TUI words the same codes with its
keys and checkboxes (screens/phrases.py). tests/unit/test_errors.py holds both phrasebooks to
every action and code.
"""

from __future__ import annotations

from advisor.errors import CachewiseError, Phrasebook

ACTIONS = {
    "see-devices": "`cachewise scan` lists the devices",
    "see-caches": "`cachewise status` lists the caches",
    "name-cache": "name an lvmcache LV as VG/LV or a bcache device as bcacheN",
    "name-disk": "give a disk such as /dev/sdb or a /dev/disk/by-id/ path",
    "move-history-aside": "move it aside to start a new history",
    "upgrade": "upgrade cachewise",
    "record-samples": "record one with `cachewise watch CACHE --json-lines > FILE` (it plays back with "
    "`cachewise tui --replay-samples FILE`)",
    "reinstall": "reinstall cachewise (apt-get install --reinstall cachewise)",
    "larger-block-size": "give a larger --block-size",
    "sample-the-curve": "analyse it by sampling (--mode shards) or give a larger --block-size",
    "name-lv": "give it as VG/LV",
    "allow-wipe": "if it can go, pass --wipe (and confirm)",
    "allow-partition": "pass --allow-partition to use just this partition",
    "smaller-size": "choose a smaller --size",
    "give-size": "give the cache size (--size 40g) or a recommendation (--recommendation rec.json)",
    "writecache-block-512": "use --block-size 512",
    "remove-cache": "to replace it, remove it first (`cachewise plan {recipe} ...`, or `cachewise plan remove "
    "--device {device}`), then ask again",
    "plan-instead": "use `cachewise plan {recipe}`",
    "free-pv": "free it from {vg} first (vgreduce {vg} {device})",
    "keep-data-with-lvmcache": "keep the data in place with lvmcache (`cachewise plan lvmcache-attach`, on LVM)",
    "detach-others-first": "detach the other devices of the cache set first; the last detach may free the SSD",
    "restore-after": "back it up and restore it onto the bcache device afterwards (then pass --wipe)",
    "move-into-lvm": "back the data up, make an LV for it (pvcreate, vgcreate, lvcreate), restore it there, and "
    "ask again with --slow VG/LV",
    "use-native-tier": "use that system's own SSD tier instead (its commands are named above)",
    "name-both-ssds": "name both with --ssd A --ssd B",
    "writethrough": "choose --mode writethrough for one",
    "other-name": "choose another name",
    "name-ssd": "name it with --ssd (twice for a mirrored pool)",
    "run-doctor": "run `cachewise doctor {target}`",
    "free-ssd": "name a free SSD",
    "watch": "follow it with `cachewise watch {target}`",
    "change-mode": "switch its mode with `cachewise plan lvmcache-mode --lv {target}`",
    "remove": "remove it with `cachewise plan remove --device {target}` (flushes first)",
    "free-bcache-cache": "detach it from its bcache devices with `cachewise plan remove --device BCACHE --free-ssd`",
    "free-ssd-instead": "pass --free-ssd: a bcache cache device is wiped, not released",
    "rescue": "rescue it with `cachewise plan remove --device {target}` (it takes the cache off without its SSD and "
    "says first what the origin lacks)",
    "activate-lv": "activate it with `lvchange -ay {target}` (lvm2 says why if it cannot), then remove its cache",
    "repair-mirror": "put a new SSD in, then repair the mirror onto it with `cachewise plan cache-repair --lv "
    "{target} --ssd NEW_SSD`",
    "accept-data-loss": "pass --accept-data-loss if losing the blocks only the dead SSD held is acceptable (a backup "
    "restores them)",
    "resume": "`cachewise apply --resume` finishes it",
    "rollback": "`cachewise apply --rollback` undoes the steps that took effect",
    "fix-and-resume": "run `cachewise apply --resume` to retry from here once the cause is fixed",
    "rollback-again": "run `cachewise apply --rollback` again to finish",
    "fix-and-rollback": "fix the cause and run `cachewise apply --rollback` again",
    "free-space-and-resume": "free space, then `cachewise apply --resume` finishes it",
    "free-space-and-rollback": "free space, then run `cachewise apply --rollback` again to finish",
    "fix-state-dir": "free space or fix the state directory, then apply again",
    "wait-for-it": "wait for it to end",
    "free-space": "free space on that disk, then try again",
    "abandon": "look at it, then set it aside with `cachewise apply --abandon {journal}` (the steps it ran stay "
    "as they are)",
    "apply-on-machine": "plans are applied on the machine itself with `sudo cachewise apply PLAN`",
    "run-on-machine": "run this on the machine itself",
    "apply-on-each-host": "run `cachewise apply` on each host instead",
    "remove-first": "remove that cache first (`cachewise plan remove --device DEV`)",
    "choose-partition": "choose the partition that holds the data",
    "plan-again": "make a new plan if the disks changed",
    "name-plan": "name the plan to apply (cachewise apply plan.json)",
    "secure-plan-file": "read it, then make it root's and writable by no one else (sudo chown root: {path}; "
    "sudo chmod go-w {path})",
    "accept-elsewhere": "check that it names this machine's disks, then pass --plan-from-elsewhere",
    "become-root": "run it with sudo",
    "choose-state-dir": "choose a writable place with --state-dir or CACHEWISE_STATE_DIR",
    "choose-output": "choose another name or place",
    "install": "install the {package} package (apt-get install {package})",
    "start-udev": "start udev (it makes the /dev/disk/by-id links) and plan again",
    "record-trace": "give --trace FILE (see `cachewise trace`)",
    "accept-writeback-risk": "pass --accept-writeback-risk if losing written data with the SSD is acceptable, or "
    "choose writethrough",
    "record-longer": "record the workload's whole cycle: a week with its nightly and weekly jobs (`cachewise capture "
    "start DEV`, sampled into bounded space; then `--trace` its folder), or a day (`cachewise trace DEV -o FILE "
    "--duration 24h`)",
    "probe-device": "measure {device} with `cachewise probe {device}` (a few seconds of read-only fio)",
    "choose-workload": "give --workload TYPE",
    "declare-hot-fraction": "give --hot-fraction for a Zipf-like random workload",
    "name-fast": "name the SSD to cache with (--fast DEV)",
    "give-data-size": "give --data-size",
    "trace-format": "name the format with --format",
    "capture-elsewhere": "analyse it with `cachewise analyze FOLDER`, move it away, or give --dir for a new capture",
    "trace-columns": "give --csv-columns time=N,op=N,offset=N,size=N (0-based column numbers)",
    "scratch-only": "replay writes only onto a scratch device that holds nothing (--allow-writes --disposable DEV), "
    "or drop --allow-writes to replay the reads",
}

SENTENCES = {
    "bad-speed": "--speed must be between {low:g} and {high:g} (got {speed:g}); nothing was replayed",
    "needs-disposable": "replaying writes would overwrite data on {target}, so it needs --disposable {target} as "
    "well; nothing was written",
    "disposable-mismatch": "--disposable {disposable} does not repeat the target {target} exactly; nothing was written",
    "bad-csv-columns": "bad --csv-columns {spec!r}; nothing was analysed",
    "mirror-needs-two": "the recommendation is writeback on a cache mirrored across two SSDs (LVM raid1), and "
    "{count} --ssd was given",
    "keep-and-release": "--keep-pool and --keep-cachevol keep the cache on the SSD, so it cannot be released too",
    "bcache-release": "a bcache cache device is not released with --release-ssd; it is wiped",
    "no-plan-named": "no plan was named",
    "not-a-replay-result": "{path} is not a `cachewise replay --json` result ({why})",
}

CLI = Phrasebook(ACTIONS, SENTENCES)


def word(error: CachewiseError) -> str:
    """The whole message: what happened, what to do, and "Nothing was changed." when nothing was."""
    return CLI.word(error)
