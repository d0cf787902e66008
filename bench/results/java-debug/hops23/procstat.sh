#!/usr/bin/env bash
# Runs one jdwpaccel bench of Deep/jdb-min at 0 ms with MODES and STEPS warm steps, and prints the bench
# process's own CPU (utime+stime, in 10 ms ticks) and context switches (all its threads), as last sampled
# from /proc every 0.2 s while it ran (the link emulator runs in that process for every mode, and the
# bench adds a direct cell, so subtract a "direct" run's figures from the others').
#   bash procstat.sh JDWPACCEL_BINARY MODE STEPS      e.g. bash procstat.sh /tmp/jt speculate 600
set -u
bin=$1 mode=$2 steps=$3
"$bin" bench --workloads Deep/jdb-min --rtt 0ms --modes "$mode" --steps "$steps" --warmup 2 --breakpoints 1 >/dev/null 2>&1 &
pid=$!
cs="" cpu=""
while kill -0 $pid 2>/dev/null; do
  c=$(cat /proc/$pid/task/*/status 2>/dev/null | awk '/ctxt_switches/{s+=$2} END{print s}')
  [ -n "$c" ] && cs=$c
  l=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null); [ -n "$l" ] && cpu=$l
  sleep 0.2
done
echo "$mode cpu_ticks=$cpu context_switches=$cs"
