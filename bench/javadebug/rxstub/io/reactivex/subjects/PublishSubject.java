package io.reactivex.subjects;

import io.reactivex.Observable;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The stand-in's subject: what onNext is given goes to every subscriber of
 * the moment, on the caller's thread (observeOn moves it elsewhere).
 */
public final class PublishSubject<T> extends Observable<T> {
    private static final class Entry<T> {
        final Sink<? super T> sink;
        final Link link;

        Entry(Sink<? super T> sink, Link link) {
            this.sink = sink;
            this.link = link;
        }
    }

    private final CopyOnWriteArrayList<Entry<T>> subscribers = new CopyOnWriteArrayList<>();
    private volatile Throwable error;
    private volatile boolean done;

    private PublishSubject() {
    }

    public static <T> PublishSubject<T> create() {
        return new PublishSubject<>();
    }

    @Override
    protected void subscribeActual(Sink<? super T> sink, Link link) {
        if (done) {
            if (error != null) {
                sink.error(error);
            } else {
                sink.complete();
            }
            return;
        }
        Entry<T> e = new Entry<>(sink, link);
        subscribers.add(e);
        link.onDispose(() -> subscribers.remove(e));
    }

    public boolean hasObservers() {
        return !subscribers.isEmpty();
    }

    public void onNext(T t) {
        if (done) {
            return;
        }
        for (Entry<T> e : subscribers) {
            if (!e.link.isDisposed()) {
                e.sink.next(t);
            }
        }
    }

    public void onError(Throwable t) {
        if (done) {
            return;
        }
        error = t;
        done = true;
        for (Entry<T> e : subscribers) {
            e.sink.error(t);
        }
        subscribers.clear();
    }

    public void onComplete() {
        if (done) {
            return;
        }
        done = true;
        for (Entry<T> e : subscribers) {
            e.sink.complete();
        }
        subscribers.clear();
    }
}
