/** HotTarget, version 1. hotswap2/HotTarget.java has the same shape with other bodies. */
final class HotTarget {
    private HotTarget() {}

    static int compute(int x) {
        return x * 2;
    }

    static String tag() {
        return "v1";
    }
}
