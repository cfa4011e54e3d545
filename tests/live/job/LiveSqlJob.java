package tidemark.live;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.functions.AggregateFunction;

/**
 * tidemark's live SQL job: a Flink SQL windowed aggregation over {@code datagen}, as most Flink users
 * write their jobs, through the Java Table API (run in a local MiniCluster) on the releases whose
 * PyFlink has no Python 3.11 wheel (1.15 to 1.18); live_sql_job.py submits the same SQL through
 * PyFlink's Table API on the others, with {@link SlowSum} from these classes.
 *
 * <pre>
 *   clicks (datagen, event time = generation time, watermark 200 ms behind)
 *     --hash(bucket)--> TUMBLE(1 s) GROUP BY bucket: COUNT, SLOW_SUM(amount) --> blackhole
 * </pre>
 *
 * <p>The aggregation task has one input with two channels, so its StatusWatermarkValve aligns the
 * two source subtasks' watermarks; {@code SLOW_SUM} (an aggregate function, so it runs in the
 * aggregation task, after the shuffle: a scalar function would be computed in the sources' chain)
 * sleeps 1 ms per record in alternate 3 s windows, slower than the sources then: they are
 * back-pressured in those windows and the aggregation is idle in the others.
 *
 * <p>Arguments: {@code --sql FILE} (live_sql_job.sql, the job's statements), {@code --rest-port P},
 * {@code --capture-dir DIR} (the tidemark reporter; the agent is
 * the caller's {@code -javaagent}), {@code --fetcher-interval-ms MS}. Prints {@code LIVEJOB_RESULT
 * {json}} at the end.
 */
public final class LiveSqlJob {
    private LiveSqlJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("unknown argument " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        Map<String, String> conf = new HashMap<>();
        conf.put("rest.port", options.getOrDefault("rest-port", "8081"));
        conf.put("rest.address", "127.0.0.1");
        conf.put("rest.bind-address", "127.0.0.1");
        conf.put("taskmanager.numberOfTaskSlots", "4");
        conf.put("taskmanager.memory.segment-size", "4kb");
        conf.put("taskmanager.network.memory.floating-buffers-per-gate", "2");
        conf.put("taskmanager.network.memory.max-buffers-per-channel", "2");
        conf.put("metrics.fetcher.update-interval", options.getOrDefault("fetcher-interval-ms", "10000"));
        if (options.containsKey("capture-dir")) {
            conf.put("metrics.reporter.tidemark.factory.class", "tidemark.capture.CaptureReporterFactory");
            conf.put("metrics.reporter.tidemark.dir", options.get("capture-dir"));
        }
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(Configuration.fromMap(conf));
        env.setParallelism(2);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.createTemporarySystemFunction("SLOW_SUM", SlowSum.class);
        // live_sql_job.sql (--sql FILE): the statements, the last one the INSERT that runs the job
        List<String> statements = statements(Files.readString(Path.of(options.get("sql"))));
        long started = System.currentTimeMillis();
        TableResult result = null;
        for (String statement : statements) {
            result = tables.executeSql(statement);
        }
        result.await();
        long finished = System.currentTimeMillis();
        System.out.println("LIVEJOB_RESULT {\"job_ms\": " + (finished - started) + ", \"api\": \"java\"}");
        System.out.flush();
        System.exit(0);
    }

    /** The statements of a file: its lines without comment lines, split at semicolons. */
    static List<String> statements(String text) {
        StringBuilder kept = new StringBuilder();
        for (String line : text.split("\n")) {
            if (!line.strip().startsWith("--")) {
                kept.append(line).append('\n');
            }
        }
        List<String> found = new ArrayList<>();
        for (String statement : kept.toString().split(";")) {
            if (!statement.isBlank()) {
                found.add(statement.strip());
            }
        }
        return found;
    }

    /** SUM(amount), sleeping 1 ms per record in alternate 3 s windows. */
    public static final class SlowSum extends AggregateFunction<Long, SlowSum.Total> {
        /** The accumulator. */
        public static final class Total {
            public long sum;
        }

        @Override
        public Total createAccumulator() {
            return new Total();
        }

        @Override
        public Long getValue(Total total) {
            return total.sum;
        }

        public void accumulate(Total total, Integer value) throws InterruptedException {
            if ((System.currentTimeMillis() / 3000) % 2 == 0) {
                Thread.sleep(1);
            }
            total.sum += value == null ? 0 : value;
        }
    }
}
