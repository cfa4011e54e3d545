package tidemark.live;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * tidemark's live test job: one source file for every Flink release from 1.15 to 2.3, run in a local
 * MiniCluster. It uses only API that all of them have: no open(OpenContext) (1.19 on) nor
 * open(Configuration) (gone in 2.0), the subtask index through {@link #taskInfo}, and print() as the
 * sink (SinkFunction's DiscardingSink is gone in 2.0, sink v2's came in 1.18), fed nothing.
 *
 * <pre>
 *   source-a -> pace-a -> pad-a ==forward==> watermarks-b (idleness 1 s) --keyBy--\
 *                                                                                 join (two inputs) --rebalance--> explode (x K)
 *   source-c -> pace-c -> watermarks-c -------------------------------------keyBy--/          --rebalance--> throttle -> discard
 * </pre>
 *
 * <ul>
 *   <li>pace-a subtask 1 stops for a few seconds once per attempt; its task thread is blocked, so
 *       watermarks-b subtask 1 gets no records, declares itself idle, and join's input 0 sees
 *       channel 1 go IDLE (and ACTIVE again when records resume).
 *   <li>join subtask 0 throws once in attempt 0: the fixed-delay restart strategy brings every task
 *       back as attempt 1.
 *   <li>throttle sleeps in alternate windows, so upstream tasks are back-pressured in windows:
 *       explode emits K records of ~3 KB per input, rebalanced over two channels: each channel
 *       needs three 4 KB buffers per input but may hold two, and there are no overdraft buffers,
 *       so it blocks on a buffer mid-record: hard back pressure; join is soft back-pressured.
 * </ul>
 *
 * <p>Arguments: {@code --rest-port P} (REST on 127.0.0.1), {@code --capture-dir DIR} (configures
 * the tidemark reporter; the agent is the caller's {@code -javaagent}), {@code --bench} (no sleeps,
 * no pause, no failure: throughput), {@code --conf KEY=VALUE} (any other Flink option). At the
 * end it prints one line {@code LIVEJOB_RESULT {json}}.
 */
public final class LiveJob {

    /** Records the throttle saw, and when, across its subtasks (one JVM: the MiniCluster's). */
    static final AtomicLong SINK_RECORDS = new AtomicLong();
    static final AtomicLong SINK_FIRST_MS = new AtomicLong(Long.MAX_VALUE);
    static final AtomicLong SINK_LAST_MS = new AtomicLong(Long.MIN_VALUE);

    private LiveJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        Map<String, String> extraConf = new HashMap<>();
        boolean bench = false;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--bench")) {
                bench = true;
            } else if (args[i].equals("--conf") && i + 1 < args.length) {
                String[] pair = args[++i].split("=", 2);
                extraConf.put(pair[0], pair.length > 1 ? pair[1] : "");
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                options.put(args[i].substring(2), args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        int parallelism = 2;
        // The job's figures per mode: source rate per subtask (0 = unthrottled), records per
        // source subtask, records explode emits per input.
        long rate = bench ? 0 : 400;
        long perSubtask = bench ? Long.parseLong(options.getOrDefault("bench-records", "150000")) : 400L * 28;
        int explode = bench ? 10 : 8;
        int padding = bench ? 0 : 3000;

        Map<String, String> conf = new HashMap<>();
        conf.put("rest.port", options.getOrDefault("rest-port", "8081"));
        conf.put("rest.address", "127.0.0.1");
        conf.put("rest.bind-address", "127.0.0.1");
        conf.put("taskmanager.numberOfTaskSlots", "8");
        conf.put("taskmanager.network.memory.max-overdraft-buffers-per-gate", "0");
        // Small network buffers and few of them, so that back pressure reaches past explode to
        // join and the sources within a slow window instead of being absorbed by buffers.
        conf.put("taskmanager.memory.segment-size", "4kb");
        conf.put("taskmanager.network.memory.floating-buffers-per-gate", "2");
        conf.put("taskmanager.network.memory.max-buffers-per-channel", "2");
        conf.put("metrics.fetcher.update-interval", options.getOrDefault("fetcher-interval-ms", "10000"));
        conf.put("restart-strategy.type", "fixed-delay");
        conf.put("restart-strategy", "fixed-delay"); // the key's name before 1.17
        conf.put("restart-strategy.fixed-delay.attempts", "3");
        conf.put("restart-strategy.fixed-delay.delay", "1 s");
        if (options.containsKey("capture-dir")) {
            // Contract §6, the metric reporter: the jar is on the classpath (as lib/ would put it).
            conf.put("metrics.reporter.tidemark.factory.class", "tidemark.capture.CaptureReporterFactory");
            conf.put("metrics.reporter.tidemark.dir", options.get("capture-dir"));
        }
        conf.putAll(extraConf);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(Configuration.fromMap(conf));
        env.setParallelism(parallelism);

        long total = perSubtask * parallelism;
        DataStream<String> a = env.fromSequence(0, total - 1).name("source-a")
                .map(new Pace(rate, bench ? -1 : 1, 10_000, 6_000)).name("pace-a")
                .map(new Pad(bench ? 0 : 256)).name("pad-a");
        DataStream<String> b = a.assignTimestampsAndWatermarks(
                        WatermarkStrategy.<String>forBoundedOutOfOrderness(Duration.ofMillis(200))
                                .withTimestampAssigner((value, previous) -> Pad.stamp(value))
                                .withIdleness(Duration.ofSeconds(1)))
                .name("watermarks-b")
                .disableChaining();
        DataStream<Long> c = env.fromSequence(0, total - 1).name("source-c")
                .map(new Pace(rate, -1, 0, 0)).name("pace-c")
                .assignTimestampsAndWatermarks(
                        WatermarkStrategy.<Long>forBoundedOutOfOrderness(Duration.ofMillis(300))
                                .withTimestampAssigner((value, previous) -> value))
                .name("watermarks-c");
        DataStream<Long> joined = b.keyBy(new PaddedBucket()).connect(c.keyBy(new Bucket()))
                .process(new Join(bench ? -1 : 15_000)).name("join");
        DataStream<String> exploded =
                joined.rebalance().flatMap(new Explode(explode, padding)).name("explode");
        exploded.rebalance().process(new Throttle(!bench)).name("throttle")
                .print().name("discard");

        long started = System.currentTimeMillis();
        env.execute(bench ? "tidemark-live-bench" : "tidemark-live");
        long finished = System.currentTimeMillis();
        long records = SINK_RECORDS.get();
        double seconds = (SINK_LAST_MS.get() - SINK_FIRST_MS.get()) / 1000.0;
        System.out.println("LIVEJOB_RESULT {\"sink_records\": " + records
                + ", \"sink_seconds\": " + seconds
                + ", \"records_per_s\": " + (seconds > 0 ? records / seconds : 0)
                + ", \"job_ms\": " + (finished - started) + "}");
        System.out.flush();
        System.exit(0);
    }

    /** Emits each record's wall-clock time at a steady rate; one subtask stops once for a while. */
    static final class Pace extends RichMapFunction<Long, Long> {
        private final long rate;
        private final int pauseSubtask;
        private final long pauseAfterMs;
        private final long pauseForMs;
        private transient long startMs;
        private transient long count;
        private transient boolean paused;
        private transient int subtask;

        Pace(long rate, int pauseSubtask, long pauseAfterMs, long pauseForMs) {
            this.rate = rate;
            this.pauseSubtask = pauseSubtask;
            this.pauseAfterMs = pauseAfterMs;
            this.pauseForMs = pauseForMs;
        }

        @Override
        public Long map(Long value) throws Exception {
            long now = System.currentTimeMillis();
            if (count == 0) {
                subtask = taskInfo(getRuntimeContext(), "getIndexOfThisSubtask");
                startMs = now;
            }
            if (rate > 0) {
                if (!paused && subtask == pauseSubtask && now - startMs >= pauseAfterMs) {
                    paused = true;
                    Thread.sleep(pauseForMs);
                    startMs += pauseForMs;
                }
                long due = startMs + count * 1000 / rate;
                if (due > now) {
                    Thread.sleep(due - now);
                    now = System.currentTimeMillis();
                }
            }
            count++;
            return now;
        }
    }

    /**
     * Stream a's records as text with padding: "stamp,xxx...". With 8-byte records the few network
     * buffers between pace-a and join (4 KB, two per channel) hold about ten seconds of a
     * back-pressured stream; that backlog absorbed the 6 s pause, so watermarks-b never saw a gap
     * and join never saw channel 1 go IDLE (a CI run on Flink 2.2.0). Padded, they hold well under
     * one second.
     */
    static final class Pad implements MapFunction<Long, String> {
        private final String padding;

        Pad(int padding) {
            this.padding = "x".repeat(padding);
        }

        @Override
        public String map(Long stamp) {
            return stamp + "," + padding;
        }

        static long stamp(String value) {
            return Long.parseLong(value.substring(0, value.indexOf(',')));
        }
    }

    /** Spreads stream a's keys over both subtasks of the join, as {@link Bucket} does stream c's. */
    static final class PaddedBucket implements KeySelector<String, Long> {
        @Override
        public Long getKey(String value) {
            return Pad.stamp(value) % 16;
        }
    }

    /** Spreads the keys over both subtasks of the join. */
    static final class Bucket implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long value) {
            return value % 16;
        }
    }

    /** The two-input task (valves on input 0 and 1); subtask 0 fails once, 15 s into attempt 0. */
    static final class Join extends KeyedCoProcessFunction<Long, String, Long, Long> {
        private final long failAfterMs;
        private transient long startMs;
        private transient boolean failing;
        private transient boolean started;

        Join(long failAfterMs) {
            this.failAfterMs = failAfterMs;
        }

        private void check() {
            if (!started) {
                started = true;
                startMs = System.currentTimeMillis();
                failing = failAfterMs >= 0
                        && taskInfo(getRuntimeContext(), "getIndexOfThisSubtask") == 0
                        && taskInfo(getRuntimeContext(), "getAttemptNumber") == 0;
            }
            if (failing && System.currentTimeMillis() - startMs >= failAfterMs) {
                throw new IllegalStateException("tidemark live job: the planned failure of attempt 0");
            }
        }

        @Override
        public void processElement1(String value, Context ctx, Collector<Long> out) {
            check();
            out.collect(Pad.stamp(value));
        }

        @Override
        public void processElement2(Long value, Context ctx, Collector<Long> out) {
            check();
            out.collect(value);
        }
    }

    /** Many records per input: with no overdraft buffers this blocks mid-record (hard back pressure). */
    static final class Explode implements FlatMapFunction<Long, String> {
        private final int copies;
        private final String padding;

        Explode(int copies, int padding) {
            this.copies = copies;
            this.padding = "x".repeat(padding);
        }

        @Override
        public void flatMap(Long value, Collector<String> out) {
            for (int i = 0; i < copies; i++) {
                out.collect((value + i) + padding);
            }
        }
    }

    /** The slow end: in alternate 4 s windows it sleeps 1 ms every 2 records. */
    static final class Throttle extends ProcessFunction<String, Long> {
        private final boolean slow;
        private transient long seen;

        Throttle(boolean slow) {
            this.slow = slow;
        }

        @Override
        public void processElement(String value, Context ctx, Collector<Long> out) throws Exception {
            long now = System.currentTimeMillis();
            SINK_RECORDS.incrementAndGet();
            SINK_FIRST_MS.accumulateAndGet(now, Math::min);
            SINK_LAST_MS.accumulateAndGet(now, Math::max);
            if (slow && (now / 4000) % 2 == 0 && ++seen % 2 == 0) {
                Thread.sleep(1);
            }
            // nothing downstream: print() is only the job's sink
        }
    }

    /**
     * {@code getTaskInfo().NAME()} (1.19 on; RuntimeContext's own NAME() is gone in 2.0) or, before
     * 1.19, {@code NAME()} of the RuntimeContext itself.
     */
    static int taskInfo(RuntimeContext context, String name) {
        try {
            try {
                Object info = RuntimeContext.class.getMethod("getTaskInfo").invoke(context);
                Class<?> type = Class.forName("org.apache.flink.api.common.TaskInfo");
                return ((Number) type.getMethod(name).invoke(info)).intValue();
            } catch (NoSuchMethodException e) {
                return ((Number) RuntimeContext.class.getMethod(name).invoke(context)).intValue();
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the task's " + name, e);
        }
    }
}
