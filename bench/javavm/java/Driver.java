import com.sun.jdi.AbsentInformationException;
import com.sun.jdi.ArrayReference;
import com.sun.jdi.Bootstrap;
import com.sun.jdi.ClassLoaderReference;
import com.sun.jdi.ClassObjectReference;
import com.sun.jdi.ClassType;
import com.sun.jdi.Field;
import com.sun.jdi.LocalVariable;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.StringReference;
import com.sun.jdi.ThreadGroupReference;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.Value;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.VirtualMachineManager;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.LocatableEvent;
import com.sun.jdi.event.StepEvent;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import com.sun.jdi.request.EventRequestManager;
import com.sun.jdi.request.StepRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Driver: an IDE-like JDI workload. It attaches to a debuggee with stock JDI
 * (com.sun.jdi.SocketAttach), stops at a breakpoint, then steps K times,
 * doing a profile's per-stop work (what an IDE fetches to refresh its views)
 * at every stop. One JSON line per stop on stdout, then a summary line.
 *
 * Usage: Driver --port N [--host H] --profile jdb-min|idea-like|idea-async|vscode-like|transcript
 *   --debuggee NAME --bp-line L [--bp-class C] --steps K [--warmup W] [--threads N]
 *   [--breakpoints N --bp-extra C:L,C:L...] [--step over|into] [--hotswap-dir DIR] [--dump]
 *   [--hold-first-stop]
 *
 * --breakpoints N sets, at attach, the breakpoint at --bp-class:--bp-line and
 * the first N-1 of --bp-extra, as an IDE sets all its breakpoints: in a
 * loaded class at once, in another when its class is prepared (lines never
 * reached, or classes never loaded, are fine). idea-async is idea-like with
 * its per-thread, per-frame and per-object reads sent from --threads JDI
 * threads at once (8 unless given), as IntelliJ's async JDI does. The
 * summary line's first_stop_ms runs from before the attach to the end of
 * the breakpoint stop's work: the time to the first stop shown; its vm_run_ms
 * is how much of that the VM ran (from each resume to the next event), which
 * at a zero RTT is the VM's own start-up. --hold-first-stop waits, after the
 * breakpoint stop's line, for a line (or the end) on stdin before stepping,
 * so the caller can take figures of the first stop alone.
 *
 * BigApp is attached to as IntelliJ or java-debug attach to a real
 * application: for each of 30 classes (the breakpoints' classes and
 * WATCHED), a lookup by name and two class prepare requests, for the class
 * and for its inner classes ("C$*"), kept for the whole session; most of
 * the classes never load. Its variables are shown three levels deep
 * (fields of fields of fields, array elements included), and after the
 * last stop the summary gives the loaded classes and the size of the
 * AllClassesWithGeneric reply that lists them.
 *
 * vscode-like is java-debug's (VS Code's Java debugger's) JDI calls, in
 * JavaDebugLike, over Eclipse JDT's JDI as java-debug's when it is on the
 * class path (org.eclipse.jdi.Bootstrap), else over the JDK's; the summary
 * line says which ("jdi"), and what java-debug's timed attach measured and
 * decided ("java_debug_latency_ms", "java_debug_async").
 *
 * The per-stop digest is the SHA-256 of a canonical text of everything the
 * profile saw, without object IDs or timing, so runs on separate VMs agree.
 */
public final class Driver {
    private String host = "127.0.0.1";
    private int port;
    private String profile = "idea-like";
    private String debuggee = "Deep";
    private String bpClass;
    private int bpLine;
    private int steps = 10;
    private int warmup = 2;
    private int threads = 1;
    private int breakpoints = 1;
    private final List<String[]> extraBreakpoints = new ArrayList<>();
    private String stepKind;
    private String hotswapDir;
    private boolean dump;
    private boolean holdFirstStop;

    /** Time the VM ran between the attach and the breakpoint event (awaitBreakpoint). */
    private long vmRunNanos;

