import com.sun.jdi.AbsentInformationException;
import com.sun.jdi.ArrayReference;
import com.sun.jdi.ArrayType;
import com.sun.jdi.ClassType;
import com.sun.jdi.Field;
import com.sun.jdi.IntegerValue;
import com.sun.jdi.InterfaceType;
import com.sun.jdi.LocalVariable;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.StringReference;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.Type;
import com.sun.jdi.Value;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.request.EventRequest;
import com.sun.jdi.request.EventRequestManager;
import com.sun.jdi.request.MethodExitRequest;
import com.sun.jdi.request.StepRequest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * JavaDebugLike is the vscode-like profile: the JDI calls Microsoft's
 * java-debug 0.53.1 (the Debug Adapter Protocol server of VS Code's
 * "Debugger for Java") makes for what VS Code's UI asks at a stop, in its
 * order, over whatever JDI the driver attached with (Eclipse JDT's JDI, as
 * java-debug's, when it is on the class path; see Driver). Written from
 * reading java-debug's handlers; nothing of it is copied.
 *
 * At attach it times the enabling of a VM_DEATH request and goes
 * asynchronous above 15 ms (VS Code's default java.debug.settings.jdwp.async
 * "auto"): its reads of one kind then go out together from a pool of JDI
 * caller threads. At or below 10 ms it also shows collection sizes
 * (size() invoked in the debuggee) and looks for toString() overrides.
 *
 * At each stop, as VS Code asks: threads (AllThreads; names of threads not
 * seen before, kept for the session), stackTrace of 20 frames (frame count,
 * frames, each frame's line, source and type signature), scopes (nothing
 * read), variables of the top frame (locals and this, with their types,
 * strings and array lengths warmed up) and one level of each variable that
 * has children (fields of the object's type chain, or an array's
 * elements). Then next: a step request and a method exit request (thread,
 * class and instance filters; the thread filter's IsCollected under Eclipse
 * JDI), the thread resumed alone; at the step event both requests are
 * deleted. Breakpoints and steps suspend the event thread only.
 *
 * The stop's text (the digest's) holds what VS Code would show, without
 * object IDs.
 */
final class JavaDebugLike {
    /** java-debug's thresholds: async above 15 ms, no extra views above 10 ms. */
    static final long ASYNC_LATENCY_MS = 15;
    static final long VIEWS_LATENCY_MS = 10;

    private static final int FRAMES = 20;
    private static final List<String[]> LOGICAL = List.of(
            // type, value expression (method, signature), size expression
            new String[] {"java.util.Map", "entrySet", "()Ljava/util/Set;", "size"},
            new String[] {"java.util.Map$Entry", null, null, null},
            new String[] {"java.util.List", "toArray", "()[Ljava/lang/Object;", "size"},
            new String[] {"java.util.Collection", "toArray", "()[Ljava/lang/Object;", "size"});

