package tidemark.capture;

import static tidemark.capture.TestSupport.check;
import static tidemark.capture.TestSupport.fact;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.runtime.metrics.TimerGauge;
import org.apache.flink.util.clock.ManualClock;

/**
 * A real TimerGauge under the reporter (T1-T3, T11, T14, V1-V4): start / end records carry the
 * gauge's own clock readings; an update() on Flink's view-updater thread gives an update record whose
 * published value is getValue() after that update, with its seq between the events around it;
 * operator-scope gauges and non-transitions give nothing. Args: DIR. Prints the expected records.
 */
public final class TimerGaugeTest {
    /** The largest value the gauge published (with a 5 s window, 1.15 and 1.16, the last one is 0). */
    private static long maxPublished;

    public static void main(String[] args) throws Exception {
        MetricConfig config = new MetricConfig();
        config.setProperty("dir", args[0]);
        CaptureReporter reporter = new CaptureReporter();
        reporter.open(config);

        ManualClock clock = new ManualClock(1_000_000L * 1_000_000L); // ns: 1,000,000 ms
        TimerGauge gauge = new TimerGauge(clock);
        reporter.notifyOfAddedMetric(gauge, "idleTimeMsPerSecond", TestSupport.taskGroup("j1", "v1", 3, 1));
        TimerGauge operatorGauge = new TimerGauge(clock);
        reporter.notifyOfAddedMetric(operatorGauge, "idleTimeMsPerSecond",
                TestSupport.group("<job_id>", "j1", "<task_id>", "v1", "<subtask_index>", "3",
                        "<task_attempt_num>", "1", "<operator_id>", "op"));
        List<String> expected = new ArrayList<>();

        step(clock, 7);
        gauge.markStart();
        expected.add(ev("start", clock));
        operatorGauge.markStart();
        step(clock, 300);
        gauge.markStart(); // T11: a second start while measuring is no transition
        step(clock, 200);
        gauge.markEnd();
        expected.add(ev("end", clock));
        gauge.markEnd(); // T11: no transition
        step(clock, 4300);
        // the JVM's first round (0), probe before the gauge, not measuring: nothing found in round 0; the
        // probe's next pass finds it and must stamp it with round 0, not with its own round (a first-pass
        // sentinel once made round 0 look like "no round yet" and moved such updates one round late)
        expected.add(update(gauge, clock, true));
        step(clock, 5000);
        // found in round 2 together with that round's update, so its published value is gone
        expected.add(update(gauge, clock, true).replace(",\"published\":", ",\"published_unknown\":"));
        step(clock, 5000);
        expected.add(update(gauge, clock, false)); // not measuring: found by the probe after it
        step(clock, 1);
        gauge.markStart();
        expected.add(ev("start", clock));
        step(clock, 4999);
        expected.add(update(gauge, clock, true)); // measuring across the update (V3): the gauge's reading
        step(clock, 250);
        gauge.markEnd();
        expected.add(ev("end", clock));
        step(clock, 4750);
        // not measuring, probe before it: found in the next round together with that round's update; only
        // the later one's published value is still readable (Flink keeps one order per round, so in a
        // real TaskManager a probe finds one update at a time)
        expected.add(update(gauge, clock, true).replace(",\"published\":", ",\"published_unknown\":"));
        step(clock, 5000);
        expected.add(update(gauge, clock, false)); // two updates found by the probe at once
        step(clock, 5000);
        expected.add(update(gauge, clock, true)); // found by the next transition
        step(clock, 30);
        gauge.markStart();
        expected.add(ev("start", clock));
        step(clock, 20);
        gauge.markEnd();
        expected.add(ev("end", clock));
        check(maxPublished > 0, "the gauge measured something");
        check(TestSupport.VIEWS.size() == 1, "one probe per task, not per gauge or operator: " + TestSupport.VIEWS);

        reporter.close();
        fact("expected", "[" + String.join(",", expected) + "]");
        fact("dropped", String.valueOf(Capture.get().dropped()));
        fact("errors", String.valueOf(Capture.get().errors()));
    }

    private static void step(ManualClock clock, long ms) {
        clock.advanceTime(Duration.ofMillis(ms));
    }

    private static String ev(String action, ManualClock clock) {
        return "{\"action\":\"" + action + "\",\"ts_ms\":" + clock.absoluteTimeMillis() + "}";
    }

    /** update() on a thread named like Flink's view updater; returns the expected record. */
    private static String update(TimerGauge gauge, ManualClock clock, boolean probeFirst) throws Exception {
        long[] published = new long[1];
        Thread t = new Thread(() -> {
            // one round of Flink's view updater: every View, in an order of its own
            if (probeFirst) {
                TestSupport.VIEWS.forEach(v -> v.update());
            }
            gauge.update();
            published[0] = gauge.getValue();
            if (!probeFirst) {
                TestSupport.VIEWS.forEach(v -> v.update());
            }
        }, "Flink-Metric-View-Updater-thread-1");
        t.start();
        t.join();
        maxPublished = Math.max(maxPublished, published[0]);
        return "{\"action\":\"update\",\"ts_ms\":" + clock.absoluteTimeMillis() + ",\"published\":" + published[0] + "}";
    }
}
