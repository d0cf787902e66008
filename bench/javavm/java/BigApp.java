import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * BigApp: an application-sized VM. Before its first breakpoint it loads
 * LOAD classes from the JDK's own modules (Class.forName without
 * initialising, then linked by reflection, in name order from the jrt:/ file system, skipping those
 * that do not load), so a debugger sees over 15,000 loaded classes, and
 * starts a pool of POOL worker threads, all parked on the pool's queue.
 * The stop method's locals hold a HashMap, arrays and an object graph that
 * an IDE shows three levels deep. The driver attaches to it as IntelliJ
 * does to a real application: it looks up about 30 classes by name and
 * asks to hear when each (and its inner classes) is prepared; most of them
 * never load.
 */
public class BigApp {
    static final int LOAD = 15_000;
    static final int POOL = 40;

    /** How many of the JDK's classes main loaded itself (not their supertypes). */
    static int loaded;

    final Store store = new Store("main-store");
    long handled;

    public static void main(String[] args) throws IOException {
        loaded = loadJdkClasses(LOAD);
        ThreadFactory names = new ThreadFactory() {
            private int next;

            @Override
            public synchronized Thread newThread(Runnable r) {
                int n = next++;
                Thread t = new Thread(r, "app-pool-" + (n < 10 ? "0" : "") + n);
                t.setDaemon(true);
                return t;
            }
        };
        ThreadPoolExecutor pool = new ThreadPoolExecutor(POOL, POOL, 1, TimeUnit.HOURS,
                new LinkedBlockingQueue<>(), names);
        pool.prestartAllCoreThreads();
        boolean parked = false;
        while (!parked) {
            parked = true;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith("app-pool-") && t.getState() != Thread.State.WAITING) {
                    parked = false;
                }
            }
            Thread.onSpinWait();
        }
        Support.settleSystemThreads();
        new BigApp().serve();
    }

    /**
     * Loads and links up to n classes of the JDK's modules, in name order,
     * without initialising them; returns how many loaded. Classes of modules not in
     * the boot layer, or that fail to link, are skipped.
     */
    static int loadJdkClasses(int n) throws IOException {
        FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
        List<String> names = new ArrayList<>();
        try (Stream<Path> files = Files.walk(jrt.getPath("/modules"))) {
            files.forEach(p -> {
                // /modules/<module>/<package path>/<Name>.class
                if (p.getNameCount() < 3) {
                    return;
                }
                String rel = p.subpath(2, p.getNameCount()).toString();
                if (rel.endsWith(".class") && !rel.endsWith("module-info.class")) {
                    names.add(rel.substring(0, rel.length() - ".class".length()).replace('/', '.'));
                }
            });
        }
        Collections.sort(names);
        ClassLoader cl = ClassLoader.getSystemClassLoader();
        int ok = 0;
        for (String name : names) {
            if (ok >= n) {
                break;
            }
            try {
                // Linked, not initialised: a debugger lists only
                // prepared classes, and reflection links the class.
                Class.forName(name, false, cl).getDeclaredConstructors();
                ok++;
            } catch (Throwable e) {
                // not in the boot layer, or does not link: skip it
            }
        }
        return ok;
    }

    void serve() {
        int n = 0;
        Map<String, Order> orders = new HashMap<>();
        for (int k = 0; k < 12; k++) {
            orders.put("order-" + k, new Order(k, "customer-" + (k % 5), new long[] {k, 10L * k, 100L * k}));
        }
        int[] counts = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
        String[] tags = {"alpha", "beta", "gamma", "delta"};
        Order[] recent = {orders.get("order-1"), orders.get("order-2"), null};
        while (true) {
            n++; // @breakpoint
            Order o = orders.get("order-" + (n % 12));
            o.lines[n % o.lines.length] = n;
            counts[n % counts.length] = n % 50;
            recent[n % recent.length] = o;
            store.count = n;
            handled += tags[n % tags.length].length();
        }
    }

    /** Never called: where another of the IDE's breakpoints sits. */
    String report() {
        return store.name + ":" + handled; // @breakpoint-extra BigApp
    }

    /** An order: what the HashMap holds, itself holding an array and a nested object. */
    static final class Order {
        final int id;
        final String customer;
        final long[] lines;
        final Payload detail;

        Order(int id, String customer, long[] lines) {
            this.id = id;
            this.customer = customer;
            this.lines = lines;
            this.detail = new Payload("detail-" + id, id, null);
        }
    }
}

/** A store: loaded, with a breakpoint of the IDE's never hit. */
final class Store {
    final String name;
    int count;
    Payload[] shelves = {new Payload("shelf-a", 1, null), new Payload("shelf-b", 2, new Payload("bin", 3, null))};

    Store(String name) {
        this.name = name;
    }

    String describe() {
        return name + "#" + count; // @breakpoint-extra Store
    }
}
