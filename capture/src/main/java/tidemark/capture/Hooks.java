package tidemark.capture;

import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * What the agent's instrumented Flink classes call. Every hook catches Throwable: nothing reaches Flink.
 * Valve calls run on the task thread; the task's identity is the thread's, set when it builds its
 * StreamTask.
 */
public final class Hooks {
    private Hooks() {}

    static final class ThreadState {
        Task task;
        Object lastValve;
        int lastInput;
        /** The input whose valve is running (its outputs belong to it). */
        int currentInput;
    }

    private static final ThreadLocal<ThreadState> STATE = new ThreadLocal<>();
    private static final Map<Object, Integer> VALVE_INPUTS = Collections.synchronizedMap(new WeakHashMap<>());

    /** At the end of every StreamTask constructor, on the task thread. */
    public static void streamTask(Object streamTask) {
        Capture c = Capture.get();
        if (c == null) {
            return;
        }
        try {
            Object env = Reflect.call(streamTask, "getEnvironment");
            Object info = Reflect.call(env, "getTaskInfo");
            bind(c, Reflect.call(env, "getJobID").toString(), Reflect.call(env, "getJobVertexId").toString(),
                    ((Number) Reflect.call(info, "getIndexOfThisSubtask")).intValue(),
                    ((Number) Reflect.call(info, "getAttemptNumber")).intValue());
        } catch (Throwable t) {
            c.error(t);
        }
    }

    /** Test entry point: the task identity a StreamTask constructor would set for this thread. */
    public static void bindForTest(String jobId, String vertexId, int subtaskIndex, int attempt) {
        Capture c = Capture.get();
        if (c != null) {
            bind(c, jobId, vertexId, subtaskIndex, attempt);
        }
    }

    private static void bind(Capture c, String jobId, String vertexId, int subtaskIndex, int attempt) {
        ThreadState s = new ThreadState();
        s.task = c.task(jobId, vertexId, subtaskIndex, attempt);
        STATE.set(s);
    }

    /** At the end of AbstractStreamTaskNetworkInput's constructor: which input a valve belongs to. */
    public static void networkInput(Object valve, int inputIndex) {
        try {
            if (valve != null && Capture.get() != null) {
                VALVE_INPUTS.put(valve, inputIndex);
            }
        } catch (Throwable t) {
            Capture c = Capture.get();
            if (c != null) {
                c.error(t);
            }
        }
    }

    /** The task this thread records for, or null. */
    private static Task boundTask() {
        ThreadState s = STATE.get();
        return s == null ? null : s.task;
    }

    private static ThreadState enter(Object valve) {
        ThreadState s = STATE.get();
        if (s == null) {
            return null;
        }
        if (s.lastValve != valve) {
            Integer input = VALVE_INPUTS.get(valve);
            s.lastValve = valve;
            s.lastInput = input == null ? 0 : input;
        }
        s.currentInput = s.lastInput;
        return s;
    }

    /** At entry of StatusWatermarkValve.inputWatermark. */
    public static void watermarkIn(Object valve, long watermark, int channel, int numChannels) {
        Capture c = Capture.get();
        if (c == null) {
            return;
        }
        try {
            long now = System.currentTimeMillis();
            ThreadState s = enter(valve);
            if (s != null) {
                c.offer(new Event(Event.WATERMARK, s.task, s.task.nextSeq(), now, null, s.currentInput, channel,
                        numChannels, watermark, null));
            }
        } catch (Throwable t) {
            c.failed(boundTask(), t);
        }
    }

    /** At entry of StatusWatermarkValve.inputWatermarkStatus. */
    public static void statusIn(Object valve, boolean idle, int channel, int numChannels) {
        Capture c = Capture.get();
        if (c == null) {
            return;
        }
        try {
            long now = System.currentTimeMillis();
            ThreadState s = enter(valve);
            if (s != null) {
                c.offer(new Event(Event.STATUS, s.task, s.task.nextSeq(), now, null, s.currentInput, channel,
                        numChannels, idle ? 1 : 0, null));
            }
        } catch (Throwable t) {
            c.failed(boundTask(), t);
        }
    }

    /** Before each DataOutput.emitWatermark inside StatusWatermarkValve. */
    public static void watermarkOut(long watermark) {
        out(Event.OUT_WATERMARK, watermark);
    }

    /** Before each DataOutput.emitWatermarkStatus inside StatusWatermarkValve. */
    public static void statusOut(boolean idle) {
        out(Event.OUT_STATUS, idle ? 1 : 0);
    }

    private static void out(int kind, long value) {
        Capture c = Capture.get();
        if (c == null) {
            return;
        }
        try {
            long now = System.currentTimeMillis();
            ThreadState s = STATE.get();
            if (s != null) {
                c.offer(new Event(kind, s.task, s.task.nextSeq(), now, null, s.currentInput, 0, 0, value, null));
            }
        } catch (Throwable t) {
            c.failed(boundTask(), t);
        }
    }
}
