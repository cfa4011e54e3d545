package tidemark.capture;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;

/**
 * The shared capture: one bounded queue, one writer thread, one seq counter per task. The reporter and the
 * agent live in the same class loader and share {@link #get()}; whichever starts first configures it.
 *
 * <p>Task threads call {@link #offer}: a queue offer that never blocks (a full queue drops the event and
 * counts it for its task). The writer thread formats JSON Lines into a hidden temporary file and renames
 * it to {@code *.jsonl} (or compresses it to {@code *.jsonl.gz}) on size or age, and at shutdown.
 */
public final class Capture {
    static final String QUEUE_FULL = "queue full";
    static final String HOOK_FAILED = "capture hook failed";

    private static volatile Capture instance;
    private static final Object LOCK = new Object();

    /** The shared capture, or null when none is configured. */
    public static Capture get() {
        return instance;
    }

    /** Configures the shared capture once (later calls return the first one); null when dir is missing. */
    public static Capture configure(Map<String, String> options, String by) {
        synchronized (LOCK) {
            if (instance != null) {
                return instance;
            }
            String dir = options.get("dir");
            if (dir == null || dir.isEmpty()) {
                Log.line(by + " has no dir option: capture disabled");
                return null;
            }
            try {
                Config config = new Config(options);
                Capture c = new Capture(config);
                c.start();
                Runtime.getRuntime().addShutdownHook(new Thread(c::close, "tidemark-capture-shutdown"));
                Log.line("writing to " + config.dir + " (configured by " + by + ")");
                instance = c;
                return c;
            } catch (Throwable t) {
                Log.line("cannot start (" + t + "): capture disabled");
                return null;
            }
        }
    }

    /** Options: dir, rotate-seconds, rotate-bytes, queue, gzip. */
    public static final class Config {
        final File dir;
        final long rotateMillis;
        final long rotateBytes;
        final int queueCapacity;
        final boolean gzip;

        public Config(Map<String, String> o) {
            dir = new File(o.get("dir"));
            rotateMillis = (long) (Double.parseDouble(o.getOrDefault("rotate-seconds", "60")) * 1000);
            rotateBytes = Long.parseLong(o.getOrDefault("rotate-bytes", String.valueOf(64L << 20)));
            queueCapacity = Integer.parseInt(o.getOrDefault("queue", "65536"));
            gzip = Boolean.parseBoolean(o.getOrDefault("gzip", "true"));
            if (rotateMillis <= 0 || rotateBytes <= 0 || queueCapacity <= 0) {
                throw new IllegalArgumentException("rotate-seconds, rotate-bytes and queue must be positive");
            }
        }
    }

