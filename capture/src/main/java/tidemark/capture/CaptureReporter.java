package tidemark.capture;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.runtime.metrics.TimerGauge;
import org.apache.flink.util.clock.Clock;

/**
 * The metric reporter: timer start / end / update records of every task-scope TimerGauge (through a
 * recording clock and a StartStopListener), and vertex records of every job whose JobManager it sees.
 */
public final class CaptureReporter implements MetricReporter {
    private static final Map<String, String> TIMERS = new HashMap<>();

    static {
        TIMERS.put("idleTimeMsPerSecond", "idle");
        TIMERS.put("softBackPressuredTimeMsPerSecond", "soft_backpressured");
        TIMERS.put("hardBackPressuredTimeMsPerSecond", "hard_backpressured");
        TIMERS.put("backPressuredTimeMsPerSecond", "backpressured"); // Flink <= 1.14: a TimerGauge
    }

    private static volatile boolean timersDisabled;
    private static volatile boolean verticesDisabled;
    private static Field clockField;
    private static boolean releaseChecked;
    private static boolean hasListeners;

    private volatile Capture capture;

    @Override
    public void open(MetricConfig config) {
        try {
            Map<String, String> options = new HashMap<>();
            for (String name : config.stringPropertyNames()) {
                options.put(name, config.getProperty(name));
            }
            capture = Capture.configure(options, "metric reporter");
        } catch (Throwable t) {
            Log.line("metric reporter cannot start (" + t + "): timer capture disabled");
        }
    }

