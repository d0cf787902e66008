import com.microsoft.java.debug.core.DebugException;
import com.microsoft.java.debug.core.DebugSettings;
import com.microsoft.java.debug.core.IEvaluatableBreakpoint;
import com.microsoft.java.debug.core.JavaBreakpointLocation;
import com.microsoft.java.debug.core.adapter.HotCodeReplaceEvent;
import com.microsoft.java.debug.core.adapter.ICompletionsProvider;
import com.microsoft.java.debug.core.adapter.IEvaluationProvider;
import com.microsoft.java.debug.core.adapter.IHotCodeReplaceProvider;
import com.microsoft.java.debug.core.adapter.ISourceLookUpProvider;
import com.microsoft.java.debug.core.adapter.IVirtualMachineManager;
import com.microsoft.java.debug.core.adapter.IVirtualMachineManagerProvider;
import com.microsoft.java.debug.core.adapter.ProtocolServer;
import com.microsoft.java.debug.core.adapter.ProviderContext;
import com.microsoft.java.debug.core.protocol.Types;
import com.sun.jdi.ClassType;
import com.sun.jdi.Method;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.Value;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.VirtualMachineManager;
import io.reactivex.Observable;
import io.reactivex.subjects.PublishSubject;
import java.io.File;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.eclipse.jdi.internal.VirtualMachineManagerImpl;

/**
 * JavaDebugHeadless runs Microsoft's java-debug (the Debug Adapter Protocol
 * server of VS Code's "Debugger for Java") without VS Code or Eclipse: its
 * core adapter, in this process, over Eclipse JDT's JDI, speaking DAP on
 * stdin and stdout (the JVM's own System.out goes to stderr). It is a
 * measurement peer for jdwpaccel's bench, built by build.sh beside it.
 *
 * What the Eclipse-hosted plugin gives the adapter is replaced here by
 * headless providers of our own: the VM manager is Eclipse JDI's (as the
 * plugin's is), breakpoints are resolved from the source file name (a class
 * in the default package, named as the file), sources from the attach's
 * sourcePaths, and the evaluation provider only invokes methods (what the
 * Variables view asks for toString(), size() and toArray()); expressions,
 * completions and hot code replace are not offered.
 *
 * Usage: JavaDebugHeadless [SETTINGS_JSON] - the debug settings the VS Code
 * extension sends before a session (java.debug.settings.*); without it,
 * VS Code's defaults, among them jdwp.async "auto".
 */
public final class JavaDebugHeadless {
    /** VS Code's default java.debug.settings, as the extension sends them. */
    static final String VSCODE_DEFAULTS = "{"
            + "\"showHex\":false,\"showStaticVariables\":false,\"showQualifiedNames\":false,"
            + "\"showLogicalStructure\":true,\"showToString\":true,\"maxStringLength\":0,\"numericPrecision\":0,"
            + "\"hotCodeReplace\":\"manual\",\"limitOfVariablesPerJdwpRequest\":100,\"jdwpRequestTimeout\":3000,"
            + "\"asyncJDWP\":\"auto\",\"debugSupportOnDecompiledSource\":\"off\""
            + "}";

    private JavaDebugHeadless() {
    }

    public static void main(String[] args) {
        PrintStream dap = System.out;
        System.setOut(System.err);
        DebugSettings.getCurrent().updateSettings(args.length > 0 ? args[0] : VSCODE_DEFAULTS);
        ProviderContext providers = new ProviderContext();
        providers.registerProvider(IVirtualMachineManagerProvider.class, new VMManagerProvider());
        providers.registerProvider(ISourceLookUpProvider.class, new FileSourceLookup());
        providers.registerProvider(IEvaluationProvider.class, new InvokeOnlyEvaluation());
        providers.registerProvider(IHotCodeReplaceProvider.class, new NoHotCodeReplace());
        providers.registerProvider(ICompletionsProvider.class, new NoCompletions());
        new ProtocolServer(System.in, dap, providers).run();
        System.exit(0);
    }

    /** Eclipse JDI's VM manager, as the plugin's: its attach, its timeouts. */
    static final class VMManager extends VirtualMachineManagerImpl implements IVirtualMachineManager {
        @Override
        public boolean connectVirtualMachine(VirtualMachine vm) {
            return true;
        }

        @Override
        public boolean disconnectVirtualMachine(VirtualMachine vm) {
            return true;
        }

        @Override
        public int getGlobalRequestTimeout() {
            return DebugSettings.getCurrent().jdwpRequestTimeout;
        }
    }

    static final class VMManagerProvider implements IVirtualMachineManagerProvider {
        private VMManager manager;

