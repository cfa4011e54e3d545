package tidemark.capture;

/**
 * The view updater's rounds as this JVM saw them: the start of each burst of activity on its thread
 * (Flink runs every View's update() in one pass every 5 s; passes are seconds apart).
 */
final class Bursts {
    private Bursts() {}

    private static final int KEEP = 64;
    private static final long[] starts = new long[KEEP];
    private static final long[] lasts = new long[KEEP];
    private static int count;

    /** Called on the view-updater thread; returns the number of the round {@code now} belongs to. */
    static synchronized long seen(long now) {
        int i = (count - 1) % KEEP;
        if (count > 0 && now - lasts[i] < 1000 && now >= starts[i]) {
            lasts[i] = Math.max(lasts[i], now);
            return count - 1;
        }
        i = count % KEEP;
        starts[i] = now;
        lasts[i] = now;
        count++;
        return count - 1;
    }

    /**
     * The k-th (0-based) round after round {@code afterRound} that was still running at or after
     * {@code since}: {number, start}; {afterRound, since} when no such round is known.
     */
    static synchronized long[] find(long afterRound, long since, int k) {
        int found = 0;
        for (long n = Math.max(afterRound + 1, Math.max(0, count - KEEP)); n < count; n++) {
            int i = (int) (n % KEEP);
            if (lasts[i] >= since && found++ == k) {
                return new long[] {n, starts[i]};
            }
        }
        return new long[] {afterRound, since};
    }
}
