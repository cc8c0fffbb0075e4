"""How the terminal UI words what cachewise says: every next step as the key, checkbox or guided
flow that takes it here (a shell command only where the UI has no way to do it), and the facts
whose domain wording the UI says differently.

The domain raises codes with facts (advisor/errors.py); the CLI words the same codes with its
flags (cachewise/cli/phrases.py). tests/unit/test_errors.py holds both phrasebooks to every
action and code.
"""

from __future__ import annotations

from advisor.errors import CachewiseError, Phrasebook

WIPE = "Wipe what they hold"  # the Recommend screen's checkbox that lets a plan destroy data
REMOVE_FLOW = "Remove a cache on the start screen (g)"

ACTIONS = {
    "see-devices": "the Disks screen lists them",
    "see-caches": f"{REMOVE_FLOW} lists them",
    "name-cache": "choose a cached LV or a bcache device",
    "name-disk": "choose a disk on the Disks screen",
    "move-history-aside": "move it aside to start a new history",
    "upgrade": "upgrade cachewise",
    "record-samples": "record the cache's samples into a file in a shell (cachewise watch CACHE --json-lines > FILE)",
    "reinstall": "reinstall cachewise",
    "larger-block-size": "analyse it in a shell with a larger block size (cachewise analyze FILE --block-size 64k)",
    "sample-the-curve": "analyse it in a shell by sampling, as the TUI does (cachewise analyze FILE --mode shards), "
    "or with a larger block size",
    "name-lv": "choose the LV itself",
    "allow-wipe": f"if its data can go, tick '{WIPE}' on the Recommend screen",
    "allow-partition": "choose the SSD's whole disk",
    "smaller-size": "choose a smaller alternative with o",
    "give-size": "let the recommendation size the cache",
    "writecache-block-512": "let the recommendation choose the block size from the file system",
    "remove-cache": f"to replace it, remove it first ({REMOVE_FLOW}), then ask again",
    "plan-instead": "choose {recipe} instead",
    "free-pv": "take {device} out of VG {vg} first (vgreduce {vg} {device})",
    "keep-data-with-lvmcache": "keep the data in place with lvmcache: choose an LV as the slow device",
    "detach-others-first": "remove the other devices' caches first; the last removal may free the SSD",
    "restore-after": f"back it up, tick '{WIPE}', and restore it onto the bcache device afterwards",
    "move-into-lvm": "back the data up, make an LV for it, restore it there, and choose the LV as the slow device",
    "use-native-tier": "use that system's own SSD tier instead (named above)",
    "name-both-ssds": "mark both SSDs with Space on the Fast device step",
    "writethrough": "choose writethrough with o",
    "other-name": "choose another name",
    "name-ssd": "resize it in a shell, naming the SSD (cachewise plan lvmcache-resize --ssd DEV)",
    "run-doctor": "press d on the Disks screen to see what doctor says",
    "free-ssd": "choose a free SSD",
    "remove-first": f"remove that one first ({REMOVE_FLOW})",
    "choose-partition": "choose the partition that holds the data",
    "watch": "press w on the Disks screen to follow {target}",
    "change-mode": "switch its mode in a shell (cachewise plan lvmcache-mode --lv {target})",
    "remove": "press u on the Disks screen to remove it (dirty data is flushed first)",
    "free-bcache-cache": f"{REMOVE_FLOW} detaches it and gives it back blank",
    "free-ssd-instead": f"{REMOVE_FLOW} gives the SSD back blank",
    "rescue": f"{REMOVE_FLOW} takes the failed cache off (its preview says what the origin lacks)",
    "activate-lv": "activate it in a shell (lvchange -ay {target}; lvm2 says why if it cannot), then remove its cache",
    "repair-mirror": "put a new SSD in, then repair the mirror onto it in a shell (cachewise plan cache-repair "
    "--lv {target} --ssd NEW_SSD)",
    "accept-data-loss": "press x when the Remove flow asks whether losing the blocks only the dead SSD held is "
    "acceptable",
    "resume": "cachewise offers to finish it when it starts next",
    "rollback": "cachewise offers to undo the steps that took effect when it starts next",
    "fix-and-resume": "once the cause is fixed, start cachewise again: it offers to resume the plan from here",
    "rollback-again": "start cachewise again to roll back the rest",
    "fix-and-rollback": "fix the cause and start cachewise again to roll back the rest",
    "free-space-and-resume": "free space, then start cachewise again: it offers to finish the plan",
    "free-space-and-rollback": "free space, then start cachewise again to roll back the rest",
    "fix-state-dir": "free space or fix the state directory, then apply again",
    "wait-for-it": "wait for it to end",
    "free-space": "free space on that disk, then try again",
    "abandon": "look at it, then set it aside in a shell (cachewise apply --abandon {journal}); the steps it ran "
    "stay as they are",
    "apply-on-machine": "save the plan and apply it on that machine (sudo cachewise apply PLAN)",
    "run-on-machine": "open cachewise on that machine",
    "apply-on-each-host": "save it as JSON and apply it on each host (sudo cachewise apply PLAN)",
    "plan-again": "go back and plan again if the disks changed",
    "name-plan": "choose a plan",
    "secure-plan-file": "make {path} root's and writable by no one else (sudo chown root: {path}; sudo chmod "
    "go-w {path}), after reading it",
    "accept-elsewhere": "check that it names this machine's disks, then apply it in a shell with "
    "`sudo cachewise apply --plan-from-elsewhere PLAN`",
    "become-root": "start cachewise as root (sudo cachewise)",
    "choose-state-dir": "start cachewise with a writable state directory (CACHEWISE_STATE_DIR)",
    "choose-output": "choose another file name or folder",
    "install": "install the {package} package (apt-get install {package})",
    "start-udev": "start udev (it makes the /dev/disk/by-id links) and plan again",
    "record-trace": "trace the slow device, or open a trace (t on the Disks screen)",
    "accept-writeback-risk": 'tick "Accept writeback risk" if losing written data with the SSD is acceptable, or '
    "choose writethrough",
    "record-longer": "trace the slow device again over the workload's whole cycle (a day, or a week)",
    "probe-device": "probe {device} (p on the Disks screen)",
    "choose-workload": "choose the workload on the left",
    "declare-hot-fraction": "choose the workload type closest to yours",
    "name-fast": "mark the SSD(s) with Space",
    "give-data-size": "choose a device whose size is known",
    "trace-format": "analyse it in a shell, naming its format (cachewise analyze FILE --format fio)",
    "capture-elsewhere": "analyse the finished capture in a shell (cachewise analyze FOLDER), move it away, or "
    "capture into another folder (cachewise capture start DEV --dir FOLDER)",
    "trace-columns": "analyse it in a shell, naming its CSV columns (cachewise analyze FILE --csv-columns ...)",
    "scratch-only": "replay writes only onto a scratch device that holds nothing, or replay the reads only",
}

