import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Server: a pooled server with 200 worker threads, all parked waiting for
 * work on the pool's queue, while the main thread (the acceptor) handles
 * requests itself in a loop that never ends. A debugger's threads view
 * lists about 205 threads, and an IDE re-reads each one's name and status
 * at every stop.
 */
public class Server {
    static final int POOL = 200;
    static final String[] ROUTES = {"/", "/login", "/items", "/items/42", "/cart", "/health"};

    final ExecutorService pool;
    long handled;
    int errors;
    Payload session = new Payload("session", 3, null);

    Server(ExecutorService pool) {
        this.pool = pool;
    }

    public static void main(String[] args) {
        ThreadFactory names = new ThreadFactory() {
            private int next;

            @Override
            public synchronized Thread newThread(Runnable r) {
                int n = next++;
                String num = n < 10 ? "00" + n : n < 100 ? "0" + n : Integer.toString(n);
                Thread t = new Thread(r, "server-worker-" + num);
                t.setDaemon(true);
                return t;
            }
        };
        ThreadPoolExecutor pool = new ThreadPoolExecutor(POOL, POOL, 1, TimeUnit.HOURS,
                new LinkedBlockingQueue<>(), names);
        pool.prestartAllCoreThreads();
        // Every worker is parked on the empty queue before the first stop.
        boolean parked = false;
        while (!parked) {
            parked = true;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith("server-worker-") && t.getState() != Thread.State.WAITING) {
                    parked = false;
                }
            }
            Thread.onSpinWait();
        }
        Support.settleSystemThreads();
        new Server(pool).serve();
    }

    void serve() {
        int n = 0;
        String route = ROUTES[0];
        int status = 200;
        int[] latencies = {12, 7, 30, 5};
        while (true) {
            n++; // @breakpoint
            route = ROUTES[n % ROUTES.length];
            status = handle(route, n);
            handled += status == 200 ? 1 : 0;
            errors += status == 200 ? 0 : 1;
            latencies[n % latencies.length] = n % 50;
            session.count = n;
        }
    }

    int handle(String route, int n) {
        return route.equals("/health") || n % 7 != 0 ? 200 : 503;
    }
}
