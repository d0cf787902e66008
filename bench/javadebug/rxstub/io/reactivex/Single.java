package io.reactivex;

import io.reactivex.disposables.Disposable;
import io.reactivex.functions.Consumer;

/** The stand-in's single value (from Observable.toList): subscribe only. */
public final class Single<T> {
    private final Observable<T> source;

    Single(Observable<T> source) {
        this.source = source;
    }

    public Disposable subscribe(Consumer<? super T> onSuccess) {
        return source.subscribe(onSuccess);
    }

    public Disposable subscribe(Consumer<? super T> onSuccess, Consumer<? super Throwable> onError) {
        return source.subscribe(onSuccess, onError);
    }
}
