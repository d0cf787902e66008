package io.reactivex.schedulers;

import io.reactivex.Scheduler;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;

/** The one scheduler the stand-in has: a new daemon thread per worker. */
public final class Schedulers {
    private Schedulers() {
    }

    private static final Scheduler NEW_THREAD = new Scheduler() {
        @Override
        public Executor newWorker() {
            return Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "rxstub-worker");
                t.setDaemon(true);
                return t;
            });
        }
    };

    public static Scheduler newThread() {
        return NEW_THREAD;
    }
}