        @Override
        public synchronized VirtualMachineManager getVirtualMachineManager() {
            if (manager == null) {
                manager = new VMManager();
            }
            return manager;
        }
    }

    /** Breakpoints by file name (default package); sources from sourcePaths. */
    static final class FileSourceLookup implements ISourceLookUpProvider {
        @Override
        public boolean supportsRealtimeBreakpointVerification() {
            return true;
        }

        @Override
        public String[] getFullyQualifiedName(String uri, int[] lines, int[] columns) throws DebugException {
            String[] out = new String[lines.length];
            Arrays.fill(out, className(uri));
            return out;
        }

        @Override
        public JavaBreakpointLocation[] getBreakpointLocations(String sourceUri, Types.SourceBreakpoint[] bps) throws DebugException {
            JavaBreakpointLocation[] out = new JavaBreakpointLocation[bps.length];
            for (int i = 0; i < bps.length; i++) {
                out[i] = new JavaBreakpointLocation(bps[i].line, bps[i].column);
                out[i].setClassName(className(sourceUri));
            }
            return out;
        }

        private static String className(String uri) {
            String name = new File(uri.replaceFirst("^file:", "")).getName();
            return name.endsWith(".java") ? name.substring(0, name.length() - ".java".length()) : name;
        }

        @Override
        public String getSourceFileURI(String fullyQualifiedName, String sourcePath) {
            return null; // the adapter then looks in the attach's sourcePaths
        }

        @Override
        public String getSourceContents(String uri) {
            try {
                return Files.readString(Path.of(uri.replaceFirst("^file:", "")));
            } catch (Exception e) {
                return "";
            }
        }

        @Override
        public List<MethodInvocation> findMethodInvocations(String uri, int line) {
            return Collections.emptyList();
        }
    }

    /**
     * Invokes methods in the debuggee (the Variables view's toString(),
     * size(), toArray()): the method of that name and signature the
     * object's class has, called in the stopped thread alone.
     */
    static final class InvokeOnlyEvaluation implements IEvaluationProvider {
        @Override
        public boolean isInEvaluation(ThreadReference thread) {
            return false;
        }

        @Override
        public CompletableFuture<Value> evaluate(String expression, ThreadReference thread, int depth) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no expression evaluation"));
        }

        @Override
        public CompletableFuture<Value> evaluate(String expression, ObjectReference thisContext, ThreadReference thread) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no expression evaluation"));
        }

        @Override
        public CompletableFuture<Value> evaluateForBreakpoint(IEvaluatableBreakpoint breakpoint, ThreadReference thread) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no expression evaluation"));
        }

        @Override
        public CompletableFuture<Value> invokeMethod(ObjectReference self, String name, String signature,
                Value[] args, ThreadReference thread, boolean invokeSuper) {
            try {
                ReferenceType type = self.referenceType();
                if (invokeSuper && type instanceof ClassType) {
                    type = ((ClassType) type).superclass();
                }
                Method m = null;
                if (type instanceof ClassType) {
                    m = ((ClassType) type).concreteMethodByName(name, signature);
                } else {
                    List<Method> ms = type.methodsByName(name, signature);
                    m = ms.isEmpty() ? null : ms.get(0);
                }
                if (m == null) {
                    throw new IllegalArgumentException("no method " + name + signature + " in " + type.name());
                }
                int options = ObjectReference.INVOKE_SINGLE_THREADED | (invokeSuper ? ObjectReference.INVOKE_NONVIRTUAL : 0);
                List<Value> argList = args == null ? Collections.emptyList() : Arrays.asList(args);
                return CompletableFuture.completedFuture(self.invokeMethod(thread, m, argList, options));
            } catch (Exception e) {
                return CompletableFuture.failedFuture(e);
            }
        }

        @Override
        public void clearState(ThreadReference thread) {
        }
    }

    static final class NoHotCodeReplace implements IHotCodeReplaceProvider {
        private final PublishSubject<HotCodeReplaceEvent> events = PublishSubject.create();

        @Override
        public void onClassRedefined(Consumer<List<String>> consumer) {
        }

        @Override
        public CompletableFuture<List<String>> redefineClasses() {
            return CompletableFuture.completedFuture(Collections.emptyList());
        }

        @Override
        public Observable<HotCodeReplaceEvent> getEventHub() {
            return events;
        }
    }

    static final class NoCompletions implements ICompletionsProvider {
        @Override
        public List<Types.CompletionItem> codeComplete(StackFrame frame, String snippet, int line, int column) {
            return Collections.emptyList();
        }
    }
}
