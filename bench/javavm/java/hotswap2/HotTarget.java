/** HotTarget, version 2: the bytes a debugger redefines HotTarget with. */
final class HotTarget {
    private HotTarget() {}

    static int compute(int x) {
        return x * 3 + 1000;
    }

    static String tag() {
        return "v2";
    }
}
