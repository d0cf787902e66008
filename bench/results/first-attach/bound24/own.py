# Splits a journal's first stop (from its session's start to the debugger's first resume after the
# first BREAKPOINT event) into four kinds of time, from the debugger's side of the proxy:
#   own      no command of the debugger outstanding and the VM not running for it: the debugger's own work
#   proxy    a command answered by the proxy itself outstanding (cache hit, write-behind, synthetic)
#   vm_wait  a command waiting for the VM outstanding (forwarded, or belayed on a speculation in flight)
#   vm_run   the VM running after a resume, until an event that suspends
# Run (30 ms, a fresh proxy with the journal on; "journal" instead of "split-journal" for a plain relay):
#   jdwpaccel bench --workloads BigApp/vscode-like --rtt 30ms --modes direct,split-journal --steps 2 --warmup 0 --journal J.jsonl
#   python3 own.py J.jsonl
import base64, json, sys

RESUMES = ('ThreadReference.Resume', 'VirtualMachine.Resume')
PROXY = ('cache_hit', 'write_behind', 'synthetic')
acc = {'own': 0.0, 'proxy': 0.0, 'vm_wait': 0.0, 'vm_run': 0.0}
out, served = {}, {}
last, running, breakpoint = None, False, False
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r['type'] == 'session_start':
        if last is not None:
            break  # the first session only
        last = r['t']
        continue
    if r['type'] != 'packet' or r.get('view') == 'wire' or last is None:
        continue
    t, d, k = r['t'], r.get('dir'), r.get('kind')
    dt = (t - last) / 1e6
    if out:
        acc['proxy' if all(served[i] in PROXY for i in out) else 'vm_wait'] += dt
    else:
        acc['vm_run' if running else 'own'] += dt
    last = t
    if d == 'to_vm' and k == 'command':
        if breakpoint and r['name'] in RESUMES:
            break
        out[r['id']] = t
        served[r['id']] = r.get('served')
        running = running or r['name'] in RESUMES
    elif d == 'to_debugger' and k == 'reply':
        out.pop(r['id'], None)
    elif k == 'event':
        # Byte 11, the composite's suspend policy: a SUSPEND_NONE event (a thread's start)
        # leaves the VM running.
        if base64.b64decode(r['bytes'])[11] != 0:
            running = False
            breakpoint = breakpoint or 'BREAKPOINT' in r.get('events', [])
print(' '.join('%s %.1f ms' % kv for kv in acc.items()), '(total %.1f ms)' % sum(acc.values()))