    /**
     * BigApp's other watched classes, after its breakpoints' own: Store
     * loads, the rest never do (an IDE's breakpoints in code not reached).
     */
    private static final List<String> WATCHED = List.of(
            "Store",
            "com.example.shop.Main",
            "com.example.shop.web.CartController",
            "com.example.shop.web.CheckoutController",
            "com.example.shop.web.LoginController",
            "com.example.shop.service.OrderService",
            "com.example.shop.service.PaymentService",
            "com.example.shop.service.InventoryService",
            "com.example.shop.service.ShippingService",
            "com.example.shop.service.PricingService",
            "com.example.shop.service.NotificationService",
            "com.example.shop.repo.OrderRepository",
            "com.example.shop.repo.CustomerRepository",
            "com.example.shop.repo.ProductRepository",
            "com.example.shop.model.Order",
            "com.example.shop.model.Customer",
            "com.example.shop.model.Product",
            "com.example.shop.model.Invoice",
            "com.example.shop.util.Money",
            "com.example.shop.util.Dates",
            "com.example.shop.util.Json",
            "com.example.shop.config.AppConfig",
            "com.example.shop.config.SecurityConfig",
            "com.example.shop.jobs.NightlyReport",
            "com.example.shop.jobs.CacheWarmer",
            "com.example.shop.events.OrderPlaced",
            "com.example.shop.events.PaymentFailed",
            "com.example.shop.api.Client",
            "com.example.shop.api.RateLimiter");

    /** How many classes BigApp's attach watches. */
    private static final int WATCH = 30;

    /** How deep BigApp's variables are shown (1: fields of the locals). */
    private static final int BIG_DEPTH = 3;

    /** How many elements of an array are shown below the top level. */
    private static final int ARRAY_HEAD = 16;

    private VirtualMachine vm;
    private ExecutorService pool;
    /** The JDI the driver attached with: "openjdk" or "eclipse" (vscode-like, when on the class path). */
    private String jdi = "openjdk";
    /** vscode-like: java-debug's calls (JavaDebugLike). */
    private JavaDebugLike javaDebug;

