/**
 * ToStringWatch: keeps an object whose toString() depends on mutable state,
 * for a debugger that evaluates it (InvokeMethod) at every stop.
 */
public class ToStringWatch {
    static final class Watched {
        int count;
        long sum;
        String label = "watched";

        @Override
        public String toString() {
            StringBuilder sb = new StringBuilder("Watched{count=");
            sb.append(count).append(", sum=").append(sum).append(", label=").append(label).append('}');
            return sb.toString();
        }
    }

    public static void main(String[] args) {
        Support.startWorkers("watch-worker-", 2);
        Watched watched = new Watched();
        String warm = watched.toString();
        int i = 0;
        while (true) {
            i++; // @breakpoint
            watched.count = i;
            watched.sum += i;
            watched.label = Support.label("w", i);
            warm = Support.label("warm", i);
        }
    }
}
