# Scenario, boot 2 of the trace scenario (issue 31): the machine comes back after the power cut
# that ended boot 1 in the middle of a capture. The capture's folder is read as it was left, the
# capture is resumed (its own end, its own rate), other phases run (a 1 MiB stream, then random
# reads elsewhere), SIGTERM ends it, and the whole capture is shown, analysed, exported.
. "$LAB_GUEST/common.sh"
set -e
udevadm settle --timeout=30
hdd=$(by_serial HDD0001)
state=$(by_serial CAPSTATE01)
mkdir -p /tmp/capstate
mount "$state" /tmp/capstate
cw capture show --json /tmp/capstate/cap > "$LAB_OUT/capture-after-cut.json"
# the interpreter itself, not the cw function: $! must be the process SIGTERM is meant for
"$CW_PY" -X faulthandler -m cachewise capture start "$hdd" --dir /tmp/capstate/cap --for 1h --budget 20m --json \
    > "$LAB_OUT/capture-2.json" 2> "$LAB_OUT/capture-2.err" &
capturer=$!
started "$LAB_OUT/capture-2.err"
date +%s.%N > "$LAB_OUT/capture-fio2.start"
# A night scan, then (stonewall: after it) a hot set on other data than boot 1's: the phases the
# analysis must find and name, across the reboot's gap. fio puts a Zipf rank's block at the
# same place in every run (a hash of the rank, plus an offset from its fixed seed): over another
# range of the disk 71 to 73% of boot 2's accesses still went to boot 1's blocks (2026-11-27).
# Another seed moves that offset: the hot blocks are other blocks. (Debian 12's fio 3.33 has no
# random_center.)
fio --name=scan --filename="$hdd" --readonly --direct=1 --ioengine=libaio --iodepth=1 --rw=read --bs=1m \
    --offset=400m --size=96m --rate=8m \
    --name=hot --stonewall --filename="$hdd" --readonly --direct=1 --ioengine=libaio --iodepth=2 --rw=randread \
    --bs=4k --offset=64m --size=256m --random_distribution=zipf:1.2 --randseed=20261127 --norandommap \
    --time_based --runtime=20 \
    --write_iolog="$LAB_OUT/capture-fio2.iolog" --output-format=json > "$LAB_OUT/capture-fio2.json"
date +%s.%N > "$LAB_OUT/capture-fio2.end"
sleep 1
kill -TERM $capturer
wait $capturer
cw capture show --json /tmp/capstate/cap > "$LAB_OUT/capture-final.json"
cw analyze --json --no-record /tmp/capstate/cap > "$LAB_OUT/capture-analysis.json"
cw capture export /tmp/capstate/cap -o "$LAB_OUT/capture.oracleGeneral" --json > "$LAB_OUT/capture-export.json"
# a refused resume: another device's capture in this folder
cw capture start "$state" --dir /tmp/capstate/cap --for 1m --json > /dev/null 2> "$LAB_OUT/capture-other.err" || true
mkdir -p "$LAB_OUT/cap" && cp /tmp/capstate/cap/* "$LAB_OUT/cap/"
umount /tmp/capstate
echo scenario-done
