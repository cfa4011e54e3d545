package tidemark.capture;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.runtime.metrics.TimerGauge;

/**
 * The capture's cost on the calling thread: markStart / markEnd of a real TimerGauge with the reporter's
 * instrumentation (recording clock, listener, seq, queue offer) against the same loop on a plain gauge, in
 * one run as interleaved pairs (median). Prints one line:
 * {@code CAPTURE_BENCH {"ns_per_event": .., "baseline_ns_per_call": .., "capture_ns_per_call": .., ...}}.
 * Args: [rounds] [calls per round]. Writes into a temporary folder that it deletes.
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        int calls = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        Path dir = Files.createTempDirectory("tidemark-capture-bench");
        try {
            Map<String, String> options = new HashMap<>();
            options.put("dir", dir.toString());
            options.put("queue", String.valueOf(4 * calls));
            Capture capture = new Capture(new Capture.Config(options));
            capture.start();
            TimerGauge plain = new TimerGauge();
            TimerGauge captured = new TimerGauge();
            instrument(capture, captured);
            double[] base = new double[rounds];
            double[] with = new double[rounds];
            for (int w = 0; w < 3; w++) { // warm-up
                loop(plain, calls);
                loop(captured, calls);
                drain(capture);
            }
            for (int r = 0; r < rounds; r++) {
                base[r] = loop(plain, calls);
                with[r] = loop(captured, calls);
                drain(capture);
            }
            capture.close();
            double b = median(base);
            double c = median(with);
            double[] diff = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                diff[r] = with[r] - base[r];
            }
            // one call = one event (each markStart / markEnd is a transition)
            System.out.printf(java.util.Locale.ROOT,
                    "CAPTURE_BENCH {\"ns_per_event\": %.1f, \"baseline_ns_per_call\": %.1f, "
                            + "\"capture_ns_per_call\": %.1f, \"rounds\": %d, \"calls_per_round\": %d, "
                            + "\"dropped\": %d, \"written\": %d}%n",
                    median(diff), b, c, rounds, calls, capture.dropped(), capture.written());
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static void instrument(Capture capture, TimerGauge gauge) throws Exception {
        // what CaptureReporter.notifyOfAddedMetric does, on this capture instead of the shared one
        Task task = capture.task("bench", "vertex", 0, 0);
        java.lang.reflect.Field f = Reflect.field(TimerGauge.class, "clock");
        CaptureReporter.release();
        CaptureReporter.attach(gauge, f, capture, task, "idle");
    }

    /** ns per markStart / markEnd call. */
    private static double loop(TimerGauge gauge, int calls) {
        long s = System.nanoTime();
        for (int i = 0; i < calls; i += 2) {
            gauge.markStart();
            gauge.markEnd();
        }
        return (System.nanoTime() - s) / (double) calls;
    }

    private static void drain(Capture capture) throws InterruptedException {
        for (int i = 0; i < 5000 && capture.queued() > 0; i++) {
            Thread.sleep(1);
        }
        Thread.sleep(20);
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
