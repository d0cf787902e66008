import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Helpers shared by the debuggees. Nothing here prints: a debuggee's stdout
 * must hold only what the JVM itself prints.
 */
final class Support {
    private Support() {}

    /**
     * Starts n daemon threads named prefix00, prefix01, ... Even-numbered
     * threads park, odd-numbered threads sleep, so a debugger sees a stable
     * mix of WAIT and SLEEPING. Returns only once every thread is blocked, so
     * the first breakpoint never sees a worker still running.
     */
    static void startWorkers(String prefix, int n) {
        List<Thread> started = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            final boolean park = k % 2 == 0;
            Thread t = new Thread(park ? Support::parkForever : Support::sleepForever,
                    prefix + (k < 10 ? "0" : "") + k);
            t.setDaemon(true);
            t.start();
            started.add(t);
        }
        for (int k = 0; k < n; k++) {
            Thread t = started.get(k);
            Thread.State want = k % 2 == 0 ? Thread.State.WAITING : Thread.State.TIMED_WAITING;
            while (t.getState() != want) {
                Thread.onSpinWait();
            }
        }
        settleSystemThreads();
    }

    /**
     * Waits (at most 5 s) until the JVM's own waiting threads have reached
     * their wait: right after start-up Common-Cleaner or Finalizer can
     * still be running, and a digest taken at the first stop would then
     * differ from run to run.
     */
    static void settleSystemThreads() {
        long deadline = System.nanoTime() + 5_000_000_000L;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String name = t.getName();
            if (!name.equals("Common-Cleaner") && !name.equals("Finalizer")) {
                continue;
            }
            while (t.getState() != Thread.State.WAITING && t.getState() != Thread.State.TIMED_WAITING
                    && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
        }
    }

    private static void parkForever() {
        while (true) {
            LockSupport.park();
        }
    }

    private static void sleepForever() {
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // keep sleeping
            }
        }
    }

    /** Returns a deterministic label for i without invokedynamic concat. */
    static String label(String prefix, int i) {
        return new StringBuilder(prefix).append('-').append(i % 100).toString();
    }
}

/** A small object graph the debuggees keep in locals and fields. */
final class Payload {
    String title;
    int count;
    long stamp;
    boolean flag;
    Payload child;
    int[] numbers;

    Payload(String title, int count, Payload child) {
        this.title = title;
        this.count = count;
        this.stamp = 1000L * count;
        this.child = child;
        this.numbers = new int[] {count, count + 1, count + 2, count + 3};
    }
}
