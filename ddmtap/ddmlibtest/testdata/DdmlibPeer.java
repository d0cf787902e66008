// DdmlibPeer drives Google's ddmlib (Debian libandroid-ddms-java, ddmlib
// 25.2.2) as a DDM peer of one VM reached over plain TCP, without adb, and
// prints what ddmlib's ClientData holds as JSON lines on stdout. The Go
// tests in this directory compile it with javac at test time.
//
// It lives in package com.android.ddmlib because the Device and Client
// constructors, Client.sendHandshake, Device.addClient and
// MonitorThread.addClient are package-private. It repeats what
// DeviceMonitor.createClient does after adb handed it a jdwp:<pid> socket.
//
// Usage: java DdmlibPeer HOST PORT PID
//
// Commands on stdin, one per line; each is acknowledged with
// {"event":"ack","cmd":...} once ddmlib has sent its request:
//   threads on|off    Client.setThreadUpdateEnabled  (THEN 1/0)
//   thst              Client.requestThreadUpdate     (THST)
//   heapinfo on|off   Client.setHeapInfoUpdateEnabled (HPIF 3/0)
//   segments on|off   Client.setHeapSegmentUpdateEnabled (HPSG 1,0 / 0,0)
//   hpif              Client.updateHeapInfo          (HPIF 1)
//   gc                Client.executeGarbageCollector (HPGC)
//   mprq              HandleProfiling.sendMPRQ (MPRQ), as ddmlib sends it on
//                     connect (Client.requestMethodProfilingStatus sends REAQ
//                     in this version)
//   dump              print the client state now
//   peek              the same, without an ack
//   quit              exit
//
// Output lines:
//   {"event":"change","mask":M,"client":{...}}  on every ClientData change
//   {"event":"dump","client":{...}}
//   {"event":"log","level":"E","tag":...,"msg":...}  ddmlib warnings/errors
//                      (every level with DDMLIB_PEER_LOGS=all in the environment)
//   {"event":"ack","cmd":...}
package com.android.ddmlib;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public final class DdmlibPeer {
    private static final PrintStream OUT = System.out;

    private DdmlibPeer() {}

    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        int pid = Integer.parseInt(args[2]);

        Log.addLogger(new Log.ILogOutput() {
            @Override
            public void printLog(Log.LogLevel level, String tag, String msg) {
                log(level, tag, msg);
            }

            @Override
            public void printAndPromptLog(Log.LogLevel level, String tag, String msg) {
                log(level, tag, msg);
            }
        });
        // No "selected client" debugger port (8700 by default): read by the
        // MonitorThread constructor, so set before init.
        DdmPreferences.setSelectedDebugPort(-1);
        if (ALL_LOGS) {
            DdmPreferences.setLogLevel(Log.LogLevel.VERBOSE.getStringValue());
        }
        AndroidDebugBridge.init(true);
        AndroidDebugBridge.addClientChangeListener(
                (client, mask) -> emit("{\"event\":\"change\",\"mask\":" + mask + ",\"client\":" + state(client) + "}"));

        SocketChannel chan = SocketChannel.open(new InetSocketAddress(host, port));
        chan.configureBlocking(false);
        Device device = new Device(new DeviceMonitor(null), "fake", IDevice.DeviceState.ONLINE);
        Client client = new Client(device, chan, pid);
        if (!client.sendHandshake()) {
            emit("{\"event\":\"fatal\",\"msg\":\"handshake not sent\"}");
            System.exit(2);
        }
        client.requestAllocationStatus(); // as DeviceMonitor.createClient does
        device.addClient(client);
        awaitSelector(MonitorThread.getInstance());
        MonitorThread.getInstance().addClient(client);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        for (String line; (line = in.readLine()) != null; ) {
            String cmd = line.trim();
            switch (cmd) {
                case "threads on": client.setThreadUpdateEnabled(true); break;
                case "threads off": client.setThreadUpdateEnabled(false); break;
                case "thst": client.requestThreadUpdate(); break;
                case "heapinfo on": client.setHeapInfoUpdateEnabled(true); break;
                case "heapinfo off": client.setHeapInfoUpdateEnabled(false); break;
                case "segments on": client.setHeapSegmentUpdateEnabled(true); break;
                case "segments off": client.setHeapSegmentUpdateEnabled(false); break;
                case "hpif": client.updateHeapInfo(); break;
                case "gc": client.executeGarbageCollector(); break;
                case "mprq": HandleProfiling.sendMPRQ(client); break;
                case "dump": emit("{\"event\":\"dump\",\"client\":" + state(client) + "}"); break;
                case "peek": // the state now, with no ack (see Peer.wait)
                    emit("{\"event\":\"dump\",\"client\":" + state(client) + "}");
                    continue;
                case "quit":
                    emit("{\"event\":\"ack\",\"cmd\":\"quit\"}");
                    System.exit(0);
                    break;
                default:
                    emit("{\"event\":\"fatal\",\"msg\":" + str("unknown command " + cmd) + "}");
                    System.exit(2);
            }
            emit("{\"event\":\"ack\",\"cmd\":" + str(cmd) + "}");
        }
        System.exit(0);
    }

    // ALL_LOGS (environment DDMLIB_PEER_LOGS=all) prints ddmlib's log lines
    // of every level, verbose and debug included, not only warnings and
    // errors.
    private static final boolean ALL_LOGS = "all".equals(System.getenv("DDMLIB_PEER_LOGS"));

    private static void log(Log.LogLevel level, String tag, String msg) {
        if (ALL_LOGS || level.getPriority() >= Log.LogLevel.WARN.getPriority()) {
            emit("{\"event\":\"log\",\"level\":" + str(level.getStringValue()) + ",\"tag\":" + str(tag)
                    + ",\"msg\":" + str(msg) + "}");
        }
    }

    private static synchronized void emit(String line) {
        OUT.println(line);
        OUT.flush();
    }

    private static String state(Client client) {
        ClientData cd = client.getClientData();
        StringBuilder b = new StringBuilder(512);
        b.append("{\"pid\":").append(cd.getPid());
        b.append(",\"ddmAware\":").append(cd.isDdmAware());
        b.append(",\"vm\":").append(str(cd.getVmIdentifier()));
        b.append(",\"app\":").append(str(cd.getClientDescription()));
        b.append(",\"validUserId\":").append(cd.isValidUserId());
        b.append(",\"userId\":").append(cd.getUserId());
        b.append(",\"abi\":").append(str(cd.getAbi()));
        b.append(",\"jvmFlags\":").append(str(cd.getJvmFlags()));
        b.append(",\"nativeDebuggable\":").append(cd.isNativeDebuggable());
        List<String> features = new ArrayList<>();
        for (String f : new String[] {ClientData.FEATURE_PROFILING, ClientData.FEATURE_PROFILING_STREAMING,
                ClientData.FEATURE_SAMPLING_PROFILER, ClientData.FEATURE_OPENGL_TRACING,
                ClientData.FEATURE_VIEW_HIERARCHY, ClientData.FEATURE_HPROF, ClientData.FEATURE_HPROF_STREAMING}) {
            if (cd.hasFeature(f)) {
                features.add(f);
            }
        }
        Collections.sort(features);
        b.append(",\"features\":[");
        for (int i = 0; i < features.size(); i++) {
            b.append(i > 0 ? "," : "").append(str(features.get(i)));
        }
        b.append("],\"threadUpdates\":").append(client.isThreadUpdateEnabled());
        b.append(",\"threads\":[");
        ThreadInfo[] threads = cd.getThreads();
        for (int i = 0; i < threads.length; i++) {
            ThreadInfo t = threads[i];
            b.append(i > 0 ? "," : "").append("{\"id\":").append(t.getThreadId());
            b.append(",\"name\":").append(str(t.getThreadName()));
            b.append(",\"status\":").append(t.getStatus());
            b.append(",\"tid\":").append(t.getTid());
            b.append(",\"utime\":").append(t.getUtime());
            b.append(",\"stime\":").append(t.getStime());
            b.append(",\"daemon\":").append(t.isDaemon()).append('}');
        }
        b.append("],\"heapInfo\":[");
        synchronized (cd) {
            boolean first = true;
            for (Iterator<Integer> it = cd.getVmHeapIds(); it.hasNext(); ) {
                int id = it.next();
                ClientData.HeapInfo h = cd.getVmHeapInfo(id);
                b.append(first ? "" : ",").append("{\"id\":").append(id);
                b.append(",\"max\":").append(h.maxSizeInBytes);
                b.append(",\"size\":").append(h.sizeInBytes);
                b.append(",\"allocated\":").append(h.bytesAllocated);
                b.append(",\"objects\":").append(h.objectsAllocated);
                b.append(",\"time\":").append(h.timeStamp);
                b.append(",\"reason\":").append(h.reason).append('}');
                first = false;
            }
        }
        b.append("],\"heap\":").append(heap(cd.getVmHeapData()));
        return b.append('}').toString();
    }

    // heap summarises ddmlib's decoded heap segments: element counts and
    // sizes per DDMS bucket (1 free, kind+2 otherwise), as ddmuilib's
    // Stats view computes them.
    private static String heap(ClientData.HeapData hd) {
        synchronized (hd) {
            if (!hd.isHeapDataComplete()) {
                return "null";
            }
            Map<Integer, List<Integer>> buckets = new TreeMap<>();
            long bytes = 0;
            long elements = 0;
            int segments = 0;
            for (HeapSegment seg : hd.getHeapSegments()) {
                segments++;
                seg.rewindElements();
                for (HeapSegment.HeapSegmentElement e = seg.getNextElement(null); e != null;
                        e = seg.getNextElement(null)) {
                    int key = e.getSolidity() == 0 ? 1 : e.getKind() + 2;
                    buckets.computeIfAbsent(key, k -> new ArrayList<>()).add(e.getLength());
                    bytes += e.getLength();
                    elements++;
                }
            }
            StringBuilder b = new StringBuilder();
            b.append("{\"segments\":").append(segments).append(",\"bytes\":").append(bytes);
            b.append(",\"elements\":").append(elements).append(",\"buckets\":[");
            boolean first = true;
            for (Map.Entry<Integer, List<Integer>> en : buckets.entrySet()) {
                List<Integer> sizes = en.getValue();
                Collections.sort(sizes);
                long total = 0;
                for (int s : sizes) {
                    total += s;
                }
                b.append(first ? "" : ",").append("{\"bucket\":").append(en.getKey());
                b.append(",\"count\":").append(sizes.size()).append(",\"total\":").append(total);
                b.append(",\"smallest\":").append(sizes.get(0));
                b.append(",\"largest\":").append(sizes.get(sizes.size() - 1));
                b.append(",\"median\":").append(sizes.get(sizes.size() / 2)).append('}');
                first = false;
            }
            return b.append("]}").toString();
        }
    }

    private static String str(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /**
     * Waits until ddmlib's MonitorThread has opened its selector: its thread
     * opens it when it starts running, after AndroidDebugBridge.init has
     * returned, and addClient wakes that selector (a NullPointerException
     * inside ddmlib when the thread has not run yet). ddmlib offers no
     * signal for it; its field is the state itself.
     */
    private static void awaitSelector(MonitorThread m) throws Exception {
        java.lang.reflect.Field f = MonitorThread.class.getDeclaredField("mSelector");
        f.setAccessible(true);
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (f.get(m) == null) {
            if (System.nanoTime() > deadline) {
                emit("{\"event\":\"fatal\",\"msg\":\"ddmlib's monitor thread never opened its selector\"}");
                System.exit(2);
            }
            Thread.sleep(1);
        }
    }
}
