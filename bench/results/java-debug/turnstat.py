# Summarises, by command, the turns a build with turn-cpu.patch printed
# ("TURN vm <command> wait W cpu C turn T cpu C", one line a turn over 60 us
# of wall time): count, p50/p90 of wall and of CPU time in us, and the CPU
# time's sum. Usage: python3 turnstat.py STDERR_FILE
import re,collections,sys
d=collections.defaultdict(list)
def us(x):
    m=re.match(r'([\d.]+)(µs|ms|ns|s)$',x); v=float(m.group(1)); return v*{'µs':1,'ms':1000,'ns':0.001,'s':1e6}[m.group(2)]
for l in open(sys.argv[1]):
    if not l.startswith('TURN'): continue
    f=l.split()
    try: d[f[2]].append((us(f[-3]),us(f[-1])))
    except Exception: pass
for k,v in d.items():
    w=sorted(x[0] for x in v); c=sorted(x[1] for x in v)
    print(k,len(v),'wall p50 %.0f p90 %.0f'%(w[len(w)//2],w[int(len(w)*.9)]),'cpu p50 %.0f p90 %.0f sum %.0f'%(c[len(c)//2],c[int(len(c)*.9)],sum(c)))
