# Scenario: probe five disks (two of which lie about being rotational), a device that
# disappears mid-probe, and the bad inputs; record everything under $LAB_OUT.
. "$LAB_GUEST/common.sh"
set -e
export CACHEWISE_STATE_DIR="$LAB_OUT/state"
udevadm settle --timeout=30
devs=()
for s in HDD0001 SSD0001 NVME0001 FASTROT1 SLOWFLAT1; do devs+=("$(by_serial $s)"); done
printf '%s\n' "${devs[@]}" > "$LAB_OUT/probe-devices.txt"
fio --version > "$LAB_OUT/fio-version.txt"

# 1. The five disks, one cachewise invocation.
start=$(date +%s.%N)
cw probe --json --yes "${devs[@]}" > "$LAB_OUT/probe.json"
echo "$start $(date +%s.%N)" > "$LAB_OUT/probe-wall.txt"

# 2. A never-written (sparse) disk: all reads are zeros.
cw probe --json --yes "$(by_serial ZERO0001)" > "$LAB_OUT/probe-zero.json"

# 3. The disk vanishes mid-probe.
hot=$(by_serial HOT0001)
set +e
cw probe --json --yes --seconds 8 "$hot" > "$LAB_OUT/probe-vanish.json" 2> "$LAB_OUT/probe-vanish.err" &
pid=$!
# Delete the disk once fio has been reading it for a while (cachewise's own start-up is slow
# under emulation, so wait for fio itself).
# With --seconds 8 the QD1 phase runs for the first 3.2 s; pull the disk in the QD32 phase
# (3.2 to 5.6 s), so there is a finished phase to report.
for _ in $(seq 200); do pgrep -f "fio --readonly" > /dev/null && break; sleep 0.1; done
sleep 4.5
echo 1 > "/sys/block/$(basename "$hot")/device/delete"
wait $pid; echo $? > "$LAB_OUT/probe-vanish.rc"

# 4. Bad inputs: each must refuse with a sentence and a non-zero exit.
bad() {  # bad NAME ARGS...: run, keep stdout, stderr and exit code
  local name=$1; shift
  "$@" > "$LAB_OUT/bad-$name.out" 2> "$LAB_OUT/bad-$name.err" < /dev/null; echo $? > "$LAB_OUT/bad-$name.rc"
}
zero=$(by_serial ZERO0001)
mkfs.ext4 -q "$zero"; mkdir -p /run/lab/z
sha256sum "$zero" > "$LAB_OUT/zero-before.sha"
mount -o ro,noload "$zero" /run/lab/z  # read-only and no journal replay: mounting writes nothing
bad nonexistent "$CW_PY" -m cachewise probe /dev/sdzz
bad notblock "$CW_PY" -m cachewise probe /etc/hostname
bad mounted "$CW_PY" -m cachewise probe "$zero"
bad twice "$CW_PY" -m cachewise probe "${devs[0]}" "${devs[0]}"
# Root finds fio only in the system directories (a PATH does not redirect it), so fio is hidden
# there: /dev/null bound over it in the guest's own mount table is not a program.
fio_bin=$(command -v fio)
mount --bind /dev/null "$fio_bin"
bad nofio env PATH=/nonexistent "$CW_PY" -m cachewise probe "${devs[0]}"
umount "$fio_bin"
as_nobody "'$CW_PY' -m cachewise probe ${devs[0]}" > "$LAB_OUT/bad-notroot.out" 2> "$LAB_OUT/bad-notroot.err"; echo $? > "$LAB_OUT/bad-notroot.rc"
umount /run/lab/z
sha256sum "$zero" > "$LAB_OUT/zero-after.sha"
set -e
"$CW_PY" - > "$LAB_OUT/history-probes.json" <<'PY'
import json, os, sqlite3
db = sqlite3.connect(os.path.join(os.environ["CACHEWISE_STATE_DIR"], "history.sqlite3"))
rows = db.execute("SELECT identity, size_bytes, device_class, fio_version, result_json, fio_json FROM probes").fetchall()
print(json.dumps([dict(identity=r[0], size_bytes=r[1], device_class=r[2], fio_version=r[3],
                       result=json.loads(r[4]), fio=json.loads(r[5])) for r in rows]))
PY
echo scenario-done