    @Override
    public void close() {
        Capture c = capture;
        if (c == null) {
            return;
        }
        if (Agent.active) {
            c.flush(); // the agent still writes; the JVM's shutdown hook closes the writer
        } else {
            c.close();
        }
    }

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        Capture c = capture;
        if (c == null) {
            return;
        }
        try {
            String timer = TIMERS.get(name);
            if (timer != null && !timersDisabled) {
                timer(c, metric, timer, group);
            } else if ("downtime".equals(name) && !verticesDisabled
                    && metric.getClass().getName().endsWith(".DownTimeGauge")) {
                vertices(c, metric);
            }
        } catch (Throwable t) {
            c.error(t);
        }
    }

    /**
     * A closing task's metrics are removed after its last view update: record the updates of its
     * gauges that were not measuring and that no probe or transition has found yet, which would
     * otherwise be lost with the task.
     */
    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {
        Capture c = capture;
        if (c == null || timersDisabled) {
            return;
        }
        try {
            if (metric instanceof UpdateProbe) {
                for (RecordingClock clock : ((UpdateProbe) metric).clocks) {
                    clock.closing();
                }
            } else if (TIMERS.containsKey(name) && metric instanceof TimerGauge && clockField != null) {
                Object clock = clockField.get(metric);
                if (clock instanceof RecordingClock) {
                    ((RecordingClock) clock).closing();
                }
            }
        } catch (Throwable t) {
            c.error(t);
        }
    }

    // ------------------------------------------------------------------------------------------- timers

    private static void timer(Capture c, Metric metric, String timer, MetricGroup group) {
        Map<String, String> vars = group.getAllVariables();
        String jobId = vars.get("<job_id>");
        String vertexId = vars.get("<task_id>");
        if (jobId == null || vertexId == null || vars.containsKey("<operator_id>")) {
            return; // operator scope (2.x's per-split idleTimeMsPerSecond) or not a task
        }
        Object gaugeObject = metric;
        final TimerGauge gauge;
        try {
            if (!(gaugeObject instanceof TimerGauge)) {
                return; // e.g. 1.15+'s backPressuredTimeMsPerSecond, a sum of soft and hard
            }
            gauge = (TimerGauge) gaugeObject;
        } catch (LinkageError e) {
            disableTimers("org.apache.flink.runtime.metrics.TimerGauge is not as expected (" + e + ")");
            return;
        }
        Field f = clockField();
        if (f == null) {
            return;
        }
        if (!release()) {
            return;
        }
        int subtask = Integer.parseInt(vars.get("<subtask_index>"));
        String attemptText = vars.get("<task_attempt_num>");
        int attempt = attemptText == null ? 0 : Integer.parseInt(attemptText);
        Task task = c.task(jobId, vertexId, subtask, attempt);
        RecordingClock clock;
        try {
            clock = attach(gauge, f, c, task, timer);
        } catch (Exception | LinkageError e) {
            disableTimers("cannot replace TimerGauge's clock (" + e + ")");
            return;
        }
        UpdateProbe probe;
        synchronized (task) {
            probe = (UpdateProbe) task.probe;
            if (probe == null) {
                probe = new UpdateProbe(c);
                task.probe = probe;
                group.gauge(UpdateProbe.NAME, probe); // Flink's view updater calls it every round
            }
        }
        probe.clocks.add(clock);
    }

    /** Replaces the gauge's clock with a recording one (after {@link #release()}). */
    static RecordingClock attach(TimerGauge gauge, Field clockField, Capture c, Task task, String timer)
            throws Exception {
        synchronized (gauge) {
            Clock original = (Clock) clockField.get(gauge);
            if (hasListeners) {
                // not typed here: on a Flink without StartStopListener, verifying this class must not load it
                return ListeningClock.attach(original, c, task, timer, gauge, clockField);
            }
            RecordingClock clock = new RecordingClock(original, c, task, timer, gauge, false);
            clockField.set(gauge, clock);
            if (gauge.isMeasuring()) {
                clock.event(0); // already measuring: its start time is in the gauge
            }
            return clock;
        }
    }

    /**
     * What this Flink's TimerGauge offers, checked once, with one log line for what it lacks: false when
     * timers cannot be recorded at all. StartStopListeners (2.0, 1.19.x and 1.20.x patches) tell starts
     * and ends; without them (1.15 to 1.18) the clock readings do. A slot ring (1.17 on) or the agent's
     * update counter (1.15, 1.16) tells the updates of gauges that are not measuring; without either,
     * no update records are written (tidemark then puts rounds on the 5 s epoch grid, contract §4).
     */
    static synchronized boolean release() {
        if (releaseChecked) {
            return !timersDisabled;
        }
        releaseChecked = true;
        try {
            Class.forName("org.apache.flink.runtime.metrics.TimerGauge$StartStopListener", false,
                    TimerGauge.class.getClassLoader());
            hasListeners = true;
        } catch (ClassNotFoundException | LinkageError e) {
            hasListeners = false;
        }
        if (!hasListeners && !RecordingClock.canReadTransitions()) {
            disableTimers("TimerGauge has neither StartStopListeners nor 'long currentMeasurementStartTS'");
            return false;
        }
        String updates = RecordingClock.checkLayout();
        if (updates != null) {
            Log.line("Flink " + flinkVersion() + ": " + updates
                    + ": update records disabled (start and end records are written)");
        } else if (!hasListeners) {
            Log.line("Flink " + flinkVersion() + ": TimerGauge has no StartStopListener: starts and ends"
                    + " are read from its clock");
        }
        return true;
    }

    /**
     * The release the JVM runs, as Flink names it (e.g. {@code 1.15.4}), for the vertex records;
     * null when Flink does not say or says something that is not a release (contract §8: absent,
     * never guessed).
     */
    static String releaseName() {
        String version = flinkVersion();
        return version.matches("[0-9]+\\.[0-9]+([.-].*)?") ? version : null;
    }

    /** The job vertex's number of key groups, or null where the graph does not say. */
    private static Integer maxParallelism(Object ejv) {
        try {
            int value = ((Number) Reflect.call(ejv, "getMaxParallelism")).intValue();
            return value >= 1 ? value : null;
        } catch (Throwable t) {
            return null;
        }
    }

    /** How an input edge ships records (its JSON-plan name: HASH, REBALANCE, FORWARD, ...), or null. */
    private static String shipStrategy(Object edge) {
        try {
            Object name = Reflect.call(edge, "getShipStrategyName");
            return name == null || name.toString().isEmpty() ? null : name.toString();
        } catch (Throwable t) {
            return null;
        }
    }

    static String flinkVersion() {
        try {
            Class<?> info = Class.forName("org.apache.flink.runtime.util.EnvironmentInformation");
            return String.valueOf(info.getMethod("getVersion").invoke(null));
        } catch (Throwable t) {
            return "(version unknown)";
        }
    }

    private static synchronized Field clockField() {
        if (clockField == null && !timersDisabled) {
            Field f = Reflect.field(TimerGauge.class, "clock");
            if (f == null || !Clock.class.isAssignableFrom(f.getType())) {
                disableTimers("TimerGauge has no field 'Clock clock'");
                return null;
            }
            clockField = f;
        }
        return clockField;
    }

    private static void disableTimers(String why) {
        if (!timersDisabled) {
            timersDisabled = true;
            Log.line(why + ": timer capture disabled");
        }
    }

    // ----------------------------------------------------------------------------------------- vertices

    private static void vertices(Capture c, Metric downtime) {
        Object graph = null;
        for (Class<?> k = downtime.getClass(); k != null && graph == null; k = k.getSuperclass()) {
            for (Field f : k.getDeclaredFields()) {
                if (f.getType().getName().endsWith("JobStatusProvider")) {
                    try {
                        f.setAccessible(true);
                        graph = f.get(downtime);
                    } catch (Throwable t) {
                        // try the next field
                    }
                }
            }
        }
        try {
            if (graph == null) {
                throw new NoSuchFieldException("DownTimeGauge has no JobStatusProvider field");
            }
            String jobId = Reflect.call(graph, "getJobID").toString();
            String release = releaseName(); // one JVM, one release: read once per job graph
            List<String> lines = new ArrayList<>();
            for (Object ejv : (Iterable<?>) Reflect.call(graph, "getVerticesTopologically")) {
                String vertexId = Reflect.call(ejv, "getJobVertexId").toString();
                Object name = Reflect.call(ejv, "getName");
                int parallelism = ((Number) Reflect.call(ejv, "getParallelism")).intValue();
                Object jobVertex = Reflect.call(ejv, "getJobVertex");
                Object invokable = Reflect.call(jobVertex, "getInvokableClassName");
                boolean busy = !"org.apache.flink.streaming.runtime.tasks.SourceStreamTask".equals(invokable);
                StringBuilder b = new StringBuilder("{\"type\":\"vertex\",\"job_id\":");
                Json.string(b, jobId);
                b.append(",\"vertex_id\":");
                Json.string(b, vertexId);
                if (name != null) {
                    b.append(",\"vertex_name\":");
                    Json.string(b, name.toString());
                }
                b.append(",\"parallelism\":").append(parallelism);
                b.append(",\"busy_time_enabled\":").append(busy);
                if (release != null) {
                    b.append(",\"flink_version\":");
                    Json.string(b, release);
                }
                Integer maxParallelism = maxParallelism(ejv);
                if (maxParallelism != null) {
                    b.append(",\"max_parallelism\":").append(maxParallelism);
                }
                List<?> inputs = (List<?>) Reflect.call(jobVertex, "getInputs");
                List<String> strategies = new ArrayList<>();
                b.append(",\"upstream_vertex_ids\":[");
                boolean first = true;
                for (Object edge : inputs) {
                    Object producer = Reflect.call(Reflect.call(edge, "getSource"), "getProducer");
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    Json.string(b, Reflect.call(producer, "getID").toString());
                    String strategy = shipStrategy(edge);
                    if (strategy != null) {
                        strategies.add(strategy);
                    }
                }
                b.append(']');
                // One name per input or none: a list that leaves one out would misname the others.
                if (strategies.size() == inputs.size()) {
                    b.append(",\"input_ship_strategies\":[");
                    for (int i = 0; i < strategies.size(); i++) {
                        if (i > 0) {
                            b.append(',');
                        }
                        Json.string(b, strategies.get(i));
                    }
                    b.append(']');
                }
                b.append('}');
                if (parallelism >= 1) {
                    lines.add(b.toString());
                }
            }
            for (String line : lines) {
                c.offer(new Event(Event.VERTEX, null, 0, 0, line, 0, 0, 0, 0, null));
            }
        } catch (Throwable t) {
            if (!verticesDisabled) {
                verticesDisabled = true;
                Log.line("cannot read the job graph from the downtime gauge (" + t + "): vertex capture disabled");
            }
        }
    }
}
