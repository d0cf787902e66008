# A journal's steps, medians of the gaps between their packets (µs): the debugger's Resume, the
# SINGLE_STEP event, its Frames command and answer, its Name answer, and its next EventRequest.Set
# (the debugger's own time between reading a stop and stepping again). Steps 1-10 are left out.
#   jdwpaccel bench --workloads Deep/jdb-min --rtt 0ms --modes direct,speculate-journal --steps 60 --warmup 2 --breakpoints 1 --journal J.jsonl
#   python3 steps.py J.jsonl
import json, statistics, sys
steps, cur = [], None
for line in open(sys.argv[1]):
    r = json.loads(line)
    n, k, v = r.get('name'), r.get('kind'), r.get('view')
    if v == 'debugger' and k == 'command' and n == 'VirtualMachine.Resume':
        cur = {'resume': r['t']}; steps.append(cur)
    if cur is None:
        continue
    if k == 'event' and 'SINGLE_STEP' in r.get('events', []): cur.setdefault('event', r['t'])
    if v == 'debugger' and k == 'command' and n == 'ThreadReference.Frames': cur.setdefault('frames', r['t'])
    if v == 'debugger' and k == 'reply' and n == 'ThreadReference.Frames': cur.setdefault('frames_reply', r['t'])
    if v == 'debugger' and k == 'reply' and n == 'ThreadReference.Name': cur.setdefault('name_reply', r['t'])
    if v == 'debugger' and k == 'command' and n == 'EventRequest.Set' and 'name_reply' in cur: cur.setdefault('next_set', r['t'])
order = ['resume', 'event', 'frames', 'frames_reply', 'name_reply', 'next_set']
steps = [s for s in steps if all(x in s for x in order)][10:]
print('steps', len(steps))
for a, b in zip(order, order[1:]):
    print('%-12s -> %-12s %7.0f us' % (a, b, statistics.median((s[b] - s[a]) / 1e3 for s in steps)))
