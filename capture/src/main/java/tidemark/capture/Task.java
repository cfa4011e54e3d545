package tidemark.capture;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/** One task attempt: its identity, its seq counter and the seq ranges of its events that were lost. */
final class Task {
    final String jobId;
    final String vertexId;
    final int subtaskIndex;
    final int attempt;
    /** The JSON fields every record of this task starts with (after the type). */
    final String jsonPrefix;
    private final AtomicLong seq = new AtomicLong();
    /** Lost ranges not yet written as capture_gap records, sorted by seq; guarded by this. */
    private final List<Gap> gaps = new ArrayList<>();
    long droppedTotal;
    /** The task's UpdateProbe, once a timer of it is registered (guarded by the reporter). */
    Object probe;

    Task(String jobId, String vertexId, int subtaskIndex, int attempt) {
        this.jobId = jobId;
        this.vertexId = vertexId;
        this.subtaskIndex = subtaskIndex;
        this.attempt = attempt;
        StringBuilder b = new StringBuilder();
        b.append(",\"job_id\":");
        Json.string(b, jobId);
        b.append(",\"vertex_id\":");
        Json.string(b, vertexId);
        b.append(",\"subtask_index\":").append(subtaskIndex);
        b.append(",\"attempt\":").append(attempt);
        jsonPrefix = b.toString();
    }

    static String key(String jobId, String vertexId, int subtaskIndex, int attempt) {
        return jobId + '/' + vertexId + '/' + subtaskIndex + '/' + attempt;
    }

    long nextSeq() {
        return seq.getAndIncrement();
    }

    /** A lost range of seqs, inclusive. */
    static final class Gap {
        long seq;
        long tsMs;
        long toSeq;
        long toTsMs;
        long dropped;
        String reason;

        Gap(long seq, long tsMs, String reason) {
            this.seq = seq;
            this.tsMs = tsMs;
            this.toSeq = seq;
            this.toTsMs = tsMs;
            this.dropped = 1;
            this.reason = reason;
        }
    }

    /** Records one lost event; returns true when this task had no pending gap before. */
    synchronized boolean drop(long seq, long tsMs, String reason) {
        droppedTotal++;
        boolean first = gaps.isEmpty();
        int i = 0;
        while (i < gaps.size() && gaps.get(i).toSeq < seq) {
            i++;
        }
        Gap before = i > 0 ? gaps.get(i - 1) : null;
        Gap after = i < gaps.size() ? gaps.get(i) : null;
        if (after != null && after.seq <= seq) {
            return first; // already counted (cannot happen: each seq is dropped once)
        }
        if (before != null && before.toSeq + 1 == seq) {
            before.toSeq = seq;
            before.toTsMs = tsMs;
            before.dropped++;
            if (after != null && after.seq == seq + 1) {
                before.toSeq = after.toSeq;
                before.toTsMs = after.toTsMs;
                before.dropped += after.dropped;
                gaps.remove(i);
            }
            addReason(before, reason);
        } else if (after != null && after.seq == seq + 1) {
            after.seq = seq;
            after.tsMs = tsMs;
            after.dropped++;
            addReason(after, reason);
        } else {
            gaps.add(i, new Gap(seq, tsMs, reason));
        }
        return first;
    }

    private static void addReason(Gap gap, String reason) {
        if (!gap.reason.equals(reason) && !gap.reason.contains(reason)) {
            gap.reason = gap.reason + "; " + reason;
        }
    }

    /** Takes every pending gap (the writer writes them; on failure it gives them back). */
    synchronized List<Gap> takeGaps() {
        if (gaps.isEmpty()) {
            return null;
        }
        List<Gap> taken = new ArrayList<>(gaps);
        gaps.clear();
        return taken;
    }

    synchronized void giveBack(List<Gap> taken) {
        for (Gap g : taken) {
            int i = 0;
            while (i < gaps.size() && gaps.get(i).seq < g.seq) {
                i++;
            }
            gaps.add(i, g);
        }
        // merge neighbours that became contiguous
        for (int i = 0; i + 1 < gaps.size(); ) {
            Gap a = gaps.get(i);
            Gap b = gaps.get(i + 1);
            if (a.toSeq + 1 == b.seq) {
                a.toSeq = b.toSeq;
                a.toTsMs = b.toTsMs;
                a.dropped += b.dropped;
                addReason(a, b.reason);
                gaps.remove(i + 1);
            } else {
                i++;
            }
        }
    }
}
