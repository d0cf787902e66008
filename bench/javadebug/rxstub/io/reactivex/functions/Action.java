package io.reactivex.functions;

/** A callback taking nothing (the stand-in's, see Observable). */
@FunctionalInterface
public interface Action {
    void run() throws Exception;
}
