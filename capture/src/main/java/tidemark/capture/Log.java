package tidemark.capture;

/** The capture's log: one line each, on System.err (Flink's TaskManager log collects stderr in its .out file). */
final class Log {
    private Log() {}

    static void line(String message) {
        try {
            System.err.println("tidemark-capture: " + message);
        } catch (Throwable ignored) {
            // never fail the caller because of a log line
        }
    }
}
