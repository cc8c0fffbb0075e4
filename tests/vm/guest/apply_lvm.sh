# Scenario: lvmcache attach and uncache through `cachewise plan` / `cachewise apply` on a
# mounted ext4 LV whose files' sha256 are recorded (writethrough with a fio workload); SIGKILL
# after each step of an attach, then resume or roll back; 20-odd bad inputs that must leave
# every disk byte-identical. bcache and Ansible: apply_bcache_ansible.sh; writeback lvmcache: watch.sh.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
ssd=$(by_serial SSD0001)
part=$(by_serial PART0001)
other=$(by_serial OTHER0001)
ssd_id=$(ls /dev/disk/by-id/*SSD0001 | head -1)
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
mnt=/run/lab/data

pvcreate -q "$hdd"
vgcreate -q labvg "$hdd"
lvcreate -q -y -L 256M -n data labvg
mkfs.ext4 -q -E lazy_itable_init=0,lazy_journal_init=0 /dev/labvg/data
mkdir -p $mnt && mount /dev/labvg/data $mnt
for i in 1 2 3; do head -c 8M /dev/urandom > $mnt/f$i; done
sync
(cd $mnt && sha256sum f*) > "$LAB_OUT/sums.txt"
# Other disks for bad inputs: a partitioned disk (p1 mounted ext4, p2 ext4), a PV of another VG.
sfdisk -q "$part" <<'PT'
label: gpt
size=96M
size=96M
PT
udevadm settle
mkfs.ext4 -q "${part}1"; mkfs.ext4 -q "${part}2"
mkdir -p /run/lab/p1 && mount "${part}1" /run/lab/p1
pvcreate -q "$other"; vgcreate -q othervg "$other"
lvcreate -q -y -L 16M -n keep othervg  # an LV of another VG, which a tampered plan must not name

verify() {  # verify NAME: remount without caches and check every recorded sum
  sync; umount $mnt; echo 3 > /proc/sys/vm/drop_caches; mount /dev/labvg/data $mnt
  if (cd $mnt && sha256sum -c --quiet "$LAB_OUT/sums.txt") > "$LAB_OUT/verify-$1.txt" 2>&1; then
    echo ok >> "$LAB_OUT/verify-$1.txt"
  else
    echo FAILED >> "$LAB_OUT/verify-$1.txt"
  fi
}
lvm_state() { lvs -a --reportformat json -o vg_name,lv_name,segtype,cache_mode,cache_dirty_blocks > "$LAB_OUT/$1-lvs.json"; pvs --reportformat json -o pv_name,vg_name > "$LAB_OUT/$1-pvs.json"; }

# --- bad inputs: nothing may change on any disk ---
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m -o "$LAB_OUT/good.json" > /dev/null
sync; for d in "$hdd" "$ssd" "$part" "$other"; do sha256sum "$d"; done > "$LAB_OUT/disks-before.txt"
python3 - "$LAB_OUT" <<'PY'
import json, sys
out = sys.argv[1]
plan = json.load(open(f"{out}/good.json"))
def variant(name, change):
    p = json.loads(json.dumps(plan)); change(p); json.dump(p, open(f"{out}/{name}.json", "w"))
variant("changed-size", lambda p: p["devices"][1].__setitem__("size_bytes", p["devices"][1]["size_bytes"] + 4096))
variant("changed-identity", lambda p: p["devices"][1].__setitem__("identity", "wwn-0x5000000000000bad"))
variant("newer-schema", lambda p: p.__setitem__("schema", "cachewise.plan/2"))
variant("corrupt", lambda p: p.pop("steps"))
# Tampering: what a plan file must never be able to make cachewise run.
ssd = plan["devices"][1]["path"]
variant("tamper-rm", lambda p: p["steps"][0].__setitem__("argv", ["rm", "-rf", "/"]))
variant("tamper-sh", lambda p: p["steps"][0].__setitem__("argv", ["sh", "-c", "wipefs -a /dev/sda"]))
variant("tamper-path", lambda p: p["steps"][0].__setitem__("argv", ["/tmp/pvcreate", "--yes", ssd]))
variant("tamper-unbound", lambda p: p["steps"][0].__setitem__("argv", ["pvcreate", "--yes", "--force", "/dev/sda"]))
variant("tamper-undo", lambda p: p["steps"][2].__setitem__("undo", [["wipefs", "--all", "/dev/sda"]]))
variant("tamper-identity", lambda p: p["devices"][1].__setitem__("identity", None))
variant("tamper-twice", lambda p: p["steps"].append(p["steps"][0]))
variant("tamper-write", lambda p: p["steps"][0].update(argv=[], write=["/sys/fs/bcache/register_quiet", "/dev/sda"]))
# Role-confused and unbound: the plan's own origin wiped by a step that claims to be harmless,
# an LV and a VG the plan neither has nor creates.
origin = plan["devices"][0]["path"]
variant("tamper-role", lambda p: p["steps"].insert(0, {"id": "look", "description": "look at the SSD (harmless)",
                                                       "destructive": False, "argv": ["wipefs", "--all", origin]}))
variant("tamper-otherlv", lambda p: p["steps"].append({"id": "tidy", "argv": ["lvremove", "--yes", "othervg/keep"]}))
variant("tamper-othervg", lambda p: p["steps"][1].update(argv=["vgextend", "othervg", ssd]))
open(f"{out}/truncated.json", "w").write(json.dumps(plan)[:700])
open(f"{out}/garbage.json", "w").write("\x00\x01 not a plan")
PY
echo '{"config": null, "summary": "Don'"'"'t cache"}' > "$LAB_OUT/rec-none.json"
J() { printf '%s\t%s\t%s\n' "$1" "$2" "${3-}"; }
{
J nonexistent-ssd '["plan","lvmcache-attach","--lv","labvg/data","--ssd","/dev/nonexistent","--size","128m"]'
J partition-not-disk "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"${part}2\",\"--size\",\"64m\"]"
J mounted-target "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"${part}1\",\"--size\",\"64m\",\"--allow-partition\"]"
J has-filesystem "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"${part}2\",\"--size\",\"64m\",\"--allow-partition\"]"
J same-device-twice "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$hdd\",\"--size\",\"64m\"]"
J ssd-too-small "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$ssd_id\",\"--size\",\"4g\"]"
J other-vg "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$other\",\"--size\",\"64m\"]"
J not-an-lv "[\"plan\",\"lvmcache-attach\",\"--lv\",\"$ssd\",\"--ssd\",\"$ssd_id\",\"--size\",\"64m\"]"
J shell-metachar-lv "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data;reboot\",\"--ssd\",\"$ssd_id\",\"--size\",\"64m\"]"
J shell-metachar-ssd "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"/dev/sdb\$(reboot)\",\"--size\",\"64m\"]"
J bad-size "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$ssd_id\",\"--size\",\"12q\"]"
J bad-chunk "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$ssd_id\",\"--size\",\"64m\",\"--chunk\",\"48k\"]"
J not-lvmcache-recommendation "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$ssd_id\",\"--recommendation\",\"$LAB_OUT/rec-none.json\"]"
J output-exists "[\"plan\",\"lvmcache-attach\",\"--lv\",\"labvg/data\",\"--ssd\",\"$ssd_id\",\"--size\",\"64m\",\"-o\",\"$LAB_OUT/good.json\"]"
J uncache-not-cached '["plan","lvmcache-uncache","--lv","labvg/data"]'
J changed-size "[\"apply\",\"$LAB_OUT/changed-size.json\",\"--yes\"]"
J changed-identity "[\"apply\",\"$LAB_OUT/changed-identity.json\",\"--yes\"]"
J corrupt-plan "[\"apply\",\"$LAB_OUT/corrupt.json\",\"--yes\"]"
J truncated-plan "[\"apply\",\"$LAB_OUT/truncated.json\",\"--yes\"]"
J garbage-plan "[\"apply\",\"$LAB_OUT/garbage.json\",\"--yes\"]"
J newer-schema "[\"apply\",\"$LAB_OUT/newer-schema.json\",\"--yes\"]"
J missing-plan "[\"apply\",\"$LAB_OUT/nope.json\",\"--yes\"]"
for t in rm sh path unbound undo identity twice write role otherlv othervg; do
  J "tamper-$t" "[\"apply\",\"$LAB_OUT/tamper-$t.json\",\"--yes\"]"
done
J no-yes-no-tty "[\"apply\",\"$LAB_OUT/good.json\"]"
J not-root "[\"apply\",\"$LAB_OUT/good.json\",\"--yes\"]" '{"AS_NOBODY":"1"}'
J missing-tool "[\"apply\",\"$LAB_OUT/good.json\",\"--yes\"]" '{"HIDE":"/usr/sbin/lvm"}'
J nothing-to-resume '["apply","--resume","--yes"]'
} > "$LAB_OUT/bad-cases.tsv"
"$CW_PY" "$LAB_GUEST/bad_inputs.py" "$LAB_OUT/bad-cases.tsv" < /dev/null > "$LAB_OUT/bad-inputs.log" 2>&1
sync; for d in "$hdd" "$ssd" "$part" "$other"; do sha256sum "$d"; done > "$LAB_OUT/disks-after.txt"

# --- writethrough: attach, a fio workload, uncache ---
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 192m --mode writethrough -o "$LAB_OUT/wt.json" > "$LAB_OUT/wt-preview.txt"
cw apply "$LAB_OUT/wt.json" --yes > "$LAB_OUT/wt-apply.txt" 2>&1
lvm_state wt-attached
dmsetup status labvg-data > "$LAB_OUT/dmsetup-status-cache.txt"
fio --name=work --filename=$mnt/work --size=32M --rw=randrw --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
    --time_based --runtime=8 --output-format=terse > /dev/null
sync; (cd $mnt && sha256sum work) >> "$LAB_OUT/sums.txt"
verify wt-cached
cw plan lvmcache-uncache --lv labvg/data --release-ssd "$ssd_id" -o "$LAB_OUT/wt-un.json" > /dev/null
cw apply "$LAB_OUT/wt-un.json" --yes > "$LAB_OUT/wt-uncache.txt" 2>&1
lvm_state wt-uncached
verify wt-uncached

# Writeback with dirty blocks: tests/vm/guest/watch.sh (part 2).

# --- crash test: SIGKILL after each step of an attach; odd steps resume, even ones roll back ---
cw plan lvmcache-attach --lv labvg/data --ssd "$ssd_id" --size 128m -o "$LAB_OUT/crash.json" > /dev/null
steps=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['steps']))" "$LAB_OUT/crash.json")
# Every step in the soak run (CACHEWISE_SOAK=1); in CI one resume and one roll back after SIGKILL,
# and a resume and an abandon after SIGTERM (the README's soak command runs them all).
if [ "${LAB_SOAK:-0}" = 1 ]; then kill_ks=$(seq 1 "$steps"); term_ks=$(seq 1 "$steps"); else kill_ks="2 5"; term_ks="1 3"; fi
echo $kill_ks > "$LAB_OUT/crash-ks.txt"; echo $term_ks > "$LAB_OUT/term-ks.txt"
mkdir -p "$CACHEWISE_STATE_DIR/old"
for k in $kill_ks; do
  mv "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$CACHEWISE_STATE_DIR/old/" 2>/dev/null || true
  "$CW_PY" -m cachewise apply "$LAB_OUT/crash.json" --yes > "$LAB_OUT/crash-$k-apply.txt" 2>&1 &
  pid=$!
  wait_for_event "$pid" step-end "$k"
  kill -9 $pid 2> /dev/null || true
  wait $pid 2> /dev/null || true
  lvm_state "crash-$k-killed"
  if [ $((k % 2)) = 1 ]; then
    cw apply --resume --yes > "$LAB_OUT/crash-$k-after.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/crash-$k-after.txt" || echo "rc $?" >> "$LAB_OUT/crash-$k-after.txt"
    lvm_state "crash-$k-after"
    verify "crash-$k"
    lvconvert -q -y --uncache labvg/data; vgreduce -q labvg "$ssd"; pvremove -q -y "$ssd"
  else
    cw apply --rollback --yes > "$LAB_OUT/crash-$k-after.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/crash-$k-after.txt" || echo "rc $?" >> "$LAB_OUT/crash-$k-after.txt"
    lvm_state "crash-$k-after"
    verify "crash-$k"
  fi
done

# --- SIGTERM during each step of an attach: the step in progress ends, the run stops, journaled;
# then resume (steps 1 and 5), roll back (2, 4), or abandon (3) and put things back by hand ---
reset_attach() {  # labvg/data uncached and the SSD out of the VG, whatever state an attach left
  if lvs --noheadings -o segtype labvg/data | grep -q cache; then lvconvert -q -y --uncache labvg/data; fi
  for lv in data_cache data_cache_meta; do lvremove -q -y "labvg/$lv" 2> /dev/null || true; done
  vgreduce -q labvg "$ssd" 2> /dev/null || true
  pvremove -q -y "$ssd" 2> /dev/null || true
}
dmsetup ls | sort > "$LAB_OUT/dm-before-term.txt"
for k in $term_ks; do
  mv "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$CACHEWISE_STATE_DIR/old/" 2>/dev/null || true
  "$CW_PY" -m cachewise apply "$LAB_OUT/crash.json" --yes > "$LAB_OUT/term-$k-apply.txt" 2>&1 &
  pid=$!
  wait_for_event "$pid" step-begin "$k"
  kill -TERM $pid 2> /dev/null || true
  wait $pid && echo "rc 0" >> "$LAB_OUT/term-$k-apply.txt" || echo "rc $?" >> "$LAB_OUT/term-$k-apply.txt"
  cp "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$LAB_OUT/term-$k-journal.jsonl"
  lvm_state "term-$k-stopped"
  if [ "$k" = 3 ]; then
    cw apply --abandon "$(ls "$CACHEWISE_STATE_DIR"/journal/*.jsonl)" > "$LAB_OUT/term-$k-after.txt" 2>&1 \
      && echo "rc 0" >> "$LAB_OUT/term-$k-after.txt" || echo "rc $?" >> "$LAB_OUT/term-$k-after.txt"
    lvm_state "term-$k-after"
    reset_attach
  elif [ $((k % 2)) = 1 ]; then
    cw apply --resume --yes > "$LAB_OUT/term-$k-after.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/term-$k-after.txt" \
      || echo "rc $?" >> "$LAB_OUT/term-$k-after.txt"
    lvm_state "term-$k-after"
    reset_attach
  elif [ "$k" != "$steps" ]; then
    cw apply --rollback --yes > "$LAB_OUT/term-$k-after.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/term-$k-after.txt" \
      || echo "rc $?" >> "$LAB_OUT/term-$k-after.txt"
    lvm_state "term-$k-after"
  else  # a signal during the last step: the plan is complete
    lvm_state "term-$k-after"; echo "rc 0" > "$LAB_OUT/term-$k-after.txt"
    reset_attach
  fi
  dmsetup ls | sort > "$LAB_OUT/dm-after-term-$k.txt"
done
verify term

# --- a crash in the middle of writing a journal record, then abandon: the decision is a record of
# its own (not glued to the torn one) and nothing is left pending ---
mv "$CACHEWISE_STATE_DIR"/journal/*.jsonl "$CACHEWISE_STATE_DIR/old/" 2>/dev/null || true
"$CW_PY" -m cachewise apply "$LAB_OUT/crash.json" --yes > "$LAB_OUT/torn-apply.txt" 2>&1 &
pid=$!
wait_for_event "$pid" step-end 1
kill -9 $pid 2> /dev/null || true
wait $pid 2> /dev/null || true
torn=$(ls "$CACHEWISE_STATE_DIR"/journal/*.jsonl)
printf '{"time": "2026-01-01T00:00:00.000+00:00", "event": "step-be' >> "$torn"  # cut off mid-record
cw apply --abandon "$torn" > "$LAB_OUT/torn-abandon.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/torn-abandon.txt" \
  || echo "rc $?" >> "$LAB_OUT/torn-abandon.txt"
cp "$torn" "$LAB_OUT/torn-journal.jsonl"
cw apply --resume --yes > "$LAB_OUT/torn-resume.txt" 2>&1 && echo "rc 0" >> "$LAB_OUT/torn-resume.txt" \
  || echo "rc $?" >> "$LAB_OUT/torn-resume.txt"
reset_attach
verify torn

cp "$CACHEWISE_STATE_DIR/audit.log" "$LAB_OUT/audit.log"
echo scenario-done
