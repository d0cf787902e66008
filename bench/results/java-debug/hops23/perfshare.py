# Shares of a process's CPU samples by part: a sample counts for every part named on its stack.
#   perf record -F 9999 -g -p BENCH_PID -o perf.data -- sleep 10   (during a long warm cell, e.g.
#     jdwpaccel bench --workloads Deep/jdb-min --rtt 0ms --modes speculate --steps 5000 --warmup 2 --breakpoints 1,
#     attached once the direct cell is over)
#   perf script -i perf.data > perf.txt && python3 perfshare.py perf.txt
# The speculator's event turn per step: samples under speculator.(*session).event / 9999 Hz / steps in
# the 10 s (10 s / the cell's median step).
import collections, sys
parts = ['runtime.findRunnable', 'runtime.sysmon', 'bench/link', 'syscall.write', 'syscall.read', 'share.',
         'relay.(*Session).relayVMToDebugger', 'relay.(*Session).relayDebuggerToVM', 'relay.(*sideWriter).run',
         'speculator.', 'speculator.(*session).event', 'split.(*stream)', 'zstd', 'push.(*far)', 'push.(*near)']
count, total, frames = collections.Counter(), 0, []
def flush():
    global total
    if frames:
        total += 1
        stack = ' '.join(frames)
        for p in parts:
            if p in stack:
                count[p] += 1
for line in open(sys.argv[1], errors='replace'):
    if not line.strip():
        flush(); frames.clear()
    elif line[0] in '\t ':
        frames.append(line.strip())
flush()
print('samples', total)
for p, n in count.most_common():
    print('%5.1f%% %7d %s' % (100 * n / total, n, p))
