package io.reactivex;

import java.util.concurrent.Executor;

/**
 * Where observeOn delivers values: each subscription made through it gets a
 * worker of its own (an executor delivering in order).
 */
public abstract class Scheduler {
    /** A new worker: runs what it is given one at a time, in order. */
    public abstract Executor newWorker();
}
