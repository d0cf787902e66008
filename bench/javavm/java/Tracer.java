import com.sun.jdi.Bootstrap;
import com.sun.jdi.ClassType;
import com.sun.jdi.Field;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.ThreadDeathEvent;
import com.sun.jdi.event.ThreadStartEvent;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import com.sun.jdi.request.EventRequestManager;
import com.sun.jdi.request.StepRequest;
import com.sun.jdi.request.ThreadDeathRequest;
import com.sun.jdi.request.ThreadStartRequest;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * Tracer: a JDI tool that only observes, as a tracer or an agent would next
 * to an IDE. It attaches with stock JDI (com.sun.jdi.SocketAttach), asks
 * for THREAD_START, THREAD_DEATH and CLASS_PREPARE events and a breakpoint
 * at --bp-class:--bp-line, all with SUSPEND_NONE, and prints one line per
 * event, reading the thread's name at each: "start NAME", "death NAME",
 * "prepare CLASS", "breakpoint NAME". At its first breakpoint it tries
 * what an observer must not do (resume the VM and the thread, step,
 * invoke, set a static, a suspending request) and prints each outcome,
 * "probe WHAT: OUTCOME" (the exception's class, or "ok"), then
 * "value created=V". "ready" says its requests are set. A line "quit" on
 * stdin (or, with --quit-after-probe true, the probe's end) makes it
 * dispose of the VM and exit ("disposed"); "disconnected" says the
 * connection ended.
 *
 * Usage: Tracer --port N [--host H] --bp-class C --bp-line L [--quit-after-probe true]
 */
public class Tracer {
    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1", bpClass = "Shared";
        int port = 0, bpLine = 0;
        boolean quitAfterProbe = false;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--host": host = args[i + 1]; break;
                case "--port": port = Integer.parseInt(args[i + 1]); break;
                case "--bp-class": bpClass = args[i + 1]; break;
                case "--bp-line": bpLine = Integer.parseInt(args[i + 1]); break;
                case "--quit-after-probe": quitAfterProbe = Boolean.parseBoolean(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        AttachingConnector ac = null;
        for (AttachingConnector c : Bootstrap.virtualMachineManager().attachingConnectors()) {
            if (c.name().equals("com.sun.jdi.SocketAttach")) {
                ac = c;
            }
        }
        Map<String, Connector.Argument> ca = ac.defaultArguments();
        ca.get("hostname").setValue(host);
        ca.get("port").setValue(Integer.toString(port));
        VirtualMachine vm = ac.attach(ca);
        say("attached");
        new Tracer(vm, bpClass, bpLine, quitAfterProbe).run();
    }

    private final VirtualMachine vm;
    private final EventRequestManager erm;
    private final String bpClass;
    private final int bpLine;
    private final boolean quitAfterProbe;
    private boolean probed;

    Tracer(VirtualMachine vm, String bpClass, int bpLine, boolean quitAfterProbe) {
        this.vm = vm;
        this.quitAfterProbe = quitAfterProbe;
        this.erm = vm.eventRequestManager();
        this.bpClass = bpClass;
        this.bpLine = bpLine;
    }

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    void run() throws Exception {
        ThreadStartRequest ts = erm.createThreadStartRequest();
        ts.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        ts.enable();
        ThreadDeathRequest td = erm.createThreadDeathRequest();
        td.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        td.enable();
        ClassPrepareRequest cp = erm.createClassPrepareRequest();
        cp.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        cp.enable();
        for (ReferenceType t : vm.classesByName(bpClass)) {
            breakpointIn(t);
        }
        say("ready");
        Thread quit = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String l; (l = in.readLine()) != null; ) {
                    if (l.equals("quit")) {
                        quitting = true;
                        vm.dispose();
                        say("disposed");
                        return;
                    }
                }
            } catch (Exception e) {
                say("stdin: " + e);
            }
        });
        quit.setDaemon(true);
        quit.start();
        while (true) {
            EventSet set;
            try {
                set = vm.eventQueue().remove();
            } catch (com.sun.jdi.VMDisconnectedException e) {
                say("disconnected");
                awaitQuit(quit);
                return;
            }
            if (set.suspendPolicy() != EventRequest.SUSPEND_NONE) {
                say("suspending event set: " + set.suspendPolicy());
            }
            for (Event e : set) {
                if (e instanceof ThreadStartEvent) {
                    say("start " + name(((ThreadStartEvent) e).thread()));
                } else if (e instanceof ThreadDeathEvent) {
                    say("death " + name(((ThreadDeathEvent) e).thread()));
                } else if (e instanceof ClassPrepareEvent) {
                    ReferenceType t = ((ClassPrepareEvent) e).referenceType();
                    say("prepare " + t.name());
                    if (t.name().equals(bpClass)) {
                        breakpointIn(t);
                    }
                } else if (e instanceof BreakpointEvent) {
                    ThreadReference th = ((BreakpointEvent) e).thread();
                    say("breakpoint " + name(th));
                    if (!probed) {
                        probed = true;
                        probe(th, ((BreakpointEvent) e).location().declaringType());
                        if (quitAfterProbe) {
                            vm.dispose();
                            say("disposed");
                            return;
                        }
                    }
                } else if (e instanceof VMDisconnectEvent) {
                    say("disconnected");
                    awaitQuit(quit);
                    return;
                } else if (e instanceof VMDeathEvent) {
                    say("vm death");
                }
            }
        }
    }

    /** Set by the stdin thread before it disposes of the VM. */
    private volatile boolean quitting;

    /**
     * A "quit" disposes of the VM, which ends the event loop too: the
     * stdin thread (a daemon) must get to say "disposed" before this
     * returns and the program exits.
     */
    private void awaitQuit(Thread quit) {
        if (quitting) {
            try {
                quit.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static String name(ThreadReference t) {
        try {
            return t.name();
        } catch (Exception e) {
            return "? (" + e.getClass().getName() + ")";
        }
    }

    void breakpointIn(ReferenceType t) throws Exception {
        if (bpLine <= 0) {
            return;
        }
        List<Location> locs = t.locationsOfLine(bpLine);
        if (locs.isEmpty()) {
            return;
        }
        BreakpointRequest bp = erm.createBreakpointRequest(locs.get(0));
        bp.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        bp.enable();
        say("breakpoint set");
    }

    interface Attempt {
        void run() throws Exception;
    }

    static void attempt(String what, Attempt a) {
        try {
            a.run();
            say("probe " + what + ": ok");
        } catch (Throwable t) {
            say("probe " + what + ": " + t.getClass().getName());
        }
    }

    /** Tries what an observer must not do, at a breakpoint in type. */
    void probe(ThreadReference th, ReferenceType type) {
        ClassType ct = (ClassType) type;
        Field created = ct.fieldByName("created");
        Method poke = ct.methodsByName("poke").get(0);
        attempt("resume-vm", vm::resume);
        attempt("resume-thread", th::resume);
        attempt("step", () -> {
            StepRequest s = erm.createStepRequest(th, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
            s.setSuspendPolicy(EventRequest.SUSPEND_NONE);
            try {
                s.enable();
            } finally {
                erm.deleteEventRequest(s);
            }
        });
        attempt("invoke", () -> ct.invokeMethod(th, poke, Collections.emptyList(), ClassType.INVOKE_SINGLE_THREADED));
        attempt("set-value", () -> ct.setValue(created, vm.mirrorOf(7)));
        attempt("suspending-request", () -> {
            BreakpointRequest bp = erm.createBreakpointRequest(poke.location());
            try {
                bp.enable();
            } finally {
                erm.deleteEventRequest(bp);
            }
        });
        say("value created=" + ct.getValue(created));
    }
}
