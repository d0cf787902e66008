package io.reactivex;

import io.reactivex.disposables.Disposable;
import io.reactivex.functions.Action;
import io.reactivex.functions.Consumer;
import io.reactivex.functions.Function;
import io.reactivex.functions.Predicate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small stand-in, written for jdwpaccel's bench, for the part of RxJava
 * 2's Observable that java-debug's core uses: a push stream of values with
 * filter, map, take, observeOn, toList, concatMap, merge and subscribe.
 * Sources here are synchronous (fromIterable, fromArray) or subjects; the
 * only asynchrony is observeOn, which delivers each subscription's values
 * in order on a worker of its own. No backpressure, no plugins.
 */
public abstract class Observable<T> {
    /** What a subscription delivers to. */
    protected interface Sink<T> {
        void next(T t);

        void error(Throwable e);

        void complete();
    }

    /** Connects sink to this source for the subscription link. */
    protected abstract void subscribeActual(Sink<? super T> sink, Link link);

    public static <T> Observable<T> fromIterable(Iterable<? extends T> items) {
        return new Observable<T>() {
            @Override
            protected void subscribeActual(Sink<? super T> sink, Link link) {
                for (T t : items) {
                    if (link.isDisposed()) {
                        return;
                    }
                    sink.next(t);
                }
                if (!link.isDisposed()) {
                    sink.complete();
                }
            }
        };
    }

    @SafeVarargs
    public static <T> Observable<T> fromArray(T... items) {
        return fromIterable(Arrays.asList(items));
    }

    /** Merges the sources' values; an error is delivered once all have ended. */
    @SafeVarargs
    public static <T> Observable<T> mergeArrayDelayError(Observable<? extends T>... sources) {
        return new Observable<T>() {
            @Override
            protected void subscribeActual(Sink<? super T> sink, Link link) {
                AtomicInteger left = new AtomicInteger(sources.length);
                Throwable[] first = new Throwable[1];
                Runnable ended = () -> {
                    if (left.decrementAndGet() == 0) {
                        if (first[0] != null) {
                            sink.error(first[0]);
                        } else {
                            sink.complete();
                        }
                    }
                };
                for (Observable<? extends T> s : sources) {
                    s.subscribeActual(new Sink<T>() {
                        @Override
                        public synchronized void next(T t) {
                            sink.next(t);
                        }

                        @Override
                        public void error(Throwable e) {
                            synchronized (first) {
                                if (first[0] == null) {
                                    first[0] = e;
                                }
                            }
                            ended.run();
                        }

                        @Override
                        public void complete() {
                            ended.run();
                        }
                    }, link);
                }
            }
        };
    }

    /** A stage between this source and a downstream sink. */
    private <R> Observable<R> stage(java.util.function.BiFunction<Sink<? super R>, Link, Sink<T>> make) {
        Observable<T> up = this;
        return new Observable<R>() {
            @Override
            protected void subscribeActual(Sink<? super R> sink, Link link) {
                up.subscribeActual(make.apply(sink, link), link);
            }
        };
    }

    /** A sink that passes errors and completion on, and values through next. */
    private abstract static class Pass<T, R> implements Sink<T> {
        final Sink<? super R> down;
        final Link link;

        Pass(Sink<? super R> down, Link link) {
            this.down = down;
            this.link = link;
        }

        abstract void onValue(T t) throws Exception;

        @Override
        public void next(T t) {
            try {
                onValue(t);
            } catch (Throwable e) {
                link.dispose();
                down.error(e);
            }
        }

        @Override
        public void error(Throwable e) {
            down.error(e);
        }

        @Override
        public void complete() {
            down.complete();
        }
    }

    public final Observable<T> filter(Predicate<? super T> p) {
        return this.<T>stage((down, link) -> new Pass<T, T>(down, link) {
            @Override
            void onValue(T t) throws Exception {
                if (p.test(t)) {
                    down.next(t);
                }
            }
        });
    }

    public final <R> Observable<R> map(Function<? super T, ? extends R> f) {
        return this.<R>stage((down, link) -> new Pass<T, R>(down, link) {
            @Override
            void onValue(T t) throws Exception {
                down.next(f.apply(t));
            }
        });
    }

    public final <R> Observable<R> concatMap(Function<? super T, ? extends Observable<? extends R>> f) {
        return this.<R>stage((down, link) -> new Pass<T, R>(down, link) {
            @Override
            void onValue(T t) throws Exception {
                f.apply(t).subscribeActual(new Sink<R>() {
                    @Override
                    public void next(R r) {
                        down.next(r);
                    }

                    @Override
                    public void error(Throwable e) {
                        down.error(e);
                    }

                    @Override
                    public void complete() {
                    }
                }, link);
            }
        });
    }

    /** The first n values, then completion and the end of the subscription. */
    public final Observable<T> take(long n) {
        return this.<T>stage((down, link) -> new Pass<T, T>(down, link) {
            private long seen;

            @Override
            synchronized void onValue(T t) {
                if (seen >= n) {
                    return;
                }
                seen++;
                down.next(t);
                if (seen == n) {
                    link.dispose();
                    down.complete();
                }
            }
        });
    }