    private final VirtualMachine vm;
    /** What the VM_DEATH request's enable took, in whole milliseconds. */
    final long latencyMs;
    final boolean async;
    /**
     * java-debug's AsyncJdwpUtils pool runs its reads together. (It is a
     * work-stealing pool, which here, fed from one thread, held back the
     * second read of a batch until the first was answered, where
     * java-debug's own sent them together; a cached pool sends them
     * together.)
     */
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "java-debug-like");
        t.setDaemon(true);
        return t;
    });
    /** java-debug's ThreadCache: thread names by unique ID, for the session. */
    private final Map<Long, String> names = new HashMap<>();
    private StepRequest step;
    private MethodExitRequest exit;

    /**
     * The attach request's end: the debuggee's version (java-debug compares
     * it with its own), then the timed VM_DEATH request, and the decision
     * from it.
     */
    JavaDebugLike(VirtualMachine vm) {
        this.vm = vm;
        vm.version();
        EventRequest death = vm.eventRequestManager().createVMDeathRequest();
        death.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        long sent = System.currentTimeMillis();
        death.enable();
        latencyMs = System.currentTimeMillis() - sent;
        async = latencyMs > ASYNC_LATENCY_MS;
    }

    /** Whether the Variables view shows sizes and looks for toString(). */
    private boolean views() {
        return !async || latencyMs <= VIEWS_LATENCY_MS;
    }

    /** configurationDone: thread start and death requests, suspending nothing. */
    void configurationDone(EventRequestManager erm) {
        EventRequest start = erm.createThreadStartRequest();
        start.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        start.enable();
        EventRequest death = erm.createThreadDeathRequest();
        death.setSuspendPolicy(EventRequest.SUSPEND_NONE);
        death.enable();
    }

    // ---- stepping -------------------------------------------------------

    /** next: java-debug's step over, then the thread resumed alone. */
    void next(ThreadReference thread) throws Exception {
        EventRequestManager erm = vm.eventRequestManager();
        step = erm.createStepRequest(thread, StepRequest.STEP_LINE, StepRequest.STEP_OVER);
        step.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
        step.addCountFilter(1);
        exit = erm.createMethodExitRequest();
        exit.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
        MethodExitRequest mx = exit;
        StepRequest sr = step;
        if (async) {
            List<Callable<Object>> together = List.of(
                    () -> {
                        StackFrame top = thread.frames(0, 1).get(0);
                        mx.addClassFilter(top.location().declaringType());
                        if (vm.canUseInstanceFilters()) {
                            ObjectReference self = top.thisObject();
                            if (self != null) {
                                mx.addInstanceFilter(self);
                            }
                        }
                        return null;
                    },
                    () -> {
                        threadFilter(mx, thread);
                        return null;
                    },
                    () -> thread.frameCount(),
                    () -> {
                        sr.enable();
                        return null;
                    });
            all(together);
            mx.enable();
        } else {
            StackFrame top = thread.frames(0, 1).get(0);
            thread.frameCount();
            Location at = top.location();
            threadFilter(mx, thread);
            mx.addClassFilter(at.declaringType());
            if (vm.canUseInstanceFilters()) {
                ObjectReference self = top.thisObject();
                if (self != null) {
                    mx.addInstanceFilter(self);
                }
            }
            sr.enable();
            mx.enable();
        }
        int suspends = thread.suspendCount();
        for (int i = 0; i < suspends; i++) {
            thread.resume();
        }
    }

    /**
     * The method exit request's thread filter: Eclipse JDI asks whether the
     * thread was collected (ObjectReference.IsCollected) when it is added;
     * OpenJDK's JDI does not, so the question is asked here for it.
     */
    private void threadFilter(MethodExitRequest mx, ThreadReference thread) {
        if (!mx.getClass().getName().startsWith("org.eclipse.")) {
            thread.isCollected();
        }
        mx.addThreadFilter(thread);
    }

    /** At the step event: java-debug deletes its step request, then its method exit request. */
    void stepped(EventRequestManager erm) {
        if (step != null) {
            erm.deleteEventRequest(step);
            step = null;
        }
        if (exit != null) {
            erm.deleteEventRequest(exit);
            exit = null;
        }
    }

    // ---- a stop ---------------------------------------------------------

    /** One entry of the Variables view. */
    private static final class Var {
        final String name;
        final Value value;
        /** A string's value, once read: java-debug keeps what its warm-up read. */
        String string;
        String detail;
        boolean expandable;
        /**
         * A field of a superclass java-debug lists without waiting for it
         * (allFieldsAsync): whether it shows depends on this client's own
         * threads, so the stop's text leaves it out.
         */
        boolean racy;

        Var(String name, Value value) {
            this.name = name;
            this.value = value;
        }
    }

    /** What VS Code asks at a stop, appended to out; returns the top frame as "Class.method:line". */
    String stop(ThreadReference thread, StringBuilder out) throws Exception {
        threads(out);
        StackFrame top = stackTrace(thread, out);
        // Before the Variables view, which may invoke methods in the
        // debuggee: OpenJDK's JDI (the fallback without Eclipse's) then
        // takes the thread's frames for resumed.
        Location l = top.location();
        String where = l.declaringType().name() + "." + l.method().name() + ":" + l.lineNumber();
        // scopes: the Local scope of the top frame, nothing read.
        List<Var> locals = frameVariables(top);
        show(locals, thread, null, out);
        for (Var v : locals) {
            if (v.expandable) {
                List<Var> kids = children((ObjectReference) v.value, thread);
                show(kids, thread, v.name, out);
            }
        }
        return where;
    }

    /** threads: AllThreads, and the names of threads not seen before. */
    private void threads(StringBuilder out) throws Exception {
        List<ThreadReference> all = vm.allThreads();
        List<Callable<Void>> reads = new ArrayList<>();
        for (ThreadReference t : all) {
            long id = t.uniqueID();
            if (!names.containsKey(id)) {
                reads.add(() -> {
                    String n = t.name();
                    synchronized (names) {
                        names.put(id, n);
                    }
                    return null;
                });
            }
        }
        read(reads);
        List<String> shown = new ArrayList<>();
        for (ThreadReference t : all) {
            shown.add(names.get(t.uniqueID()));
        }
        Collections.sort(shown);
        out.append("threads ").append(shown.size()).append('\n');
        for (String s : shown) {
            out.append("thread ").append(s).append('\n');
        }
    }

    /** stackTrace of 20 frames from the top; returns the top frame. */
    private StackFrame stackTrace(ThreadReference thread, StringBuilder out) throws Exception {
        int total = thread.frameCount();
        int count = Math.min(FRAMES, total);
        List<StackFrame> frames = thread.frames(0, count);
        int n = frames.size();
        Location[] at = new Location[n];
        Method[] method = new Method[n];
        ReferenceType[] type = new ReferenceType[n];
        int[] line = new int[n];
        String[] source = new String[n];
        List<Callable<Void>> reads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            at[i] = frames.get(i).location();
            method[i] = at[i].method();
            method[i].name();
            method[i].isNative();
            type[i] = at[i].declaringType();
            int k = i;
            reads.add(() -> {
                line[k] = at[k].lineNumber();
                return null;
            });
            reads.add(() -> {
                try {
                    source[k] = type[k].sourceName();
                } catch (AbsentInformationException e) {
                    source[k] = null;
                }
                return null;
            });
            reads.add(() -> {
                type[k].signature();
                return null;
            });
        }
        read(reads);
        out.append("frames ").append(total).append('\n');
        for (int i = 0; i < n; i++) {
            List<String> args = method[i].argumentTypeNames();
            if (source[i] != null) {
                type[i].sourcePaths(null);
            }
            out.append("frame ").append(type[i].name()).append('.').append(method[i].name())
                    .append('(').append(String.join(",", args)).append("):").append(line[i])
                    .append(' ').append(source[i] == null ? "?" : source[i]).append('\n');
        }
        return frames.get(0);
    }

    /** variables of a frame: locals, then this. */
    private List<Var> frameVariables(StackFrame frame) throws Exception {
        List<Var> vars = new ArrayList<>();
        if (frame.location().method().isNative()) {
            return vars;
        }
        if (async) {
            Future<List<Var>> locals = pool.submit(() -> locals(frame));
            Future<ObjectReference> self = pool.submit(frame::thisObject);
            vars.addAll(locals.get());
            if (self.get() != null) {
                vars.add(new Var("this", self.get()));
            }
        } else {
            vars.addAll(locals(frame));
            ObjectReference self = frame.thisObject();
            if (self != null) {
                vars.add(new Var("this", self));
            }
        }
        return vars;
    }

    private static List<Var> locals(StackFrame frame) throws Exception {
        List<Var> vars = new ArrayList<>();
        List<LocalVariable> visible;
        try {
            visible = frame.visibleVariables();
        } catch (AbsentInformationException e) {
            return vars;
        }
        Map<LocalVariable, Value> values = frame.getValues(visible);
        for (LocalVariable lv : visible) {
            vars.add(new Var(lv.name(), values.get(lv)));
        }
        return vars;
    }

    /** variables of an object: its logical structure's, or its fields or elements. */
    private List<Var> children(ObjectReference container, ThreadReference thread) throws Exception {
        List<Var> kids = new ArrayList<>();
        ObjectReference obj = container;
        if (views()) {
            String[] structure = logical(obj);
            while (structure != null) {
                if (structure[1] == null) { // Map.Entry: key and value
                    kids.add(new Var("key", invoke(obj, "getKey", "()Ljava/lang/Object;", thread)));
                    kids.add(new Var("value", invoke(obj, "getValue", "()Ljava/lang/Object;", thread)));
                    break;
                }
                Value v = invoke(obj, structure[1], structure[2], thread);
                if (!(v instanceof ObjectReference)) {
                    kids.add(new Var("logicalStructure", v));
                    break;
                }
                obj = (ObjectReference) v;
                structure = logical(obj);
            }
        }
        if (kids.isEmpty() && hasChildren(obj)) {
            ReferenceType type = obj.referenceType();
            if (type instanceof ArrayType) {
                // VS Code asks for an array's elements by count (its
                // indexed children, up to a chunk of 100).
                ArrayReference a = (ArrayReference) obj;
                a.type();
                int i = 0;
                for (Value e : a.getValues(0, Math.min(a.length(), 100))) {
                    kids.add(new Var(String.valueOf(i++), e));
                }
            } else {
                List<Field> fields = new ArrayList<>();
                for (Field f : async ? allFieldsAsync(type) : type.allFields()) {
                    if (!f.isStatic()) {
                        fields.add(f);
                    }
                }
                fields.sort((a, b) -> a.name().compareToIgnoreCase(b.name()));
                Map<Field, Value> values = obj.getValues(fields);
                for (Field f : fields) {
                    Var k = new Var(f.name(), values.get(f));
                    // The type's own fields and its interfaces' are waited
                    // for; a superclass's may or may not have come in time.
                    k.racy = async && !f.declaringType().equals(type) && !(f.declaringType() instanceof InterfaceType);
                    kids.add(k);
                }
            }
        }
        return kids;
    }

    private static boolean hasChildren(ObjectReference obj) {
        ReferenceType type = obj.referenceType();
        if (type instanceof ArrayType) {
            return ((ArrayReference) obj).length() > 0;
        }
        for (Field f : type.allFields()) {
            if (!f.isStatic()) {
                return true;
            }
        }
        return false;
    }

    /**
     * java-debug's asynchronous field listing: the type's fields and its
     * interfaces' (recursively) together; its superclass is asked for too,
     * but not waited for (nor are its fields: java-debug's own way).
     */
    private List<Field> allFieldsAsync(ReferenceType type) throws Exception {
        Set<Field> found = Collections.synchronizedSet(new HashSet<>());
        fieldsAsync(type, found);
        return new ArrayList<>(found);
    }

    private void fieldsAsync(ReferenceType type, Set<Field> found) throws Exception {
        List<Callable<Void>> work = new ArrayList<>();
        work.add(() -> {
            found.addAll(type.fields());
            return null;
        });
        if (type instanceof ClassType) {
            ClassType ct = (ClassType) type;
            work.add(() -> {
                for (InterfaceType it : ct.interfaces()) {
                    fieldsAsync(it, found);
                }
                return null;
            });
            pool.submit(() -> { // not waited for
                ClassType sup = ct.superclass();
                if (sup != null) {
                    fieldsAsync(sup, found);
                }
                return null;
            });
        } else if (type instanceof InterfaceType) {
            InterfaceType it = (InterfaceType) type;
            work.add(() -> {
                for (InterfaceType sup : it.superinterfaces()) {
                    fieldsAsync(sup, found);
                }
                return null;
            });
        }
        all(work);
    }

    /**
     * Appends the entries as the Variables view shows them, after what
     * java-debug reads for them: in async mode first the values' types,
     * strings and array lengths together; then per entry its array length,
     * its rendering, and (at low latency) its collection size and whether
     * its toString() is worth showing.
     */
    private void show(List<Var> vars, ThreadReference thread, String parent, StringBuilder out) throws Exception {
        if (async) {
            List<Callable<Void>> warm = new ArrayList<>();
            for (Var v : vars) {
                Value value = v.value;
                if (value instanceof ArrayReference) {
                    warm.add(() -> {
                        ((ArrayReference) value).length();
                        return null;
                    });
                } else if (value instanceof StringReference) {
                    warm.add(() -> {
                        v.string = ((StringReference) value).value();
                        return null;
                    });
                }
                if (value instanceof ObjectReference) {
                    warm.add(() -> {
                        value.type().signature();
                        return null;
                    });
                }
            }
            all(warm);
        }
        if (vars.isEmpty()) {
            return;
        }
        for (Var v : vars) {
            Value value = v.value;
            int indexed = -1;
            String size = null;
            if (value instanceof ArrayReference) {
                indexed = ((ArrayReference) value).length();
            } else if (views() && value instanceof ObjectReference) {
                String[] structure = logical((ObjectReference) value);
                if (structure != null && structure[3] != null) {
                    Value n = invoke((ObjectReference) value, "size", "()I", thread);
                    if (n instanceof IntegerValue) {
                        indexed = ((IntegerValue) n).value();
                        size = "size=" + n;
                    }
                }
            }
            v.expandable = indexed > 0 || (indexed < 0 && value instanceof ObjectReference);
            String shown = render(v);
            if (size != null) {
                v.detail = size;
            } else if (views() && value instanceof ObjectReference && !isString(value)) {
                // A toString() override or a collection makes java-debug offer
                // the details lazily (a button in the view): nothing invoked.
                if (inherited((ObjectReference) value) != null || hasToString((ObjectReference) value)) {
                    v.detail = "(lazy)";
                }
            }
            if (v.racy) {
                continue;
            }
            out.append(label(parent, v)).append(" = ").append(shown);
            if (v.detail != null) {
                out.append(' ').append(v.detail);
            }
            out.append('\n');
        }
    }

    /**
     * An entry's name in the stop's text, as the other profiles write
     * theirs: "local x", "this", "x.field", "x[3]" (an array's element).
     */
    private static String label(String parent, Var v) {
        if (parent == null) {
            return v.name.equals("this") ? "this" : "local " + v.name;
        }
        if (!v.name.isEmpty() && Character.isDigit(v.name.charAt(0))) {
            return parent + "[" + v.name + "]";
        }
        return parent + "." + v.name;
    }

    /**
     * The value as the other profiles write it (and as the Variables view
     * shows it, without object IDs): strings quoted, "int[] len=8", "instance
     * of Payload", "int 3".
     */
    private static String render(Var var) {
        Value v = var.value;
        if (v == null) {
            return "null";
        }
        if (v instanceof StringReference) {
            if (var.string == null) {
                var.string = ((StringReference) v).value();
            }
            return Driver.json(var.string);
        }
        if (v instanceof ArrayReference) {
            ArrayReference a = (ArrayReference) v;
            return a.type().name() + " len=" + a.length();
        }
        if (v instanceof ObjectReference) {
            return "instance of " + v.type().name();
        }
        return v.type().name() + " " + v;
    }

    private static boolean isString(Value v) {
        return v instanceof ObjectReference && "java.lang.String".equals(v.type().name());
    }

    /** java-debug's logical structure of obj: the first of LOGICAL its type is or implements. */
    private static String[] logical(ObjectReference obj) {
        Type t = obj.type();
        if (!(t instanceof ClassType)) {
            return null;
        }
        ClassType ct = (ClassType) t;
        for (String[] s : LOGICAL) {
            if (s[0].equals(ct.name())) {
                return s;
            }
            for (InterfaceType it : ct.allInterfaces()) {
                if (s[0].equals(it.name())) {
                    return s;
                }
            }
        }
        return null;
    }

    /** The first of Map, Collection, Map.Entry obj's class is, extends or implements; or null. */
    private static String inherited(ObjectReference obj) {
        Type t = obj.type();
        if (!(t instanceof ClassType)) {
            return null;
        }
        Set<String> wanted = Set.of("java.util.Map", "java.util.Collection", "java.util.Map$Entry");
        for (ClassType c = (ClassType) t; c != null; c = c.superclass()) {
            if (wanted.contains(c.name())) {
                return c.name();
            }
        }
        for (InterfaceType it : ((ClassType) t).allInterfaces()) {
            if (wanted.contains(it.name())) {
                return it.name();
            }
        }
        return null;
    }

    /** Whether obj's class overrides Object.toString() (or gets a default one from an interface). */
    private static boolean hasToString(ObjectReference obj) {
        ReferenceType t = obj.referenceType();
        if (!(t instanceof ClassType)) {
            return false;
        }
        Method m = ((ClassType) t).concreteMethodByName("toString", "()Ljava/lang/String;");
        if (m != null && !"Ljava/lang/Object;".equals(m.declaringType().signature())) {
            return true;
        }
        for (InterfaceType it : ((ClassType) t).allInterfaces()) {
            for (Method im : it.methodsByName("toString", "()Ljava/lang/String;")) {
                if (!im.isAbstract()) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Invokes a method of obj's class in the stopped thread alone. */
    private static Value invoke(ObjectReference obj, String name, String signature, ThreadReference thread) throws Exception {
        ReferenceType t = obj.referenceType();
        Method m = t instanceof ClassType ? ((ClassType) t).concreteMethodByName(name, signature) : null;
        if (m == null) {
            return null;
        }
        return obj.invokeMethod(thread, m, Collections.emptyList(), ObjectReference.INVOKE_SINGLE_THREADED);
    }

    /** Runs the reads together on the pool in async mode, else one after another. */
    private void read(List<Callable<Void>> reads) throws Exception {
        if (async) {
            all(reads);
        } else {
            for (Callable<Void> r : reads) {
                r.call();
            }
        }
    }

    /** Runs the reads together on the pool and waits for all of them. */
    private <T> void all(List<Callable<T>> work) throws Exception {
        List<Future<T>> fs = new ArrayList<>();
        for (Callable<T> c : work) {
            fs.add(pool.submit(c));
        }
        for (Future<T> f : fs) {
            f.get();
        }
    }

    void close() {
        pool.shutdownNow();
    }
}
