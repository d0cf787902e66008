/**
 * DeadStep: a short-lived thread stops at a breakpoint in work() and ends;
 * then the main thread stops at a breakpoint in tick() over and over.
 */
public class DeadStep {
    static volatile int sink;

    public static void main(String[] args) throws Exception {
        Thread s = new Thread(DeadStep::shortLived, "short-lived");
        s.start();
        s.join();
        for (int i = 0; ; i++) {
            tick(i);
        }
    }

    static void shortLived() {
        for (int i = 0; i < 100; i++) {
            work(i);
            sink += 2;
            sink += 3;
        }
    }

    static void work(int i) {
        sink += i; // @bp-short
    }

    static void tick(int i) {
        sink += i; // @bp-main
        sink -= 1;
        sink += 1;
    }
}
