import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

/**
 * ThreadDbg: attaches to ThreadStop, stops the worker with
 * SUSPEND_EVENT_THREAD breakpoints while the spinners run, and checks at
 * every stop that the stopped thread's state is the current one and that
 * running state is never answered stale. Prints "OK n" or "FAIL ...".
 * Usage: ThreadDbg port bpLine stops
 */
public final class ThreadDbg {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int line = Integer.parseInt(args[1]);
        int stops = Integer.parseInt(args[2]);
        AttachingConnector conn = null;
        for (AttachingConnector c : Bootstrap.virtualMachineManager().attachingConnectors()) {
            if (c.name().equals("com.sun.jdi.SocketAttach")) {
                conn = c;
            }
        }
        Map<String, Connector.Argument> ca = conn.defaultArguments();
        ca.get("hostname").setValue("127.0.0.1");
        ca.get("port").setValue(Integer.toString(port));
        VirtualMachine vm = conn.attach(ca);
        EventRequestManager erm = vm.eventRequestManager();
        ClassPrepareRequest cpr = erm.createClassPrepareRequest();
        cpr.addClassFilter("ThreadStop");
        cpr.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        cpr.enable();
        // No vm.resume() here: the VM waits suspended (suspend=y) and its
        // VM_START set is resumed below. Resuming both would resume once
        // too often: the extra resume, overtaking ThreadStop's
        // CLASS_PREPARE (SUSPEND_ALL), lets the worker hit the breakpoint
        // while that set is still being handled, and that set's resume then
        // resumes the worker too: from there on every breakpoint set
        // handled is one the worker has already been resumed from, and
        // t.frame(0) races the worker (THREAD_NOT_SUSPENDED).
        ReferenceType rt = null;
        while (rt == null) {
            EventSet set = vm.eventQueue().remove();
            for (Event e : set) {
                if (e instanceof ClassPrepareEvent) {
                    rt = ((ClassPrepareEvent) e).referenceType();
                }
            }
            if (rt == null) {
                set.resume();
            } else {
                BreakpointRequest bp = erm.createBreakpointRequest(rt.locationsOfLine(line).get(0));
                bp.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
                bp.enable();
                set.resume();
            }
        }
        Field counter = rt.fieldByName("counter");
        Field sharedF = rt.fieldByName("shared");
        int expect = -1;
        for (int stop = 0; stop < stops; ) {
            EventSet set = vm.eventQueue().remove();
            BreakpointEvent bpe = null;
            for (Event e : set) {
                if (e instanceof BreakpointEvent) {
                    bpe = (BreakpointEvent) e;
                }
            }
            if (bpe == null) {
                set.resume();
                continue;
            }
            ThreadReference t = bpe.thread();
            StackFrame f = t.frame(0);
            int i = ((IntegerValue) f.getValue(f.visibleVariableByName("i"))).value();
            if (expect >= 0 && i != expect) {
                fail("stop " + stop + ": local i = " + i + ", want " + expect);
            }
            expect = i + 1;
            if (!t.name().equals("worker") || t.frameCount() < 3 || !f.location().method().name().equals("tick")) {
                fail("stop " + stop + ": bad thread/frames " + t.name() + " " + t.frameCount());
            }
            ObjectReference shared = (ObjectReference) rt.getValue(sharedF);
            Field n = shared.referenceType().fieldByName("n");
            long n1 = ((LongValue) shared.getValue(n)).value();
            long c1 = ((LongValue) rt.getValue(counter)).value();
            // The spinners keep running, but on a loaded machine they may
            // not have run for a while: read again until both values
            // moved. A stale cached answer would be served every time
            // (nothing invalidates it in between), so it still fails.
            long n2 = n1, c2 = c1;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (n2 <= n1 || c2 <= c1) {
                if (System.nanoTime() > deadline) {
                    fail("stop " + stop + ": running state served stale: n " + n1 + " -> " + n2 + ", counter " + c1 + " -> " + c2);
                }
                Thread.sleep(20);
                n2 = ((LongValue) shared.getValue(n)).value();
                c2 = ((LongValue) rt.getValue(counter)).value();
            }
            // The stopped thread's view again: still the same.
            int again = ((IntegerValue) t.frame(0).getValue(f.visibleVariableByName("i"))).value();
            if (again != i) {
                fail("stop " + stop + ": i changed while suspended: " + i + " -> " + again);
            }
            stop++;
            set.resume();
        }
        erm.deleteAllBreakpoints();
        System.out.println("OK " + stops);
        vm.dispose();
        System.exit(0);
    }

    static void fail(String msg) {
        System.out.println("FAIL " + msg);
        System.exit(1);
    }
}
