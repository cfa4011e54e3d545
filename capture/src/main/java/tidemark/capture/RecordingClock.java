package tidemark.capture;

import java.lang.reflect.Field;
import org.apache.flink.runtime.metrics.TimerGauge;
import org.apache.flink.util.clock.Clock;

/**
 * Replaces a TimerGauge's clock and listens to it.
 *
 * <p>Start / end: the gauge reads its clock once per markStart / markEnd under its lock and then calls
 * its listeners (T1-T3, T14), so in a listener callback {@link #last} is exactly that {@code now}.
 *
 * <p>Update (V1-V4): {@code update()} reads the clock only while the gauge is measuring. Such a reading
 * on Flink's view-updater thread is an update, recorded at once with the gauge's own reading. An update
 * of a gauge that is not measuring reads nothing; it shows as a step of the gauge's private slot index
 * {@code idx}, which {@link #catchUp} notices under the gauge's lock at the gauge's next transition or
 * when the task's {@link UpdateProbe} runs on the view-updater thread (every round), whichever is first.
 * While the gauge is not measuring, an update's place between two transitions does not change any value,
 * so a seq taken then is exact; its ts_ms is the start of the view updater's round it belongs to.
 */
final class RecordingClock extends Clock implements TimerGauge.StartStopListener {
    static final String VIEW_UPDATER_THREAD = "Flink-Metric-View-Updater";
    static final long NONE = Long.MIN_VALUE;
    private static Field idxField;
    private static Field valuesField;

    private final Clock delegate;
    private final Capture capture;
    final Task task;
    private final String timer;
    private final TimerGauge gauge;
    private final int slots;
    /** Written and read under the gauge's lock. */
    long last = NONE;
    /** The slot index after the last update recorded (guarded by the gauge's lock). */
    private int recordedIdx;
    /** ts_ms of this gauge's last record (guarded by the gauge's lock). */
    private long lastRecordTs;
    /**
     * The view updater's round of the last update recorded, NONE before the probe's first pass (guarded
     * by the gauge's lock). Rounds count from 0, so "none yet" must not be a round number: with -1, a
     * first pass in round 0 left it looking unset, and the next pass stamped round 0's update with its own.
     */
    private long lastRound = NONE;
    /** An update read inside update() whose published value is not known yet (guarded by the gauge's lock). */
    private Event pending;

    /** Null when TimerGauge has no int idx / long[] values (update records then need the clock reading). */
    static synchronized String checkLayout() {
        if (idxField == null) {
            idxField = Reflect.field(TimerGauge.class, "idx");
            valuesField = Reflect.field(TimerGauge.class, "values");
            if (idxField == null || idxField.getType() != int.class || valuesField == null
                    || valuesField.getType() != long[].class) {
                idxField = null;
                return "TimerGauge has no 'int idx' and 'long[] values'";
            }
        }
        return null;
    }

    RecordingClock(Clock delegate, Capture capture, Task task, String timer, TimerGauge gauge) throws Exception {
        this.delegate = delegate;
        this.capture = capture;
        this.task = task;
        this.timer = timer;
        this.gauge = gauge;
        synchronized (gauge) {
            this.slots = ((long[]) valuesField.get(gauge)).length;
            this.recordedIdx = idxField.getInt(gauge);
        }
        this.lastRecordTs = delegate.absoluteTimeMillis();
    }

    @Override
    public long absoluteTimeMillis() {
        long now = delegate.absoluteTimeMillis();
        last = now;
        try {
            if (Thread.currentThread().getName().startsWith(VIEW_UPDATER_THREAD)) {
                // inside update(), under the gauge's lock, before it closes the slot
                long round = Bursts.seen(now);
                catchUp();
                long seq = task.nextSeq();
                recordedIdx = (recordedIdx + 1) % slots;
                lastRecordTs = now;
                lastRound = round;
                Event e = new Event(Event.TIMER, task, seq, now, timer, 2, recordedIdx, 0, 0, this);
                pending = e;
                capture.offer(e);
            }
        } catch (Throwable t) {
            capture.failed(task, t);
        }
        return now;
    }

    @Override
    public long relativeTimeMillis() {
        return delegate.relativeTimeMillis();
    }

    @Override
    public long relativeTimeNanos() {
        return delegate.relativeTimeNanos();
    }

    @Override
    public void markStart() {
        event(0);
    }

    @Override
    public void markEnd() {
        event(1);
    }

    private void event(int action) {
        try {
            long ts = last;
            if (ts == NONE) {
                // registerListener on a gauge that is already measuring: its start time is in the gauge
                ts = Reflect.longField(gauge, "currentMeasurementStartTS", delegate.absoluteTimeMillis());
            }
            catchUp();
            long seq = task.nextSeq();
            lastRecordTs = ts;
            capture.offer(new Event(Event.TIMER, task, seq, ts, timer, action, 0, 0, 0, null));
        } catch (Throwable t) {
            capture.failed(task, t);
        }
    }

    /** The probe's call on the view-updater thread. */
    void probe() {
        long round = Bursts.seen(delegate.absoluteTimeMillis());
        synchronized (gauge) {
            if (lastRound == NONE) {
                // the probe's first pass: Flink added it to the view updater with the task's gauges, so
                // no update of this gauge happened in an earlier pass (views join at the end of a pass)
                lastRound = round - 1;
            }
            catchUp();
        }
    }

    /** The task is closing: record the updates not found yet (its gauges get no more updates). */
    void closing() {
        synchronized (gauge) {
            catchUp();
        }
    }

    /**
     * Records the updates of a gauge that was not measuring, found as steps of its slot index since the
     * last recorded one. Call under the gauge's lock.
     */
    private void catchUp() {
        int idx;
        try {
            idx = idxField.getInt(gauge);
        } catch (IllegalAccessException e) {
            return;
        }
        if (pending != null) {
            if (idx == recordedIdx) {
                pending.published = gauge.getValue(); // that update is done, no later one yet
            }
            pending = null;
        }
        int missed = Math.floorMod(idx - recordedIdx, slots);
        for (int k = 0; k < missed; k++) {
            long[] round = Bursts.find(lastRound, lastRecordTs, 0);
            long ts = Math.max(round[1], lastRecordTs);
            long seq = task.nextSeq();
            Event e = new Event(Event.TIMER, task, seq, ts, timer, 2, 0, 0, 0, null);
            if (k == missed - 1) {
                e.published = gauge.getValue(); // only the last one's value is still readable
            }
            lastRound = round[0];
            lastRecordTs = ts;
            capture.offer(e);
        }
        recordedIdx = idx;
    }

    /** The writer's read of an update's published value: exact only if no later update has closed a slot. */
    Long publishedAfter(int idxAfter) {
        synchronized (gauge) { // waits until that update() is done
            try {
                return idxField.getInt(gauge) == idxAfter ? gauge.getValue() : null;
            } catch (IllegalAccessException e) {
                return null;
            }
        }
    }
}
