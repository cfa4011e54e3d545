package tidemark.spark;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerOperationClosed;
import org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerOperationError;
import org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerOperationFinish;
import org.apache.spark.sql.hive.thriftserver.ui.SparkListenerThriftServerOperationStart;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One log line for a statement of a Thrift (BI) client that failed: its error class and its
 * first characters, as {@code WARN bi: BI query failed (TABLE_OR_VIEW_NOT_FOUND): select ...}.
 * Spark's Thrift server logs the same failure with its whole stack three times (issue 64), so
 * tidemark's log configuration turns those loggers down and the server registers this listener
 * (tidemark.serve.ThriftServer). The same failure again within ten minutes (a dashboard polling
 * a mart not built yet) is counted, not logged: the next line of it, or the first event after
 * the ten minutes, says how many more there were, and starts its next ten minutes: a failure that
 * keeps coming is one line every ten minutes, as a spell of cycles that find nothing new is
 * (tidemark.service). It keeps each running statement's text until the statement ends, and each
 * failure's count for its ten minutes.
 */
public class BiQueryLog extends SparkListener {
    private static final Logger LOG = LoggerFactory.getLogger("tidemark.bi");
    private static final Pattern ERROR_CLASS =
            Pattern.compile("\\[([A-Z][A-Z0-9_]*(\\.[A-Z0-9_]+)*)\\]");
    private static final int SHOWN = 80;
    static final long WINDOW_MS = 600000L;
    private final Map statements = new ConcurrentHashMap();
    private final Map repeats = new HashMap();

    public void onOtherEvent(SparkListenerEvent event) {
        if (event instanceof SparkListenerThriftServerOperationStart) {
            SparkListenerThriftServerOperationStart start =
                    (SparkListenerThriftServerOperationStart) event;
            statements.put(start.id(), shown(start.statement()));
        } else if (event instanceof SparkListenerThriftServerOperationError) {
            SparkListenerThriftServerOperationError error =
                    (SparkListenerThriftServerOperationError) event;
            Object statement = statements.remove(error.id());
            String line =
                    "BI query failed ("
                            + errorClass(error.errorMsg(), error.errorTrace())
                            + "): "
                            + (statement == null ? "(statement not seen)" : statement);
            String said = failed(line, error.finishTime());
            if (said != null) {
                LOG.warn(said);
            }
        } else if (event instanceof SparkListenerThriftServerOperationFinish) {
            statements.remove(((SparkListenerThriftServerOperationFinish) event).id());
        } else if (event instanceof SparkListenerThriftServerOperationClosed) {
            statements.remove(((SparkListenerThriftServerOperationClosed) event).id());
        }
        for (Iterator said = expired(System.currentTimeMillis()).iterator(); said.hasNext(); ) {
            LOG.warn((String) said.next());
        }
    }

    /**
     * The line to log for a failure at {@code atMs}, or null while the same failure was logged
     * less than ten minutes ago (it is counted instead).
     */
    public synchronized String failed(String line, long atMs) {
        long[] seen = (long[]) repeats.get(line);
        if (seen != null && atMs - seen[0] < WINDOW_MS) {
            seen[1] += 1;
            return null;
        }
        repeats.put(line, new long[] {atMs, 0L});
        return seen == null || seen[1] == 0 ? line : line + more(seen[1]);
    }

    /**
     * The counts of failures whose ten minutes ended by {@code nowMs}, as lines: each starts the
     * failure's next ten minutes. A failure whose ten minutes ended with no repeat is forgotten.
     */
    public synchronized List expired(long nowMs) {
        List lines = new ArrayList();
        for (Iterator entries = repeats.entrySet().iterator(); entries.hasNext(); ) {
            Map.Entry entry = (Map.Entry) entries.next();
            long[] seen = (long[]) entry.getValue();
            if (nowMs - seen[0] >= WINDOW_MS) {
                if (seen[1] > 0) {
                    // The count is the failure's line of these ten minutes: one more within
                    // the next ten is counted again, so a steady failure says one line in ten.
                    lines.add(entry.getKey() + more(seen[1]));
                    entry.setValue(new long[] {nowMs, 0L});
                } else {
                    entries.remove();
                }
            }
        }
        return lines;
    }

    private static String more(long count) {
        return " (" + count + " more like it in the ten minutes before)";
    }

    /** The statement's first characters, on one line. */
    public static String shown(String statement) {
        String line = statement == null ? "" : statement.trim().replaceAll("\\s+", " ");
        return line.length() <= SHOWN ? line : line.substring(0, SHOWN) + "...";
    }

    /** Spark's error class ({@code [TABLE_OR_VIEW_NOT_FOUND]}), else the exception's class. */
    public static String errorClass(String message, String trace) {
        Matcher found = ERROR_CLASS.matcher(message == null ? "" : message);
        if (found.find()) {
            return found.group(1);
        }
        String first = trace == null ? "" : trace.trim();
        int end = first.indexOf(':');
        int line = first.indexOf('\n');
        if (line >= 0 && (end < 0 || line < end)) {
            end = line;
        }
        String name = end < 0 ? first : first.substring(0, end);
        name = name.substring(name.lastIndexOf('.') + 1).trim();
        return name.isEmpty() ? "error" : name;
    }
}
