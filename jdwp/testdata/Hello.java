// Hello is the debuggee of TestLiveVM: it triggers a monitor wait, a caught
// exception, a method exit with a return value and a thread start.
public class Hello {
    static int counter;

    static int twice(int x) {
        return 2 * x;
    }

    public static void main(String[] args) throws Exception {
        Object lock = new Object();
        synchronized (lock) {
            lock.wait(1);
        }
        try {
            throw new IllegalStateException("expected");
        } catch (IllegalStateException e) {
            counter += twice(21);
        }
        Thread t = new Thread(() -> counter++, "hello-worker");
        t.start();
        t.join();
        System.out.println("counter=" + counter);
    }
}
