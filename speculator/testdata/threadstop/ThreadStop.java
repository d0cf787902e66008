/**
 * ThreadStop: a worker thread that hits a breakpoint in tick() over and
 * over while spinner threads keep changing shared state. The debugger stops
 * only the worker (SUSPEND_EVENT_THREAD).
 */
public class ThreadStop {
    static volatile long counter;
    static final Shared shared = new Shared();

    static final class Shared {
        volatile long n;
    }

    public static void main(String[] args) throws Exception {
        for (int k = 0; k < 3; k++) {
            Thread t = new Thread(() -> {
                while (true) {
                    counter++;
                    shared.n++;
                    try {
                        Thread.sleep(1);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "spinner-" + k);
            t.setDaemon(true);
            t.start();
        }
        Thread w = new Thread(ThreadStop::work, "worker");
        w.start();
        w.join();
    }

    static void work() {
        for (int i = 0; ; i++) {
            tick(i);
        }
    }

    static void tick(int i) {
        int twice = i * 2; // @bp
        if (twice < 0) {
            System.out.println(twice);
        }
    }
}
