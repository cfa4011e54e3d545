package tidemark.capture;

import static tidemark.capture.TestSupport.check;
import static tidemark.capture.TestSupport.fact;

import java.io.File;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;

/**
 * Rotation (contract §6 output): a reader polling DIR while the writer writes sees only complete
 * files (every visible *.jsonl ends with a newline and never grows), and both the size limit and the
 * age limit rotate. Args: DIR.
 */
public final class RotationTest {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        Capture c = TestSupport.capture(args[0], "rotate-bytes=4000", "rotate-seconds=0.3");
        c.start();
        Task t = c.task("job", "vertex", 0, 0);
        Map<String, Long> seen = new HashMap<>();
        int[] violations = {0};
        int[] polls = {0};
        Thread reader = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                poll(dir, seen, violations);
                polls[0]++;
            }
        });
        reader.start();
        // phase 1: fast, the size limit rotates
        long t0 = System.currentTimeMillis();
        for (int i = 0; i < 3000; i++) {
            c.offer(TestSupport.timer(t, "idle", i % 2, t0 + i));
            if (i % 50 == 0) {
                Thread.sleep(1);
            }
        }
        Thread.sleep(400);
        int afterSize = count(dir);
        // phase 2: slow, a few events per file, the age limit rotates
        for (int i = 0; i < 8; i++) {
            c.offer(TestSupport.timer(t, "idle", i % 2, t0 + 5000 + i));
            Thread.sleep(200);
        }
        c.close();
        reader.interrupt();
        reader.join();
        poll(dir, seen, violations);
        check(violations[0] == 0, violations[0] + " times the reader saw a partial or growing file");
        File[] tmp = dir.listFiles((d, n) -> n.endsWith(".tmp"));
        check(tmp.length == 0, "temporary files left behind");
        fact("size_rotated_files", String.valueOf(afterSize));
        fact("files", String.valueOf(count(dir)));
        fact("polls", String.valueOf(polls[0]));
        fact("events", String.valueOf(3008));
    }

    static int count(File dir) {
        return dir.listFiles((d, n) -> n.endsWith(".jsonl")).length;
    }

    private static void poll(File dir, Map<String, Long> seen, int[] violations) {
        File[] files = dir.listFiles((d, n) -> n.endsWith(".jsonl"));
        if (files == null) {
            return;
        }
        for (File f : files) {
            try {
                byte[] b = Files.readAllBytes(f.toPath());
                Long before = seen.putIfAbsent(f.getName(), (long) b.length);
                if (b.length == 0 || b[b.length - 1] != '\n' || before != null && before != b.length) {
                    violations[0]++;
                }
            } catch (java.io.IOException e) {
                violations[0]++;
            }
        }
    }
}
