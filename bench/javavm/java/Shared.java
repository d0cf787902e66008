/**
 * Shared: the debuggee of the shared-VM tests (several clients on one VM
 * at once). Each turn of its loop starts one short-lived thread, worker-N
 * (N counting turns from 0), and waits for its end, so that a tracer sees
 * thread starts and deaths in order; the loop's first line is the
 * breakpoint. poke changes created, which an observer must not manage to
 * call.
 */
public class Shared {
    static int created = 42;

    public static void main(String[] args) throws InterruptedException {
        Support.settleSystemThreads();
        new Shared().loop(3);
    }

    static int poke() {
        return ++created;
    }

    static void work() {
    }

    void loop(int start) throws InterruptedException {
        int x = start;
        String word = "alpha";
        for (int turn = 0; ; turn++) {
            x++; // @breakpoint
            word = Support.label("word", x);
            Thread w = new Thread(Shared::work, "worker-" + turn);
            w.start();
            w.join();
            Thread.sleep(5);
        }
    }
}
