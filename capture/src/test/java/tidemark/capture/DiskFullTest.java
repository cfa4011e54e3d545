package tidemark.capture;

import static tidemark.capture.TestSupport.check;
import static tidemark.capture.TestSupport.fact;

import java.io.File;
import java.io.IOException;

/**
 * A full disk (contract §6 safety): the producer never blocks or throws while writes fail with ENOSPC;
 * drops are counted and logged; once space is freed, capture_gap records appear and later events are
 * written. Args: DIR (a small tmpfs, filled by FILLER up to a few KB) FILLER, or DIR inject (no tmpfs:
 * writes fail by an injected IOException).
 */
public final class DiskFullTest {
    public static void main(String[] args) throws Exception {
        boolean inject = args[1].equals("inject");
        File filler = inject ? null : new File(args[1]);
        Capture c = TestSupport.capture(args[0], "rotate-bytes=100000000", "rotate-seconds=1000");
        c.start();
        Task t = c.task("job", "v", 0, 0);
        if (inject) {
            c.failWrites = new IOException("No space left on device (injected)");
        }
        int n = 0;
        long deadline = System.currentTimeMillis() + 20000;
        // write until the disk is full and some events are lost
        while (c.dropped() < 500 && System.currentTimeMillis() < deadline) {
            c.offer(TestSupport.timer(t, "soft_backpressured", n % 2, 1000 + n));
            n++;
            if (n % 20 == 0) {
                Thread.sleep(1);
            }
        }
        check(c.dropped() >= 500, "no drops: the disk never filled");
        // free the space
        if (inject) {
            c.failWrites = null;
        } else {
            check(filler.delete(), "cannot delete the filler");
        }
        Thread.sleep(300);
        for (int i = 0; i < 100; i++) {
            c.offer(TestSupport.timer(t, "soft_backpressured", n % 2, 1000 + n));
            n++;
        }
        c.close();
        fact("events", String.valueOf(n));
        fact("dropped", String.valueOf(c.dropped()));
    }
}
