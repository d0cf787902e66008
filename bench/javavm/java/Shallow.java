/**
 * Shallow: one frame of user code (main) and a handful of threads. The loop
 * never ends, so a debugger can step over its lines forever.
 */
public class Shallow {
    static final int WORKERS = 0;
    static String label = "shallow-root";
    static Payload shared = new Payload("shared", 1, null);

    public static void main(String[] args) {
        Support.startWorkers("shallow-worker-", WORKERS);
        int i = 0;
        long total = 0L;
        double ratio = 1.0;
        boolean even = true;
        String text = "start";
        int[] arr = {2, 7, 1, 8, 2, 8};
        Payload local = new Payload("local", 3, shared);
        while (true) {
            i++; // @breakpoint
            total += i;
            ratio = ratio / 2 + i;
            even = !even;
            text = Support.label("shallow", i);
            arr[i % arr.length] = i;
            local.count = i;
        }
    }
}
