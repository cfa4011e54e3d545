package tidemark.capture;

/** One captured event, as the task thread hands it to the writer: no formatting on the task thread. */
final class Event {
    static final int TIMER = 0;
    static final int WATERMARK = 1;
    static final int STATUS = 2;
    static final int OUT_WATERMARK = 3;
    static final int OUT_STATUS = 4;
    static final int VERTEX = 5;

    final int kind;
    final Task task;
    final long seq;
    final long tsMs;
    /** timer: the timer's name; vertex: the whole JSON line. */
    final String text;
    /** timer: 0 start, 1 end, 2 update; valve: input_index. */
    final int a;
    /** valve inputs: channel_index; timer update: the slot index after it (gauge set) or 1 if value is published. */
    final int b;
    /** valve inputs: num_channels. */
    final int c;
    /** watermark_ms, 1 for IDLE / 0 for ACTIVE, or an update's published value. */
    final long value;
    /** timer update read inside update(): its RecordingClock, through which the writer reads published. */
    final Object gauge;
    /** timer update: its published value once known (set under the gauge's lock), else null. */
    volatile Long published;

    Event(int kind, Task task, long seq, long tsMs, String text, int a, int b, int c, long value, Object gauge) {
        this.kind = kind;
        this.task = task;
        this.seq = seq;
        this.tsMs = tsMs;
        this.text = text;
        this.a = a;
        this.b = b;
        this.c = c;
        this.value = value;
        this.gauge = gauge;
    }
}
