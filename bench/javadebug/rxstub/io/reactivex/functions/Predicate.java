package io.reactivex.functions;

/** A test of one value (the stand-in's, see Observable). */
@FunctionalInterface
public interface Predicate<T> {
    boolean test(T t) throws Exception;
}
