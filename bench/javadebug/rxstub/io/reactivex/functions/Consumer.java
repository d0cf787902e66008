package io.reactivex.functions;

/** A callback taking one value (the stand-in's, see Observable). */
@FunctionalInterface
public interface Consumer<T> {
    void accept(T t) throws Exception;
}
