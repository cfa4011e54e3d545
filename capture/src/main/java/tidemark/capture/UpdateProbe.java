package tidemark.capture;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.View;

/**
 * A View the reporter adds to each task's metric group (as {@code tidemarkUpdateProbe}, value: the number
 * of update records it found): Flink's view updater calls it once per round, on its own thread, where it
 * records the updates of the task's timers that were not measuring (see {@link RecordingClock}).
 */
final class UpdateProbe implements Gauge<Long>, View {
    static final String NAME = "tidemarkUpdateProbe";
    final List<RecordingClock> clocks = new CopyOnWriteArrayList<>();
    private final Capture capture;
    private volatile long rounds;

    UpdateProbe(Capture capture) {
        this.capture = capture;
    }

    @Override
    public void update() {
        for (RecordingClock c : clocks) {
            try {
                c.probe();
            } catch (Throwable t) {
                capture.failed(c.task, t);
            }
        }
        rounds++;
    }

    @Override
    public Long getValue() {
        return rounds;
    }
}