SENTENCES = {
    "snapshot-has-no-caches": "this shows a saved snapshot, which has no live caches to read",
}

# What each key's action does, in a line: the help screen and the command palette (Ctrl+P) list
# every action of a screen with it. Keyed by the binding's action; tests/tui/test_palette.py
# fails when a binding of any screen has none.
KEYS = {
    "help": "What this screen is for, and every key it answers to",
    "app.help": "What this question is for, and every key it answers to",
    "app.pop_screen": "Go back to the screen before this one; nothing is changed",
    "app.quit": "Leave cachewise",
    "recheck": "Re-check the cache: keep, grow, shrink, change its mode or remove it, from what the kernel counted "
    "and what it was predicted to do",
    "recheck_plan": "Preview the plan the re-check names (nothing runs before you confirm it)",
    "rescan": "Read the disks again now (a disk plugged in or out is noticed by itself)",
    "toggle_all": "Show or hide loop, zram and empty devices",
    "toggle_mark": "Mark or unmark the highlighted device (the SSDs for a cache, the disks to probe)",
    "probe": "Measure the marked disks (or the highlighted one) with a short read-only fio probe",
    "analyze_trace": "Open a trace of the workload (a file) and analyse it",
    "recommend": "Recommend a cache for the highlighted device, with the marked SSD(s)",
    "warmup": "Follow a cache as it warms up: hit ratio, fill and dirty data",
    "uncache": "Remove the highlighted cache: preview, flush its dirty data, detach",
    "guide": "The start screen: add a cache, remove one, or plan only, step by step",
    "plan": "Preview the plan of the chosen cache (or save it, in Plan only); nothing runs yet",
    "other": "The next alternative to the recommendation, then the recommendation again",
    "cancel": "Close this question without doing anything",
    "answer(True)": "Probe the disk although it is in use (adds read load while it runs)",
    "answer(False)": "Do not probe it",
    "accept_loss": "Take the failed cache off, accepting that what only its dead SSD held is lost",
    "decline": "Leave the failed cache as it is; nothing is planned",
    "choose('resume')": "Resume the interrupted plan: run the steps that did not take effect",
    "choose('rollback')": "Roll back the interrupted plan's steps that took effect",
    "choose('')": "Decide later: leave everything as it is",
    "dismiss": "Close this help",
    "up": "Go up to the folder that holds this one",
    "choose": "Take the highlighted folder, to save in",
    "complete": "Take the completion of the path shown in grey (or, with none, go to the next field)",
    "browse": "Browse the folders for the file (only the files that fit are listed)",
    "back": "Go back to the start screen; nothing begins",
    "save": "Save this plan to a file instead of running it (JSON for `cachewise apply`, or Ansible)",
    "doctor": "What is wrong with the caches and their SSDs (failed, degraded, stuck flushes, wear), and the fix",
    "fix": "Preview the plan that fixes the highlighted finding, or show the command that does",
    "look_again": "Look at the caches again now",
}

TUI = Phrasebook(ACTIONS, SENTENCES)


def word(error: CachewiseError) -> str:
    """The whole message: what happened, what to do, and "Nothing was changed." when nothing was."""
    return TUI.word(error)
