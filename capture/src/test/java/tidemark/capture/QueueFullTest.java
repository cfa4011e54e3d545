package tidemark.capture;

import static tidemark.capture.TestSupport.check;
import static tidemark.capture.TestSupport.fact;

/**
 * Queue full (contract §6 safety): with the writer stalled, offers beyond the queue's capacity return
 * (an offer that waited for room would hang here: nothing takes from the queue), are counted per task, and become capture_gap records with the exact seq ranges once the writer
 * runs; later events are written. Args: DIR.
 */
public final class QueueFullTest {
    public static void main(String[] args) throws Exception {
        Capture c = TestSupport.capture(args[0], "queue=100");
        Task a = c.task("job", "a", 0, 0);
        Task b = c.task("job", "b", 1, 2);
        for (int i = 0; i < 1000; i++) {
            Task t = i % 4 == 3 ? b : a;
            c.offer(TestSupport.timer(t, "idle", i % 2, 1000 + i));
        }
        check(c.dropped() == 900, "dropped " + c.dropped());
        c.start(); // the writer catches up
        for (int i = 0; i < 5000 && c.queued() > 0; i++) {
            Thread.sleep(1);
        }
        for (int i = 0; i < 10; i++) {
            c.offer(TestSupport.timer(a, "idle", i % 2, 5000 + i));
        }
        c.close();
        check(c.dropped() == 900, "dropped after restart " + c.dropped());
        fact("a_events", String.valueOf(750 + 10));
        fact("b_events", String.valueOf(250));
    }
}
