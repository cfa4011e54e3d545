package tidemark.capture;

import java.lang.reflect.Field;
import org.apache.flink.runtime.metrics.TimerGauge;
import org.apache.flink.util.clock.Clock;

/**
 * The recording clock of a TimerGauge with StartStopListeners (2.0, and 1.19.x / 1.20.x patches, T14):
 * the gauge calls it after each effective markStart / markEnd, under its lock, right after reading the
 * clock. Loaded only where {@code TimerGauge$StartStopListener} exists.
 */
final class ListeningClock extends RecordingClock implements TimerGauge.StartStopListener {
    ListeningClock(Clock delegate, Capture capture, Task task, String timer, TimerGauge gauge) throws Exception {
        super(delegate, capture, task, timer, gauge, true);
    }

    @Override
    public void markStart() {
        event(0);
    }

    @Override
    public void markEnd() {
        event(1);
    }

    /** Replaces the gauge's clock with a listening one and registers it (under the gauge's lock). */
    static RecordingClock attach(Clock original, Capture c, Task task, String timer, TimerGauge gauge,
            Field clockField) throws Exception {
        ListeningClock clock = new ListeningClock(original, c, task, timer, gauge);
        clockField.set(gauge, clock);
        gauge.registerListener(clock);
        return clock;
    }
}