    /** Delivers values, errors and completion in order on a worker of scheduler's. */
    public final Observable<T> observeOn(Scheduler scheduler) {
        return this.<T>stage((down, link) -> {
            Executor worker = scheduler.newWorker();
            link.onDispose(() -> {
                if (worker instanceof java.util.concurrent.ExecutorService) {
                    ((java.util.concurrent.ExecutorService) worker).shutdown();
                }
            });
            return new Sink<T>() {
                private void post(Runnable r) {
                    try {
                        worker.execute(r);
                    } catch (java.util.concurrent.RejectedExecutionException e) {
                        // disposed: nothing more is delivered
                    }
                }

                @Override
                public void next(T t) {
                    post(() -> {
                        if (!link.isDisposed()) {
                            down.next(t);
                        }
                    });
                }

                @Override
                public void error(Throwable e) {
                    post(() -> down.error(e));
                }

                @Override
                public void complete() {
                    post(down::complete);
                }
            };
        });
    }

    /** Runs action once the subscription ends: completed, failed or disposed. */
    public final Observable<T> doFinally(Action action) {
        Observable<T> up = this;
        return new Observable<T>() {
            @Override
            protected void subscribeActual(Sink<? super T> sink, Link link) {
                java.util.concurrent.atomic.AtomicBoolean ran = new java.util.concurrent.atomic.AtomicBoolean();
                Runnable once = () -> {
                    if (ran.compareAndSet(false, true)) {
                        try {
                            action.run();
                        } catch (Throwable e) {
                            unhandled(e);
                        }
                    }
                };
                link.onDispose(once);
                up.subscribeActual(new Sink<T>() {
                    @Override
                    public void next(T t) {
                        sink.next(t);
                    }

                    @Override
                    public void error(Throwable e) {
                        sink.error(e);
                        once.run();
                    }

                    @Override
                    public void complete() {
                        sink.complete();
                        once.run();
                    }
                }, link);
            }
        };
    }

    public final Single<List<T>> toList() {
        Observable<T> up = this;
        return new Single<List<T>>(new Observable<List<T>>() {
            @Override
            protected void subscribeActual(Sink<? super List<T>> sink, Link link) {
                List<T> all = new ArrayList<>();
                up.subscribeActual(new Sink<T>() {
                    @Override
                    public synchronized void next(T t) {
                        all.add(t);
                    }

                    @Override
                    public void error(Throwable e) {
                        sink.error(e);
                    }

                    @Override
                    public void complete() {
                        sink.next(all);
                        sink.complete();
                    }
                }, link);
            }
        });
    }

    public final Disposable subscribe(Consumer<? super T> onNext) {
        return subscribe(onNext, Observable::unhandled, () -> { });
    }

    public final Disposable subscribe(Consumer<? super T> onNext, Consumer<? super Throwable> onError) {
        return subscribe(onNext, onError, () -> { });
    }

    public final Disposable subscribe(Consumer<? super T> onNext, Consumer<? super Throwable> onError, Action onComplete) {
        Link link = new Link();
        subscribeActual(new Sink<T>() {
            private boolean done;

            @Override
            public synchronized void next(T t) {
                if (done || link.isDisposed()) {
                    return;
                }
                try {
                    onNext.accept(t);
                } catch (Throwable e) {
                    link.dispose();
                    error(e);
                }
            }

            @Override
            public synchronized void error(Throwable e) {
                if (done) {
                    return;
                }
                done = true;
                try {
                    onError.accept(e);
                } catch (Throwable e2) {
                    unhandled(e2);
                }
            }

            @Override
            public synchronized void complete() {
                if (done) {
                    return;
                }
                done = true;
                try {
                    onComplete.run();
                } catch (Throwable e) {
                    unhandled(e);
                }
            }
        }, link);
        return link;
    }

    static void unhandled(Throwable e) {
        System.err.println("rxstub: unhandled error: " + e);
        e.printStackTrace();
    }

    /** One subscription: disposing it stops deliveries and runs its clean-ups. */
    protected static final class Link implements Disposable {
        private volatile boolean disposed;
        private final List<Runnable> cleanups = new ArrayList<>(); // guarded by this

        /** Runs r when the subscription is disposed (at once if it is). */
        public void onDispose(Runnable r) {
            synchronized (this) {
                if (!disposed) {
                    cleanups.add(r);
                    return;
                }
            }
            r.run();
        }

        @Override
        public void dispose() {
            List<Runnable> run;
            synchronized (this) {
                if (disposed) {
                    return;
                }
                disposed = true;
                run = new ArrayList<>(cleanups);
                cleanups.clear();
            }
            run.forEach(Runnable::run);
        }

        @Override
        public boolean isDisposed() {
            return disposed;
        }
    }
}