    public static void main(String[] args) throws Exception {
        Driver d = new Driver();
        try {
            d.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("driver: " + e.getMessage());
            System.exit(2);
        }
        try {
            d.run();
        } catch (Exception e) {
            System.err.println("driver: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--dump")) {
                dump = true;
                continue;
            }
            if (a.equals("--hold-first-stop")) {
                holdFirstStop = true;
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value for " + a);
            }
            String v = args[++i];
            switch (a) {
                case "--host": host = v; break;
                case "--port": port = Integer.parseInt(v); break;
                case "--profile": profile = v; break;
                case "--debuggee": debuggee = v; break;
                case "--bp-class": bpClass = v; break;
                case "--bp-line": bpLine = Integer.parseInt(v); break;
                case "--steps": steps = Integer.parseInt(v); break;
                case "--warmup": warmup = Integer.parseInt(v); break;
                case "--threads": threads = Integer.parseInt(v); break;
                case "--breakpoints": breakpoints = Integer.parseInt(v); break;
                case "--bp-extra":
                    for (String cl : v.split(",")) {
                        int colon = cl.lastIndexOf(':');
                        if (colon <= 0) {
                            throw new IllegalArgumentException("bad --bp-extra entry " + cl + " (want Class:line)");
                        }
                        Integer.parseInt(cl.substring(colon + 1));
                        extraBreakpoints.add(new String[] {cl.substring(0, colon), cl.substring(colon + 1)});
                    }
                    break;
                case "--step": stepKind = v; break;
                case "--hotswap-dir": hotswapDir = v; break;
                default: throw new IllegalArgumentException("unknown flag " + a);
            }
        }
        if (port <= 0) {
            throw new IllegalArgumentException("--port is required");
        }
        if (bpLine <= 0) {
            throw new IllegalArgumentException("--bp-line is required");
        }
        switch (profile) {
            case "jdb-min": case "idea-like": case "vscode-like": case "transcript": break;
            case "idea-async":
                if (threads <= 1) {
                    threads = 8;
                }
                break;
            default: throw new IllegalArgumentException("unknown profile " + profile);
        }
        if (breakpoints < 1 || breakpoints - 1 > extraBreakpoints.size()) {
            throw new IllegalArgumentException("--breakpoints " + breakpoints + " needs " + (breakpoints - 1)
                    + " --bp-extra entries, have " + extraBreakpoints.size());
        }
        if (bpClass == null) {
            bpClass = debuggee;
        }
        if (stepKind == null) {
            // NewClasses is about entering cold classes: step into them.
            stepKind = debuggee.equals("NewClasses") ? "into" : "over";
        }
        if (debuggee.equals("HotSwap") && hotswapDir == null) {
            throw new IllegalArgumentException("--hotswap-dir is required for HotSwap");
        }
    }

    private void run() throws Exception {
        AttachingConnector conn = null;
        VirtualMachineManager vmm = vscodeLike() ? eclipseJDI() : null;
        if (vmm != null) {
            jdi = "eclipse";
            conn = vmm.attachingConnectors().get(0); // java-debug takes the first
        } else {
            for (AttachingConnector c : Bootstrap.virtualMachineManager().attachingConnectors()) {
                if (c.name().equals("com.sun.jdi.SocketAttach")) {
                    conn = c;
                }
            }
        }
        if (conn == null) {
            throw new IllegalStateException("no com.sun.jdi.SocketAttach connector");
        }
        Map<String, Connector.Argument> ca = conn.defaultArguments();
        ca.get("hostname").setValue(host);
        ca.get("port").setValue(Integer.toString(port));
        long tAttach = System.nanoTime();
        vm = conn.attach(ca);
        if (vscodeLike()) {
            javaDebug = new JavaDebugLike(vm);
        }
        if (threads > 1) {
            pool = Executors.newFixedThreadPool(threads);
        }
        EventRequestManager erm = vm.eventRequestManager();
        if (profile.equals("jdb-min")) {
            jdbSetUp(erm);
        }

        // The breakpoints, each set at once in a loaded class, or when its
        // class is prepared. If the main class is loaded, the VM is already
        // running (a previous debugger detached): the breakpoint suspends
        // it, and resuming here would undo a hit that raced ahead of us.
        long t0 = System.nanoTime();
        List<String[]> bps = new ArrayList<>();
        bps.add(new String[] {bpClass, Integer.toString(bpLine)});
        bps.addAll(extraBreakpoints.subList(0, breakpoints - 1));
        Map<String, List<Integer>> pending = new LinkedHashMap<>();
        if (bigApp()) {
            watchClasses(erm, bps, pending);
        }
        for (String[] bp : bigApp() ? Collections.<String[]>emptyList() : bps) {
            int line = Integer.parseInt(bp[1]);
            List<Integer> waiting = pending.get(bp[0]);
            if (waiting != null) {
                waiting.add(line);
                continue;
            }
            List<ReferenceType> loaded = vm.classesByName(bp[0]);
            if (!loaded.isEmpty()) {
                setBreakpoint(erm, loaded.get(0), line);
                continue;
            }
            waiting = new ArrayList<>();
            waiting.add(line);
            pending.put(bp[0], waiting);
            // java-debug leaves its class prepare requests at JDI's
            // default policy, SUSPEND_ALL (whatever its breakpoints'), and
            // asks for the class's nested classes with a second one.
            for (String pattern : vscodeLike() ? new String[] {bp[0], bp[0] + "$*"} : new String[] {bp[0]}) {
                ClassPrepareRequest cpr = erm.createClassPrepareRequest();
                cpr.addClassFilter(pattern);
                cpr.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                cpr.enable();
            }
        }
        if (javaDebug != null) {
            javaDebug.configurationDone(erm);
        }
        // The VM was started with suspend=y: its initial suspension is the
        // VMStartEvent's, which awaitBreakpoint() resumes (exactly once; an
        // extra vm.resume() here could undo a later event's suspension).
        EventSet set = awaitBreakpoint(erm, pending);
        BreakpointEvent hit = (BreakpointEvent) first(set, BreakpointEvent.class);
        ThreadReference thread = hit.thread();
        // Only the first hit of this breakpoint is wanted; steps drive the
        // rest. The others stay, as an IDE's do. java-debug keeps it too: a
        // step that reaches its line stops for both.
        if (javaDebug == null) {
            erm.deleteEventRequest(hit.request());
        }
        double firstStopMS = 0;
        double vmRunMS = vmRunNanos / 1e6;

        List<double[]> timings = new ArrayList<>();
        for (int stop = 0; stop <= steps; stop++) {
            if (stop > 0 && javaDebug != null) {
                t0 = System.nanoTime();
                javaDebug.next(thread);
                set = await(StepEvent.class);
                thread = ((LocatableEvent) first(set, StepEvent.class)).thread();
                javaDebug.stepped(erm);
            } else if (stop > 0) {
                t0 = System.nanoTime();
                erm.deleteEventRequests(new ArrayList<>(erm.stepRequests()));
                StepRequest sr = erm.createStepRequest(thread, StepRequest.STEP_LINE,
                        stepKind.equals("into") ? StepRequest.STEP_INTO : StepRequest.STEP_OVER);
                sr.addCountFilter(1);
                sr.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                sr.enable();
                set.resume();
                set = await(StepEvent.class);
                thread = ((LocatableEvent) first(set, StepEvent.class)).thread();
            }
            long t1 = System.nanoTime();
            StringBuilder text = new StringBuilder();
            String top = stopWork(thread, text);
            if (debuggee.equals("ToStringWatch")) {
                watch(thread, text);
            }
            long t2 = System.nanoTime();
            if (stop == 0) {
                firstStopMS = (t2 - tAttach) / 1e6;
            }
            if (debuggee.equals("HotSwap") && stop == steps / 2) {
                redefine(text);
            }
            double ms = (t2 - t0) / 1e6;
            double burst = (t2 - t1) / 1e6;
            boolean isWarm = stop < warmup;
            if (!isWarm) {
                timings.add(new double[] {ms, burst});
            }
            StringBuilder line = new StringBuilder();
            line.append("{\"stop\":").append(stop)
                    .append(",\"warmup\":").append(isWarm)
                    .append(",\"ms\":").append(fmt(ms))
                    .append(",\"burst_ms\":").append(fmt(burst))
                    .append(",\"top\":").append(json(top))
                    .append(",\"digest\":\"").append(sha256(text.toString())).append('"');
            if (dump) {
                line.append(",\"text\":").append(json(text.toString()));
            }
            line.append('}');
            System.out.println(line);
            System.out.flush();
            if (stop == 0 && holdFirstStop) {
                while (true) {
                    int c = System.in.read();
                    if (c < 0 || c == '\n') {
                        break;
                    }
                }
            }
        }
        double[] ms = new double[timings.size()];
        double[] burst = new double[timings.size()];
        for (int i = 0; i < timings.size(); i++) {
            ms[i] = timings.get(i)[0];
            burst[i] = timings.get(i)[1];
        }
        System.out.println("{\"summary\":true,\"stops\":" + (steps + 1)
                + ",\"measured\":" + timings.size()
                + ",\"median_ms\":" + fmt(median(ms))
                + ",\"median_burst_ms\":" + fmt(median(burst))
                + ",\"first_stop_ms\":" + fmt(firstStopMS)
                + ",\"vm_run_ms\":" + fmt(vmRunMS)
                + ",\"jdi\":\"" + jdi + "\""
                + (javaDebug == null ? "" : ",\"java_debug_latency_ms\":" + javaDebug.latencyMs
                        + ",\"java_debug_async\":" + javaDebug.async)
                + loadedClasses() + "}");
        System.out.flush();
        erm.deleteEventRequests(new ArrayList<>(erm.stepRequests()));
        if (pool != null) {
            pool.shutdownNow();
        }
        if (javaDebug != null) {
            javaDebug.close();
        }
        vm.dispose();
    }

    private boolean vscodeLike() {
        return profile.equals("vscode-like");
    }

    /** Breakpoints suspend all, or the event thread as java-debug's do. */
    private int suspendPolicy() {
        return vscodeLike() ? EventRequest.SUSPEND_EVENT_THREAD : EventRequest.SUSPEND_ALL;
    }

    /**
     * Eclipse JDT's JDI (java-debug's), when it is on the class path: the
     * driver is compiled against the JDK alone, so it is found by name.
     */
    private static VirtualMachineManager eclipseJDI() {
        try {
            Class<?> b = Class.forName("org.eclipse.jdi.Bootstrap");
            return (VirtualMachineManager) b.getMethod("virtualMachineManager").invoke(null);
        } catch (ClassNotFoundException e) {
            return null;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Eclipse JDI: " + e, e);
        }
    }

    private boolean bigApp() {
        return debuggee.equals("BigApp");
    }

    /**
     * BigApp's attach, as IntelliJ and java-debug do it for each class
     * holding breakpoints: a lookup by name, the breakpoints in the class if
     * loaded, and class prepare requests for the class and its inner
     * classes, kept enabled. Classes not loaded get their breakpoints from
     * pending when prepared.
     */
    private void watchClasses(EventRequestManager erm, List<String[]> bps, Map<String, List<Integer>> pending)
            throws AbsentInformationException {
        Map<String, List<Integer>> lines = new LinkedHashMap<>();
        for (String[] bp : bps) {
            lines.computeIfAbsent(bp[0], k -> new ArrayList<>()).add(Integer.parseInt(bp[1]));
        }
        LinkedHashSet<String> classes = new LinkedHashSet<>(lines.keySet());
        for (String c : WATCHED) {
            if (classes.size() >= WATCH) {
                break;
            }
            classes.add(c);
        }
        for (String c : classes) {
            List<Integer> want = lines.getOrDefault(c, Collections.emptyList());
            List<ReferenceType> loaded = vm.classesByName(c);
            for (ReferenceType rt : loaded) {
                for (int line : want) {
                    setBreakpoint(erm, rt, line);
                }
            }
            if (loaded.isEmpty()) {
                pending.put(c, new ArrayList<>(want));
            }
            for (String pattern : new String[] {c, c + "$*"}) {
                ClassPrepareRequest cpr = erm.createClassPrepareRequest();
                cpr.addClassFilter(pattern);
                cpr.setSuspendPolicy(EventRequest.SUSPEND_ALL);
                cpr.enable();
            }
        }
    }

    /**
     * For BigApp, the summary's loaded classes and the size in bytes of
     * the AllClassesWithGeneric reply (header included) listing them, from
     * what JDI kept of it: 8-byte reference type IDs, as HotSpot's, and
     * names taken as UTF-8 (the JDK's are ASCII). Empty for the others.
     */
    private String loadedClasses() {
        if (!bigApp()) {
            return "";
        }
        List<ReferenceType> all = vm.allClasses();
        long bytes = 11 + 4;
        for (ReferenceType rt : all) {
            String generic = rt.genericSignature();
            bytes += 1 + 8 + 4 + rt.signature().getBytes(StandardCharsets.UTF_8).length
                    + 4 + (generic == null ? 0 : generic.getBytes(StandardCharsets.UTF_8).length) + 4;
        }
        return ",\"loaded_classes\":" + all.size() + ",\"all_classes_reply_bytes\":" + bytes;
    }

    private void setBreakpoint(EventRequestManager erm, ReferenceType rt, int line) throws AbsentInformationException {
        List<Location> locs = rt.locationsOfLine(line);
        if (locs.isEmpty()) {
            throw new IllegalStateException("no code at " + rt.name() + ":" + line);
        }
        BreakpointRequest bp = erm.createBreakpointRequest(locs.get(0));
        bp.setSuspendPolicy(suspendPolicy());
        bp.enable();
    }

    /**
     * Waits for an event set holding a breakpoint event, resuming others; a
     * class prepare event of a class in pending gets that class's
     * breakpoints set (and its request deleted) first.
     */
    private EventSet awaitBreakpoint(EventRequestManager erm, Map<String, List<Integer>> pending) throws Exception {
        long resumed = 0;
        while (true) {
            EventSet set = vm.eventQueue().remove();
            if (resumed != 0) {
                vmRunNanos += System.nanoTime() - resumed;
            }
            boolean hit = false;
            for (Event e : set) {
                if (e instanceof BreakpointEvent) {
                    hit = true;
                } else if (e instanceof ClassPrepareEvent) {
                    ReferenceType rt = ((ClassPrepareEvent) e).referenceType();
                    List<Integer> lines = pending.remove(rt.name());
                    if (lines != null) {
                        if (!bigApp()) {
                            erm.deleteEventRequest(e.request());
                        }
                        for (int line : lines) {
                            setBreakpoint(erm, rt, line);
                        }
                    }
                } else if (e instanceof VMDeathEvent || e instanceof VMDisconnectEvent) {
                    throw new IllegalStateException("VM went away while waiting for the breakpoint");
                }
            }
            if (hit) {
                return set;
            }
            resumed = System.nanoTime();
            set.resume();
        }
    }

    /**
     * What jdb (17) sets up as it attaches, before its user's first command
     * (its VMConnection.setEventRequests, seen on the wire): uncaught
     * Throwables (a class prepare request for the deferred spec, then the
     * exception request), thread starts and deaths, all at JDI's default
     * policy, SUSPEND_ALL (the await loops resume what is not a stop).
     */
    private void jdbSetUp(EventRequestManager erm) {
        ClassPrepareRequest deferred = erm.createClassPrepareRequest();
        deferred.addClassFilter("java.lang.Throwable");
        deferred.addCountFilter(1);
        deferred.enable();
        List<ReferenceType> throwable = vm.classesByName("java.lang.Throwable");
        if (!throwable.isEmpty()) {
            erm.createExceptionRequest(throwable.get(0), false, true).enable();
        }
        erm.createThreadStartRequest().enable();
        erm.createThreadDeathRequest().enable();
    }

    /** Waits for an event set holding an event of the wanted kind, resuming others. */
    private EventSet await(Class<? extends Event> want) throws InterruptedException {
        while (true) {
            EventSet set = vm.eventQueue().remove();
            for (Event e : set) {
                if (want.isInstance(e)) {
                    return set;
                }
                if (e instanceof VMDeathEvent || e instanceof VMDisconnectEvent) {
                    throw new IllegalStateException("VM went away while waiting for " + want.getSimpleName());
                }
            }
            set.resume();
        }
    }

    private static Event first(EventSet set, Class<? extends Event> want) {
        for (Event e : set) {
            if (want.isInstance(e)) {
                return e;
            }
        }
        throw new IllegalStateException("no " + want.getSimpleName());
    }

    // ---- per-stop work ------------------------------------------------------

    /** Does the profile's work at a stop, appending what it saw; returns the top location. */
    private String stopWork(ThreadReference thread, StringBuilder out) throws Exception {
        switch (profile) {
            case "jdb-min": return jdbMin(thread, out);
            case "vscode-like": return javaDebug.stop(thread, out);
            case "transcript": return ideaLike(thread, out, true);
            case "idea-async": return ideaLike(thread, out, false);
            default: return ideaLike(thread, out, false);
        }
    }

    /** jdb after a step: the stopped thread's frames and its name. */
    private String jdbMin(ThreadReference thread, StringBuilder out) throws Exception {
        List<StackFrame> frames = thread.frames();
        out.append("thread ").append(thread.name()).append('\n');
        for (StackFrame f : frames) {
            out.append("frame ").append(loc(f.location())).append('\n');
        }
        return loc(frames.get(0).location());
    }

    /** IntelliJ-like: threads view, 20 frames with isObsolete, locals, this, one level of fields. */
    private String ideaLike(ThreadReference thread, StringBuilder out, boolean everything) throws Exception {
        threadsView(vm.allThreads(), true, out);
        int count = thread.frameCount();
        List<StackFrame> frames = thread.frames(0, everything ? count : Math.min(20, count));
        List<Callable<String>> obsolete = new ArrayList<>();
        for (StackFrame f : frames) {
            Method m = f.location().method();
            obsolete.add(() -> m.isObsolete() ? " obsolete" : "");
        }
        List<String> obs = all(obsolete);
        out.append("frames ").append(count).append('\n');
        for (int i = 0; i < frames.size(); i++) {
            Location l = frames.get(i).location();
            out.append("frame ").append(loc(l)).append(" src=").append(source(l)).append(obs.get(i)).append('\n');
        }
        variables(frames.get(0), out, "");
        if (everything) {
            for (int i = 1; i < frames.size(); i++) {
                variables(frames.get(i), out, "f" + i + ".");
            }
            ReferenceType rt = frames.get(0).location().declaringType();
            for (Field f : rt.visibleFields()) {
                if (f.isStatic()) {
                    out.append("static ").append(f.name()).append(" = ").append(render(rt.getValue(f))).append('\n');
                }
            }
        }
        return loc(frames.get(0).location());
    }

    /** Thread names (and status), sorted by name so the text does not depend on VM order. */
    private void threadsView(List<ThreadReference> all, boolean status, StringBuilder out) throws Exception {
        List<Callable<String>> work = new ArrayList<>();
        for (ThreadReference t : all) {
            work.add(() -> status ? t.name() + " " + statusName(t.status()) : t.name());
        }
        List<String> lines = new ArrayList<>(all(work));
        Collections.sort(lines);
        out.append("threads ").append(lines.size()).append('\n');
        for (String s : lines) {
            out.append("thread ").append(s).append('\n');
        }
    }

    /** Locals and this of a frame, with one level of fields of each object found. */
    private void variables(StackFrame frame, StringBuilder out, String prefix) throws Exception {
        ObjectReference self = frame.thisObject();
        List<Value> objects = new ArrayList<>();
        List<String> names = new ArrayList<>();
        if (self != null) {
            out.append(prefix).append("this = ").append(render(self)).append('\n');
            objects.add(self);
            names.add(prefix + "this");
        }
        List<LocalVariable> vars;
        try {
            vars = frame.visibleVariables();
        } catch (AbsentInformationException e) {
            out.append(prefix).append("locals absent\n");
            vars = Collections.emptyList();
        }
        Map<LocalVariable, Value> vals = frame.getValues(vars);
        List<Callable<String>> rendered = new ArrayList<>();
        for (LocalVariable v : vars) {
            Value val = vals.get(v);
            rendered.add(() -> render(val));
            if (bigApp() ? expandable(val)
                    : val instanceof ObjectReference && !(val instanceof StringReference) && !(val instanceof ArrayReference)) {
                objects.add(val);
                names.add(prefix + v.name());
            }
        }
        List<String> shown = all(rendered);
        for (int i = 0; i < vars.size(); i++) {
            out.append(prefix).append("local ").append(vars.get(i).name()).append(" = ").append(shown.get(i)).append('\n');
        }
        // One level of fields of each object, each object's reads on its own
        // caller thread when there are several.
        List<Callable<String>> children = new ArrayList<>();
        for (int i = 0; i < objects.size(); i++) {
            ObjectReference o = (ObjectReference) objects.get(i);
            String name = names.get(i);
            if (bigApp()) {
                children.add(() -> {
                    StringBuilder sb = new StringBuilder();
                    expand(o, name, BIG_DEPTH, sb);
                    return sb.toString();
                });
                continue;
            }
            children.add(() -> {
                List<Field> fields = new ArrayList<>();
                for (Field f : o.referenceType().visibleFields()) {
                    if (!f.isStatic()) {
                        fields.add(f);
                    }
                }
                Map<Field, Value> fv = o.getValues(fields);
                StringBuilder sb = new StringBuilder();
                for (Field f : fields) {
                    sb.append(name).append('.').append(f.name()).append(" = ").append(render(fv.get(f))).append('\n');
                }
                return sb.toString();
            });
        }
        for (String s : all(children)) {
            out.append(s);
        }
    }

    /** Whether an IDE shows a value's children: objects and arrays other than strings, classes, threads and loaders. */
    private static boolean expandable(Value v) {
        return v instanceof ObjectReference && !(v instanceof StringReference) && !(v instanceof ClassObjectReference)
                && !(v instanceof ThreadReference) && !(v instanceof ThreadGroupReference)
                && !(v instanceof ClassLoaderReference);
    }

    /**
     * Shows o's children, an array's first ARRAY_HEAD elements or an
     * object's fields, and their children down to depth levels.
     */
    private static void expand(ObjectReference o, String name, int depth, StringBuilder out) {
        List<String> names = new ArrayList<>();
        List<Value> vals = new ArrayList<>();
        if (o instanceof ArrayReference) {
            ArrayReference a = (ArrayReference) o;
            int n = a.length();
            if (n > 0) {
                vals.addAll(a.getValues(0, Math.min(ARRAY_HEAD, n)));
            }
            for (int i = 0; i < vals.size(); i++) {
                names.add(name + "[" + i + "]");
            }
        } else {
            List<Field> fields = new ArrayList<>();
            for (Field f : o.referenceType().visibleFields()) {
                if (!f.isStatic()) {
                    fields.add(f);
                }
            }
            Map<Field, Value> fv = o.getValues(fields);
            for (Field f : fields) {
                names.add(name + "." + f.name());
                vals.add(fv.get(f));
            }
        }
        for (int i = 0; i < vals.size(); i++) {
            out.append(names.get(i)).append(" = ").append(render(vals.get(i))).append('\n');
            if (depth > 1 && expandable(vals.get(i))) {
                expand((ObjectReference) vals.get(i), names.get(i), depth - 1, out);
            }
        }
    }

    /** Renders a value without object IDs: strings quoted, arrays as length and first elements. */
    private static String render(Value v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof StringReference) {
            return json(((StringReference) v).value());
        }
        if (v instanceof ArrayReference) {
            ArrayReference a = (ArrayReference) v;
            int n = a.length();
            StringBuilder sb = new StringBuilder(a.referenceType().name());
            sb.append(" len=").append(n).append(" [");
            if (n > 0) {
                List<Value> head = a.getValues(0, Math.min(4, n));
                for (int i = 0; i < head.size(); i++) {
                    if (i > 0) {
                        sb.append(", ");
                    }
                    Value e = head.get(i);
                    sb.append(e instanceof ObjectReference ? ((ObjectReference) e).referenceType().name() : String.valueOf(e));
                }
            }
            return sb.append(']').toString();
        }
        if (v instanceof ObjectReference) {
            return "instance of " + ((ObjectReference) v).referenceType().name();
        }
        return v.type().name() + " " + v;
    }

    /** Evaluates watched.toString() in the stopped thread, as a watch or renderer does. */
    private void watch(ThreadReference thread, StringBuilder out) throws Exception {
        StackFrame top = thread.frame(0);
        LocalVariable lv = top.visibleVariableByName("watched");
        if (lv == null) {
            out.append("watch absent\n");
            return;
        }
        ObjectReference o = (ObjectReference) top.getValue(lv);
        Method ts = ((ClassType) o.referenceType()).concreteMethodByName("toString", "()Ljava/lang/String;");
        Value r = o.invokeMethod(thread, ts, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED);
        out.append("watch watched.toString() = ").append(render(r)).append('\n');
    }

    /** Redefines HotTarget with the version-2 class file. */
    private void redefine(StringBuilder out) throws Exception {
        byte[] bytes = Files.readAllBytes(Path.of(hotswapDir, "HotTarget.class"));
        List<ReferenceType> rts = vm.classesByName("HotTarget");
        if (rts.isEmpty()) {
            throw new IllegalStateException("HotTarget is not loaded");
        }
        vm.redefineClasses(Map.of(rts.get(0), bytes));
        out.append("redefined HotTarget\n");
    }

    // ---- helpers ------------------------------------------------------------

    /** Runs the calls serially, or on the pool when --threads > 1; results in order. */
    private List<String> all(List<Callable<String>> work) throws Exception {
        List<String> res = new ArrayList<>(work.size());
        if (pool == null) {
            for (Callable<String> c : work) {
                res.add(c.call());
            }
            return res;
        }
        for (Future<String> f : pool.invokeAll(work)) {
            res.add(f.get());
        }
        return res;
    }

    private static String loc(Location l) {
        return l.declaringType().name() + "." + l.method().name() + ":" + l.lineNumber();
    }

    private static String source(Location l) {
        try {
            return l.sourceName();
        } catch (AbsentInformationException e) {
            return "?";
        }
    }

    private static String statusName(int s) {
        switch (s) {
            case ThreadReference.THREAD_STATUS_ZOMBIE: return "ZOMBIE";
            case ThreadReference.THREAD_STATUS_RUNNING: return "RUNNING";
            case ThreadReference.THREAD_STATUS_SLEEPING: return "SLEEPING";
            case ThreadReference.THREAD_STATUS_MONITOR: return "MONITOR";
            case ThreadReference.THREAD_STATUS_WAIT: return "WAIT";
            case ThreadReference.THREAD_STATUS_NOT_STARTED: return "NOT_STARTED";
            default: return "UNKNOWN";
        }
    }

    private static double median(double[] v) {
        if (v.length == 0) {
            return 0;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    private static String fmt(double d) {
        return String.format(java.util.Locale.ROOT, "%.3f", d);
    }

    private static String sha256(String s) throws Exception {
        byte[] h = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        StringBuilder sb = new StringBuilder();
        for (byte b : h) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    /** Quotes s as a JSON string. */
    static String json(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }
}