    /** Parses "k=v,k=v". */
    public static Map<String, String> parseOptions(String args) {
        Map<String, String> m = new java.util.HashMap<>();
        if (args == null) {
            return m;
        }
        for (String part : args.split(",")) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                m.put(part.substring(0, eq).trim(), part.substring(eq + 1).trim());
            }
        }
        return m;
    }

    final Config config;
    private final ConcurrentLinkedQueue<Event> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final ConcurrentHashMap<String, Task> tasks = new ConcurrentHashMap<>();
    /** Tasks that have pending gaps. */
    private final ConcurrentLinkedQueue<Task> gapTasks = new ConcurrentLinkedQueue<>();
    final AtomicLong errors = new AtomicLong();
    final AtomicLong dropped = new AtomicLong();
    final AtomicLong written = new AtomicLong();
    private final AtomicLong episodeQueueFull = new AtomicLong();
    private final AtomicLong episodeWriteFailed = new AtomicLong();
    private final AtomicLong episodeHookFailed = new AtomicLong();
    private volatile boolean inEpisode;
    private volatile long lastLossNanos;
    private volatile boolean stopping;
    private volatile boolean stopped;
    private volatile boolean flushRequested;
    private Thread writer;
    private final String baseName;
    private int fileNumber;
    /** Open temporary file state (writer thread only). */
    private File tmp;
    private RandomAccessFile out;
    private long committed;
    private long openedAt;
    /** Test hook: when set, every write to the file throws this. */
    volatile IOException failWrites;

    public Capture(Config config) {
        this.config = config;
        String host = "host";
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (Throwable ignored) {
            String h = System.getenv("HOSTNAME");
            if (h != null) {
                host = h;
            }
        }
        host = host.replaceAll("[^A-Za-z0-9_.-]", "_");
        baseName = "tidemark-" + host + "-" + ProcessHandle.current().pid() + "-" + System.currentTimeMillis() % 100000;
    }

    public synchronized void start() {
        if (writer != null) {
            return;
        }
        config.dir.mkdirs();
        writer = new Thread(this::run, "tidemark-capture-writer");
        writer.setDaemon(true);
        writer.start();
    }

    // ---------------------------------------------------------------------------------------------- tasks

    Task task(String jobId, String vertexId, int subtaskIndex, int attempt) {
        String key = Task.key(jobId, vertexId, subtaskIndex, attempt);
        Task t = tasks.get(key);
        if (t == null) {
            t = tasks.computeIfAbsent(key, k -> new Task(jobId, vertexId, subtaskIndex, attempt));
        }
        return t;
    }

    void forget(Task t) {
        // a finished task's counter is no longer needed once its gaps are written
        tasks.remove(Task.key(t.jobId, t.vertexId, t.subtaskIndex, t.attempt), t);
    }

    // ---------------------------------------------------------------------------------------- producers

    /** Hands an event to the writer; never blocks. A full queue drops it and counts it for its task. */
    void offer(Event e) {
        if (stopped || queued.incrementAndGet() > config.queueCapacity) {
            if (!stopped) {
                queued.decrementAndGet();
            }
            lost(e, QUEUE_FULL);
            return;
        }
        queue.add(e);
    }

    private void lost(Event e, String reason) {
        lost(e.task, e.seq, e.tsMs, reason);
    }

    private void lost(Task task, long seq, long tsMs, String reason) {
        dropped.incrementAndGet();
        if (task == null) {
            return; // a vertex record: nothing to mark
        }
        if (QUEUE_FULL.equals(reason)) {
            episodeQueueFull.incrementAndGet();
        } else if (HOOK_FAILED.equals(reason)) {
            episodeHookFailed.incrementAndGet();
        } else {
            episodeWriteFailed.incrementAndGet();
        }
        lastLossNanos = System.nanoTime();
        inEpisode = true;
        if (task.drop(seq, tsMs, reason)) {
            gapTasks.add(task);
        }
    }

    void error(Throwable t) {
        if (errors.getAndIncrement() == 0) {
            Log.line("a capture hook failed (" + t + "); counted, later failures are only counted");
        }
    }

    /**
     * A hook failed while it recorded an event of {@code task} (null: none known): counted like
     * {@link #error}, and one seq of the task is marked lost, so that a capture_gap record makes tidemark
     * show the affected seconds as not exact instead of numbers missing that event.
     */
    void failed(Task task, Throwable t) {
        error(t);
        if (task != null) {
            lost(task, task.nextSeq(), System.currentTimeMillis(), HOOK_FAILED);
        }
    }

    // ------------------------------------------------------------------------------------------- writer

    private void run() {
        List<Event> batch = new ArrayList<>();
        long idleSince = System.nanoTime();
        while (true) {
            try {
                boolean stop = stopping;
                batch.clear();
                Event e;
                while (batch.size() < 4096 && (e = queue.poll()) != null) {
                    batch.add(e);
                }
                if (!batch.isEmpty()) {
                    queued.addAndGet(-batch.size()); // once per batch: less contention with producers
                }
                if (!batch.isEmpty() || !gapTasks.isEmpty()) {
                    writeBatch(batch);
                }
                long now = System.currentTimeMillis();
                if (out != null && (committed >= config.rotateBytes || now - openedAt >= config.rotateMillis
                        || flushRequested && queue.isEmpty() || stop && queue.isEmpty())) {
                    rotate();
                }
                endEpisode(false);
                if (flushRequested && queue.isEmpty() && out == null) {
                    flushRequested = false;
                }
                if (stop && queue.isEmpty() && gapTasks.isEmpty()) {
                    if (out != null) {
                        rotate();
                    }
                    if (out == null) {
                        break;
                    }
                }
                if (stop && queue.isEmpty() && (System.nanoTime() - idleSince) > 2_000_000_000L) {
                    break; // cannot write at shutdown: give up after 2 s
                }
                if (batch.isEmpty()) {
                    LockSupport.parkNanos(stop ? 10_000_000L : 50_000_000L);
                } else {
                    idleSince = System.nanoTime();
                }
            } catch (Throwable t) {
                error(t);
                LockSupport.parkNanos(100_000_000L);
            }
        }
        endEpisode(true);
        stopped = true;
    }

    private void writeBatch(List<Event> batch) {
        // first the gaps of earlier losses, so they are on disk as soon as writing works again
        List<Task> withGaps = null;
        List<List<Task.Gap>> taken = null;
        if (!gapTasks.isEmpty()) {
            withGaps = new ArrayList<>();
            taken = new ArrayList<>();
            Task t;
            while ((t = gapTasks.poll()) != null) {
                List<Task.Gap> g = t.takeGaps();
                if (g != null) {
                    withGaps.add(t);
                    taken.add(g);
                }
            }
        }
        StringBuilder b = new StringBuilder(256 * (batch.size() + 1));
        if (withGaps != null) {
            for (int i = 0; i < withGaps.size(); i++) {
                for (Task.Gap g : taken.get(i)) {
                    gapLine(b, withGaps.get(i), g);
                }
            }
        }
        for (Event e : batch) {
            try {
                line(b, e);
            } catch (Throwable t) {
                error(t);
            }
        }
        byte[] bytes = b.toString().getBytes(StandardCharsets.UTF_8);
        String failure = null;
        try {
            if (bytes.length > 0) {
                append(bytes);
            }
        } catch (IOException ex) {
            failure = "write failed: " + (ex.getMessage() == null ? ex.getClass().getSimpleName() : ex.getMessage());
        }
        if (failure != null) {
            if (withGaps != null) {
                for (int i = 0; i < withGaps.size(); i++) {
                    withGaps.get(i).giveBack(taken.get(i));
                    gapTasks.add(withGaps.get(i));
                }
            }
            for (Event e : batch) {
                lost(e, failure);
            }
            return;
        }
        written.addAndGet(batch.size());
    }

    /** One log line per loss episode: it ends when every gap is written and 1 s passed without a loss. */
    private void endEpisode(boolean now) {
        if (!inEpisode || !gapTasks.isEmpty() || !now && System.nanoTime() - lastLossNanos < 1_000_000_000L) {
            return;
        }
        inEpisode = false;
        long q = episodeQueueFull.getAndSet(0);
        long w = episodeWriteFailed.getAndSet(0);
        long h = episodeHookFailed.getAndSet(0);
        Log.line("lost " + (q + w + h) + " events (" + q + " queue full, " + w + " write failed, " + h
                + " hook failed); capture_gap records "
                + "written; " + dropped.get() + " lost in total");
    }

    private void append(byte[] bytes) throws IOException {
        if (failWrites != null) {
            throw failWrites;
        }
        if (out == null) {
            open();
        }
        try {
            out.seek(committed);
            out.write(bytes);
            committed += bytes.length;
        } catch (IOException ex) {
            try {
                out.setLength(committed); // no half line stays behind
            } catch (IOException ignored) {
                // the rename at rotation still only publishes whole lines written before: see rotate()
            }
            throw ex;
        }
    }

    private void open() throws IOException {
        fileNumber++;
        tmp = new File(config.dir, "." + baseName + "-" + fileNumber + ".jsonl.tmp");
        out = new RandomAccessFile(tmp, "rw");
        out.setLength(0);
        committed = 0;
        openedAt = System.currentTimeMillis();
    }

    /** Publishes the temporary file: renamed to *.jsonl, or compressed to *.jsonl.gz. */
    private void rotate() {
        if (out == null) {
            return;
        }
        try {
            out.setLength(committed);
            out.close();
        } catch (IOException ex) {
            // the committed lines are whole; a failed truncation leaves at most a partial tail, cut below
        }
        out = null;
        String name = tmp.getName().substring(1, tmp.getName().length() - ".tmp".length());
        File target = new File(config.dir, name);
        boolean ok = false;
        if (committed == 0) {
            tmp.delete();
            return;
        }
        if (config.gzip) {
            File gzTmp = new File(config.dir, "." + name + ".gz.tmp");
            try (InputStream in = Files.newInputStream(tmp.toPath());
                    OutputStream gz = fastGzip(new FileOutputStream(gzTmp))) {
                byte[] buf = new byte[65536];
                long left = committed;
                int n;
                while (left > 0 && (n = in.read(buf, 0, (int) Math.min(buf.length, left))) > 0) {
                    gz.write(buf, 0, n);
                    left -= n;
                }
            } catch (IOException ex) {
                gzTmp.delete();
                gzTmp = null; // publish the plain file instead: ingest reads both
            }
            if (gzTmp != null && move(gzTmp.toPath(), new File(config.dir, name + ".gz").toPath())) {
                tmp.delete();
                ok = true;
            }
        }
        if (!ok && !move(tmp.toPath(), target.toPath())) {
            // keep the hidden file; reopen it so the next rotation tries again
            try {
                fileNumber--;
                File keep = tmp;
                out = new RandomAccessFile(keep, "rw");
                fileNumber++;
                tmp = keep;
            } catch (IOException ex) {
                error(ex);
            }
        }
    }

    /**
     * gzip at Deflater's fastest level: the writer shares the job's cores, and level 6 (Java's
     * default) costs it about 2.6 times the CPU for files about 1.6 times smaller (JSON Lines
     * of a back-pressured job: 20 against 32 times smaller than the plain file).
     */
    private static OutputStream fastGzip(OutputStream file) throws IOException {
        return new GZIPOutputStream(file, 65536) {
            {
                def.setLevel(Deflater.BEST_SPEED);
            }
        };
    }

    private static boolean move(Path from, Path to) {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
            return true;
        } catch (AtomicMoveNotSupportedException ex) {
            try {
                Files.move(from, to);
                return true;
            } catch (IOException ex2) {
                return false;
            }
        } catch (IOException ex) {
            return false;
        }
    }

    // --------------------------------------------------------------------------------------------- JSON

    private static void gapLine(StringBuilder b, Task t, Task.Gap g) {
        b.append("{\"type\":\"capture_gap\"").append(t.jsonPrefix);
        b.append(",\"seq\":").append(g.seq).append(",\"ts_ms\":").append(g.tsMs);
        b.append(",\"to_seq\":").append(g.toSeq).append(",\"to_ts_ms\":").append(g.toTsMs);
        b.append(",\"dropped\":").append(g.dropped).append(",\"reason\":");
        Json.string(b, g.reason);
        b.append("}\n");
    }

    private static final String[] ACTIONS = {"start", "end", "update"};

    private void line(StringBuilder b, Event e) {
        if (e.kind == Event.VERTEX) {
            b.append(e.text).append('\n');
            return;
        }
        int mark = b.length();
        b.append("{\"type\":\"");
        switch (e.kind) {
            case Event.TIMER:
                b.append("timer");
                break;
            case Event.WATERMARK:
                b.append("watermark");
                break;
            case Event.STATUS:
                b.append("watermark_status");
                break;
            default:
                b.append("valve_output");
        }
        b.append('"').append(e.task.jsonPrefix);
        b.append(",\"seq\":").append(e.seq).append(",\"ts_ms\":").append(e.tsMs);
        try {
            switch (e.kind) {
                case Event.TIMER:
                    b.append(",\"timer\":\"").append(e.text).append("\",\"action\":\"").append(ACTIONS[e.a]).append('"');
                    if (e.a == 2) {
                        // an update read on the view-updater thread: its value once that update() is done,
                        // unless a later update has already closed another slot (then left out)
                        Long published = e.published;
                        if (published == null && e.gauge != null) {
                            published = ((RecordingClock) e.gauge).publishedAfter(e.b);
                        }
                        if (published != null) {
                            b.append(",\"published\":").append(published.longValue());
                        }
                    }
                    break;
                case Event.WATERMARK:
                    b.append(",\"input_index\":").append(e.a).append(",\"channel_index\":").append(e.b)
                            .append(",\"num_channels\":").append(e.c).append(",\"watermark_ms\":").append(e.value);
                    break;
                case Event.STATUS:
                    b.append(",\"input_index\":").append(e.a).append(",\"channel_index\":").append(e.b)
                            .append(",\"num_channels\":").append(e.c).append(",\"status\":\"")
                            .append(e.value != 0 ? "IDLE" : "ACTIVE").append('"');
                    break;
                case Event.OUT_WATERMARK:
                    b.append(",\"input_index\":").append(e.a).append(",\"kind\":\"watermark\",\"watermark_ms\":")
                            .append(e.value);
                    break;
                default:
                    b.append(",\"input_index\":").append(e.a).append(",\"kind\":\"status\",\"status\":\"")
                            .append(e.value != 0 ? "IDLE" : "ACTIVE").append('"');
            }
        } catch (Throwable t) {
            b.setLength(mark);
            throw t;
        }
        b.append("}\n");
    }

    // ----------------------------------------------------------------------------------------- shutdown

    /** Publishes what is written so far (the reporter's close while the agent still runs). */
    public void flush() {
        flushRequested = true;
    }

    /** Writes what is queued, publishes the last file and stops the writer (waits at most 5 s). */
    public void close() {
        stopping = true;
        Thread w = writer;
        if (w != null && w != Thread.currentThread()) {
            try {
                w.join(5000);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        endEpisode(true);
        stopped = true;
    }

    /** Counts for tests and logs. */
    public long dropped() {
        return dropped.get();
    }

    public long errors() {
        return errors.get();
    }

    /** Events waiting for the writer. */
    public int queued() {
        return queued.get();
    }

    public long written() {
        return written.get();
    }
}
