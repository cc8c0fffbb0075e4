# Scenario, boot 2 of 2 (issue 29): the machine comes back after the power cut as a system
# does: udev (bcache-tools' rules register bcache devices), then `vgchange -ay` standing in for
# lvm2's autoactivation. Every cache must be back, every fsync'd file's sha256 unchanged, the
# tunables as set, and `status` / `scan` must describe them.
. "$LAB_GUEST/common.sh"
set -e
export CACHEWISE_STATE_DIR="$LAB_WORK/state"
stamp() { echo "$(date +%s) $*" >> "$LAB_OUT/timeline.txt"; }
stamp boot2
# As the installed package would be: /etc/cachewise on its disk, the package's udev rule in place
# before udev's coldplug (`udevadm trigger --action=add`, as at boot) announces the devices again.
keep_etc_cachewise
install_package_udev_rules
udevadm trigger --action=add; udevadm settle --timeout=60
sleep 2; udevadm settle --timeout=30  # the rule's command runs in the background of udev's worker
ls -l /dev/bcache/by-uuid/ > "$LAB_OUT/after-bcache-links.txt" 2>&1 || true
vgchange -ay pc > "$LAB_OUT/after-vgchange.txt" 2>&1; echo "rc $?" >> "$LAB_OUT/after-vgchange.txt"
# dm-cache after an unclean stop: the superblock's clean-shutdown flag is off, so every block it
# maps is loaded as dirty (lvm2#141) and smq writes them back while idle; sampled at once
for _ in 1 2 3 4 5 6; do
  for lv in wt wb mir; do echo "$(date +%s.%N) $lv $(dmsetup status pc-$lv | awk '{print $7, $14}')"; done
  sleep 0.3
done > "$LAB_OUT/dirty-after-activation.txt"
udevadm settle --timeout=60
lvs -a --reportformat json -o vg_name,lv_name,segtype,cache_mode,lv_attr,cache_dirty_blocks,lv_health_status > "$LAB_OUT/after-lvs.json"
dmsetup status > "$LAB_OUT/dmstatus-after.txt"
check() {  # check NAME DEVICE: mount it (the journal replays), compare the fsync'd files' sums
  mkdir -p /run/pc/$1
  if mount "$2" /run/pc/$1 2> "$LAB_OUT/after-$1-mount.err"; then
    if (cd /run/pc/$1 && sha256sum -c "$LAB_OUT/$1.sums") > "$LAB_OUT/after-$1-sums.txt" 2>&1; then
      echo ok >> "$LAB_OUT/after-$1-sums.txt"; else echo FAILED >> "$LAB_OUT/after-$1-sums.txt"; fi
  else
    echo "FAILED mount" > "$LAB_OUT/after-$1-sums.txt"
  fi
}
for lv in wt wb mir wc; do check $lv /dev/pc/$lv; done
for kind in wt wb; do
  uuid=$(cat "$LAB_OUT/b$kind-fsuuid.txt")
  dev=$(blkid -U "$uuid" || true)  # by the file system's UUID, never by bcacheN
  echo "$dev" > "$LAB_OUT/after-b$kind-device.txt"
  check b$kind "${dev:-/dev/null}"
  bname=$(basename "$(readlink -f "${dev:-/dev/null}")")
  for t in cache_mode sequential_cutoff writeback_percent; do
    echo "$t $(cat /sys/block/$bname/bcache/$t 2>/dev/null)"
  done > "$LAB_OUT/b$kind-tunables-after.txt"
  cat /sys/block/$bname/bcache/state > "$LAB_OUT/b$kind-state-after.txt" 2>&1 || true
done
for b in /sys/class/block/*/bcache; do echo "$b -> $(readlink -f "$b")"; done > "$LAB_OUT/after-bcache-sysfs.txt" 2>&1
cat /etc/cachewise/bcache/*.conf > "$LAB_OUT/after-tunables-files.txt" 2>&1 || true
cw tunables show --json > "$LAB_OUT/after-tunables-show.json" 2> "$LAB_OUT/after-tunables-show.err" || true
journalctl -t cachewise --no-pager > "$LAB_OUT/after-tunables-log.txt" 2>&1 || dmesg | grep -i cachewise > "$LAB_OUT/after-tunables-log.txt" || true
cw status --json > "$LAB_OUT/after-status.json" 2> "$LAB_OUT/after-status.err" || echo "rc $?" >> "$LAB_OUT/after-status.err"
cw status > "$LAB_OUT/after-status.txt" 2>&1 || true
cw scan --json > "$LAB_OUT/after-scan.json" 2> "$LAB_OUT/after-scan.err" || echo "rc $?" >> "$LAB_OUT/after-scan.err"
if cw doctor --help > /dev/null 2>&1; then
  rc=0; cw doctor --json > "$LAB_OUT/after-doctor.json" 2> "$LAB_OUT/after-doctor.err" || rc=$?
  echo "$rc" > "$LAB_OUT/after-doctor.rc"
  cw doctor > "$LAB_OUT/after-doctor.txt" 2>&1 || true
fi
# A machine where activation would fail at the next boot: lvm2 told to check cache metadata with
# a program that is not there (lvm.conf bound over the read-only root's, in this guest only).
if [ -e /etc/lvm/lvm.conf ]; then
  sed 's|^\(\s*\)# cache_check_executable = .*|\1cache_check_executable = "/usr/sbin/cache_check_gone"|' /etc/lvm/lvm.conf > /run/lvm-bad.conf
  mount --bind /run/lvm-bad.conf /etc/lvm/lvm.conf
  undo_conf() { umount /etc/lvm/lvm.conf; }
else  # virtme-ng's /etc has no lvm.conf: lvm2 runs on its defaults
  mkdir -p /etc/lvm
  printf 'global {\n\tcache_check_executable = "/usr/sbin/cache_check_gone"\n}\n' > /etc/lvm/lvm.conf
  undo_conf() { rm -f /etc/lvm/lvm.conf; }
fi
lvmconfig --typeconfig full global/cache_check_executable > "$LAB_OUT/bad-lvmconf.txt" 2>&1 || true
rc=0; cw doctor --json > "$LAB_OUT/bad-doctor.json" 2> "$LAB_OUT/bad-doctor.err" || rc=$?
echo $rc > "$LAB_OUT/bad-doctor.rc"
cw doctor > "$LAB_OUT/bad-doctor.txt" 2>&1 || true
undo_conf
stamp done
