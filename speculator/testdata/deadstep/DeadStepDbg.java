import com.sun.jdi.*;
import com.sun.jdi.connect.*;
import com.sun.jdi.event.*;
import com.sun.jdi.request.*;
import java.util.*;

/**
 * DeadStepDbg: attaches to DeadStep, steps the short-lived thread a few
 * times (so that a proxy learns how its step requests are answered), lets
 * it end, and at the main thread's next stop enables a step request on the
 * dead thread: the VM refuses it (JDI throws IllegalThreadStateException).
 * Then it steps the main thread to show the session goes on. It prints
 * one line per event of note, then "OK".
 * Usage: DeadStepDbg port shortLine mainLine
 */
public final class DeadStepDbg {
    static VirtualMachine vm;

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int shortLine = Integer.parseInt(args[1]);
        int mainLine = Integer.parseInt(args[2]);
        AttachingConnector conn = null;
        for (AttachingConnector c : Bootstrap.virtualMachineManager().attachingConnectors()) {
            if (c.name().equals("com.sun.jdi.SocketAttach")) {
                conn = c;
            }
        }
        Map<String, Connector.Argument> ca = conn.defaultArguments();
        ca.get("hostname").setValue("127.0.0.1");
        ca.get("port").setValue(Integer.toString(port));
        vm = conn.attach(ca);
        EventRequestManager erm = vm.eventRequestManager();
        ClassPrepareRequest cpr = erm.createClassPrepareRequest();
        cpr.addClassFilter("DeadStep");
        cpr.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        cpr.enable();
        BreakpointRequest shortBp = null, mainBp = null;
        while (shortBp == null) { // the VM waits at VM_START (suspend=y)
            EventSet set = vm.eventQueue().remove();
            for (Event e : set) {
                if (e instanceof ClassPrepareEvent) {
                    ReferenceType rt = ((ClassPrepareEvent) e).referenceType();
                    shortBp = erm.createBreakpointRequest(rt.locationsOfLine(shortLine).get(0));
                    shortBp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                    shortBp.enable();
                    mainBp = erm.createBreakpointRequest(rt.locationsOfLine(mainLine).get(0));
                    mainBp.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                    mainBp.enable();
                }
            }
            set.resume();
        }
        BreakpointEvent first = nextBreakpoint();
        ThreadReference dying = first.thread();
        System.out.println("stop in " + dying.name());
        shortBp.disable();
        EventSet set = lastSet;
        for (int i = 0; i < 4; i++) {
            set = step(erm, dying, set);
        }
        set.resume(); // the short-lived thread runs to its end
        BreakpointEvent second = nextBreakpoint();
        ThreadReference main = second.thread();
        System.out.println("stop in " + main.name());
        StepRequest dead = erm.createStepRequest(dying, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
        dead.addCountFilter(1);
        try {
            dead.enable();
            System.out.println("step on the ended thread: enabled");
        } catch (RuntimeException e) {
            System.out.println("step on the ended thread: " + e.getClass().getName());
        }
        erm.deleteEventRequest(dead);
        mainBp.disable();
        set = lastSet;
        for (int i = 0; i < 2; i++) {
            set = step(erm, main, set);
        }
        System.out.println("OK");
        vm.dispose();
        System.exit(0);
    }

    static EventSet lastSet;

    static BreakpointEvent nextBreakpoint() throws InterruptedException {
        while (true) {
            EventSet set = vm.eventQueue().remove();
            for (Event e : set) {
                if (e instanceof BreakpointEvent) {
                    lastSet = set;
                    return (BreakpointEvent) e;
                }
            }
            set.resume();
        }
    }

    /** step steps t over one line from the stop of set, as an IDE does. */
    static EventSet step(EventRequestManager erm, ThreadReference t, EventSet set) throws InterruptedException {
        StepRequest r = erm.createStepRequest(t, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
        r.addCountFilter(1);
        r.setSuspendPolicy(EventRequest.SUSPEND_ALL);
        r.enable();
        set.resume();
        while (true) {
            EventSet next = vm.eventQueue().remove();
            for (Event e : next) {
                if (e instanceof StepEvent) {
                    erm.deleteEventRequest(r);
                    Location l = ((StepEvent) e).location();
                    System.out.println("step in " + t.name() + " to " + l.method().name() + ":" + l.lineNumber());
                    return next;
                }
            }
            next.resume();
        }
    }
}
