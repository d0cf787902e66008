/**
 * Transcript: the debuggee of the jdb transcript tests. An instance method
 * with locals of several kinds, fields, strings and arrays; the loop never
 * ends.
 */
public class Transcript {
    String name = "transcript";
    int counter;
    int[] numbers = {10, 20, 30};
    Payload node = new Payload("node", 5, new Payload("inner", 6, null));
    static long created = 42L;

    public static void main(String[] args) {
        Support.settleSystemThreads();
        new Transcript().loop(3);
    }

    void loop(int start) {
        int x = start;
        long sum = 0L;
        String word = "alpha";
        int[] arr = {1, 2, 3, 4};
        double half = 0.5;
        while (true) {
            x++; // @breakpoint
            sum += x;
            word = Support.label("word", x);
            arr[x % arr.length] = x;
            counter = counter + 2;
            numbers[0] = x;
            half = half / 2;
            node.count = x;
        }
    }
}
