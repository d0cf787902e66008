/**
 * Deep: a stop method reached through 25 frames of recursion (27 frames in
 * all), with worker threads so a debugger sees about 26 threads. The loop in
 * work() never ends, so a debugger can step over its lines forever.
 */
public class Deep {
    static final int DEPTH = 25;
    static final int WORKERS = 20;

    String label = "deep-root";
    int steps;
    Payload payload = new Payload("root", 1, new Payload("leaf", 2, null));

    public static void main(String[] args) {
        Support.startWorkers("deep-worker-", WORKERS);
        new Deep().descend(1);
    }

    void descend(int depth) {
        if (depth < DEPTH) {
            descend(depth + 1);
        } else {
            work();
        }
    }

    void work() {
        int i = 0;
        long total = 0L;
        double ratio = 1.0;
        boolean even = true;
        String text = "start";
        int[] arr = {3, 1, 4, 1, 5, 9, 2, 6};
        Payload local = new Payload("local", 7, payload);
        while (true) {
            i++; // @breakpoint
            total += i;
            ratio = ratio / 2 + i;
            even = !even;
            text = Support.label("deep", i);
            arr[i % arr.length] = i;
            local.count = i;
            steps++;
        }
    }

    /**
     * Never called: the lines an IDE's other breakpoints sit on (the driver's
     * --breakpoints N sets them at attach, after the one above).
     */
    String summary() {
        String s = label + ":" + steps; // @breakpoint-extra Deep
        return s.trim(); // @breakpoint-extra Deep
    }
}

/**
 * Never loaded: breakpoints in it wait for a class prepare event that never
 * comes, as an IDE's breakpoints in code not reached yet do.
 */
class DeepReport {
    static String render(Deep d) {
        String head = "report " + d.label; // @breakpoint-extra DeepReport
        return head + " " + d.steps; // @breakpoint-extra DeepReport
    }
}
