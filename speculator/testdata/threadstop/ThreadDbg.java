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
        vm.resume();
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
            Thread.sleep(40);
            long n2 = ((LongValue) shared.getValue(n)).value();
            long c2 = ((LongValue) rt.getValue(counter)).value();
            if (n2 <= n1 || c2 <= c1) {
                fail("stop " + stop + ": running state served stale: n " + n1 + " -> " + n2 + ", counter " + c1 + " -> " + c2);
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
