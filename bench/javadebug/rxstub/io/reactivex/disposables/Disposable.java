package io.reactivex.disposables;

/** A subscription that can be cancelled (the stand-in's, see io.reactivex.Observable). */
public interface Disposable {
    void dispose();

    boolean isDisposed();
}
