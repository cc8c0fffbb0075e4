#!/bin/bash
# Guest entry point: load the environment the host wrote, run one scenario, record its exit
# code in $LAB_OUT/rc. Scenario output goes to $LAB_OUT/scenario.log.
. "$1"
script="$2"
cd "$LAB_OUT" || exit 1
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
# qemu 7.2's software CPU ("-cpu max" under TCG) advertises AVX2 and AVX-512 that it emulates
# imperfectly: numpy's SIMD sort (np.unique) segfaulted in the guest. Use numpy's baseline code.
export NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR"  # numpy 2.x dispatch groups
grep -m1 flags /proc/cpuinfo > "$LAB_OUT/cpuflags.txt"
# Every traced line carries its time (bash's own clock: no process per line), so a slow
# scenario can be read for where its time goes: python3 -m tests.vm.timeline OUT/scenario.log.
# PS4 is set inside: bash running as root does not take it from the environment.
bash -c 'PS4="+ \${EPOCHREALTIME} "; set -x; . "$0"' "$LAB_GUEST/$script" > "$LAB_OUT/${LAB_LOG:-scenario.log}" 2>&1
echo $? > "$LAB_OUT/rc"
