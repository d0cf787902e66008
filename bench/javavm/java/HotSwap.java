/**
 * HotSwap: calls HotTarget on every iteration, so values observed after a
 * debugger redefines HotTarget (with hotswap2/HotTarget) differ.
 */
public class HotSwap {
    public static void main(String[] args) {
        Support.startWorkers("hotswap-worker-", 2);
        int i = 0;
        int value = HotTarget.compute(0);
        String tag = HotTarget.tag();
        while (true) {
            i++; // @breakpoint
            value = HotTarget.compute(i);
            tag = HotTarget.tag();
        }
    }
}
