package tidemark.capture;

import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.metrics.MetricGroup;

/** Helpers of the self-tests: checks that fail the JVM, facts printed for the pytest driver. */
final class TestSupport {
    private TestSupport() {}

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    /** One line the pytest driver reads: FACT name json. */
    static void fact(String name, String json) {
        System.out.println("FACT " + name + " " + json);
    }

    /** Views added to groups from {@link #group}: what Flink's view updater would call. */
    static final java.util.List<org.apache.flink.metrics.View> VIEWS = new java.util.concurrent.CopyOnWriteArrayList<>();

    private static Object[] margs(Object[] args) {
        return args;
    }

    /** A metric group with the given variables (all a reporter reads). */
    static MetricGroup group(String... keyValues) {
        Map<String, String> vars = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            vars.put(keyValues[i], keyValues[i + 1]);
        }
        return (MetricGroup) Proxy.newProxyInstance(TestSupport.class.getClassLoader(),
                new Class<?>[] {MetricGroup.class}, (proxy, method, args) -> {
                    if (method.getName().equals("getAllVariables")) {
                        return vars;
                    }
                    if (method.getName().equals("gauge")) {
                        VIEWS.add((org.apache.flink.metrics.View) margs(args)[1]);
                        return args[1];
                    }
                    if (method.getName().equals("toString")) {
                        return "group" + vars;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    static MetricGroup taskGroup(String job, String vertex, int subtask, int attempt) {
        return group("<job_id>", job, "<task_id>", vertex, "<subtask_index>", String.valueOf(subtask),
                "<task_attempt_num>", String.valueOf(attempt));
    }

    static Capture capture(String dir, String... options) {
        Map<String, String> o = new HashMap<>();
        o.put("dir", dir);
        o.put("gzip", "false"); // these tests read the files as they are written
        for (String kv : options) {
            int eq = kv.indexOf('=');
            o.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return new Capture(new Capture.Config(o));
    }

    static Event timer(Task t, String name, int action, long ts) {
        return new Event(Event.TIMER, t, t.nextSeq(), ts, name, action, 0, 0, 0, null);
    }
}
