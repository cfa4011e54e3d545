package tidemark.capture;

import java.lang.reflect.Field;
import org.apache.flink.runtime.metrics.TimerGauge;
import org.apache.flink.util.clock.Clock;

/**
 * Replaces a TimerGauge's clock and listens to it.
 *
 * <p>Start / end: the gauge reads its clock once per effective markStart / markEnd under its lock (T1-T3,
 * T11). Where TimerGauge has StartStopListeners (2.0, 1.19.x and 1.20.x patches, T14) it then calls them,
 * so in a listener callback ({@link ListeningClock}) {@link #last} is exactly that {@code now}. Where it
 * has none (Flink 1.15 to 1.18) the reading itself is the transition: on a task thread it is a markStart
 * if the gauge is not measuring at that moment (its {@code currentMeasurementStartTS} is 0), else a
 * markEnd, read under the gauge's lock before the method changes anything.
 *
 * <p>Update (V1-V4): {@code update()} reads the clock only while the gauge is measuring. Such a reading
 * on Flink's view-updater thread is an update, recorded at once with the gauge's own reading. An update
 * of a gauge that is not measuring reads nothing; it shows as a step of the gauge's private slot index
 * {@code idx}, which {@link #catchUp} notices under the gauge's lock at the gauge's next transition or
 * when the task's {@link UpdateProbe} runs on the view-updater thread (every round), whichever is first.
 * While the gauge is not measuring, an update's place between two transitions does not change any value,
 * so a seq taken then is exact; its ts_ms is the start of the view updater's round it belongs to.
 */
class RecordingClock extends Clock {
    /** The view updater's thread: its own from 1.17 on; 1.15 and 1.16 run it on the registry's executor. */
    static final String VIEW_UPDATER_THREAD = "Flink-Metric-View-Updater";
    static final String REGISTRY_THREAD = "Flink-MetricRegistry";
    static final long NONE = Long.MIN_VALUE;
    /** The agent's update counter in a TimerGauge without a slot ring (Flink 1.15, 1.16). */
    static final String UPDATE_COUNTER = "tidemark$updates";
    /** More updates than this between two looks at a gauge (over an hour of 5 s rounds) is no update count. */
    static final int MAX_MISSED = 1000;
    /** TimerGauge's int that steps at every update: its slot index, or the agent's counter; null: none. */
    private static Field idxField;
    /** The modulus of {@link #idxField}: the ring's slot count, or no wrap for the counter. */
    private static int idxModulus;
    private static Field startField;
    private static String layoutProblem;
    private static boolean layoutChecked;

    private final Clock delegate;
    private final Capture capture;
    final Task task;
    private final String timer;
    private final TimerGauge gauge;
    private final int slots;
    /** False: no StartStopListener, so each clock reading on a task thread is the transition. */
    private final boolean listening;
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

    /**
     * Checks TimerGauge's layout once. Null when update records can be written: the gauge has a slot ring
     * ({@code int idx}, {@code long[] values}, Flink 1.17 and later) or, without one (1.15, 1.16), the
     * agent's update counter; otherwise why not (start and end records are written all the same).
     */
    static synchronized String checkLayout() {
        if (!layoutChecked) {
            layoutChecked = true;
            Field idx = Reflect.field(TimerGauge.class, "idx");
            Field values = Reflect.field(TimerGauge.class, "values");
            Field counter = Reflect.field(TimerGauge.class, UPDATE_COUNTER);
            startField = Reflect.field(TimerGauge.class, "currentMeasurementStartTS");
            if (idx != null && idx.getType() == int.class && values != null && values.getType() == long[].class) {
                idxField = idx;
                idxModulus = 0; // the ring's length, per gauge
            } else if (counter != null && counter.getType() == int.class) {
                idxField = counter;
                idxModulus = Integer.MAX_VALUE;
            } else {
                layoutProblem = "TimerGauge has no slot ring ('int idx', 'long[] values': Flink 1.15 and 1.16)"
                        + " and the java agent did not add its update counter";
            }
        }
        return layoutProblem;
    }

    /** Whether TimerGauge has the field the transitions of a gauge without listeners are told by. */
    static synchronized boolean canReadTransitions() {
        checkLayout();
        return startField != null && startField.getType() == long.class;
    }

    static boolean recordsUpdates() {
        return checkLayout() == null;
    }

    RecordingClock(Clock delegate, Capture capture, Task task, String timer, TimerGauge gauge, boolean listening)
            throws Exception {
        this.delegate = delegate;
        this.capture = capture;
        this.task = task;
        this.timer = timer;
        this.gauge = gauge;
        this.listening = listening;
        checkLayout();
        synchronized (gauge) {
            if (idxField == null) {
                this.slots = 1;
            } else if (idxModulus == 0) {
                this.slots = ((long[]) Reflect.field(TimerGauge.class, "values").get(gauge)).length;
            } else {
                this.slots = idxModulus;
            }
            this.recordedIdx = idxField == null ? 0 : idxField.getInt(gauge);
        }
        this.lastRecordTs = delegate.absoluteTimeMillis();
    }

    @Override
    public long absoluteTimeMillis() {
        long now = delegate.absoluteTimeMillis();
        last = now;
        try {
            if (!onViewUpdater()) {
                if (!listening) {
                    // inside markStart / markEnd, under the gauge's lock, before it changes anything
                    event(startField.getLong(gauge) == 0 ? 0 : 1);
                }
            } else if (idxField != null) {
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

    /**
     * Whether this thread is Flink's view updater. TimerGauge's markStart / markEnd run on task threads
     * only, so any metric-registry thread reading a gauge's clock is in update().
     */
    static boolean onViewUpdater() {
        String name = Thread.currentThread().getName();
        return name.startsWith(VIEW_UPDATER_THREAD) || name.startsWith(REGISTRY_THREAD);
    }

    @Override
    public long relativeTimeMillis() {
        return delegate.relativeTimeMillis();
    }

    @Override
    public long relativeTimeNanos() {
        return delegate.relativeTimeNanos();
    }

    /** A start or end (action 0 or 1) with the gauge's reading {@link #last}. */
    final void event(int action) {
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
        if (idxField == null) {
            return;
        }
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
        if (idxField == null) {
            return;
        }
        synchronized (gauge) {
            catchUp();
        }
    }

    /**
     * Records the updates of a gauge that was not measuring, found as steps of its slot index since the
     * last recorded one. Call under the gauge's lock.
     */
    private void catchUp() {
        if (idxField == null) {
            return;
        }
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
        if (missed > MAX_MISSED) {
            // not an update count (the gauge's index was changed by something else): resynchronise
            recordedIdx = idx;
            capture.failed(task, new IllegalStateException(timer + " gauge's update index jumped by " + missed));
            return;
        }
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
                if (idxField == null) {
                    return null;
                }
                return idxField.getInt(gauge) == idxAfter ? gauge.getValue() : null;
            } catch (IllegalAccessException e) {
                return null;
            }
        }
    }
}
