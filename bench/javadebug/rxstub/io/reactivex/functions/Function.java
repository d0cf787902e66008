package io.reactivex.functions;

/** A mapping from one value to another (the stand-in's, see Observable). */
@FunctionalInterface
public interface Function<T, R> {
    R apply(T t) throws Exception;
}
