package tidemark.capture;

import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.HashSet;
import java.util.Set;
import org.apache.flink.shaded.asm9.org.objectweb.asm.ClassReader;
import org.apache.flink.shaded.asm9.org.objectweb.asm.ClassVisitor;
import org.apache.flink.shaded.asm9.org.objectweb.asm.ClassWriter;
import org.apache.flink.shaded.asm9.org.objectweb.asm.FieldVisitor;
import org.apache.flink.shaded.asm9.org.objectweb.asm.MethodVisitor;
import org.apache.flink.shaded.asm9.org.objectweb.asm.Opcodes;

/**
 * Instruments, with flink-dist's shaded ASM, StatusWatermarkValve (inputs and outputs),
 * AbstractStreamTaskNetworkInput (valve to input index), StreamTask (task identity per thread) and,
 * where it has no slot ring (Flink 1.15, 1.16), TimerGauge (an update counter for the reporter).
 * Inserted code has no branches and no locals, so the classes' stack map frames stay valid.
 * A class whose layout is not the expected one is left as it is, with one log line.
 */
final class ValveTransformer implements ClassFileTransformer {
    static final String VALVE = "org/apache/flink/streaming/runtime/watermarkstatus/StatusWatermarkValve";
    static final String INPUT = "org/apache/flink/streaming/runtime/io/AbstractStreamTaskNetworkInput";
    static final String STREAM_TASK = "org/apache/flink/streaming/runtime/tasks/StreamTask";
    static final String WATERMARK = "org/apache/flink/streaming/api/watermark/Watermark";
    static final String STATUS = "org/apache/flink/streaming/runtime/watermarkstatus/WatermarkStatus";
    static final String DATA_OUTPUT = "org/apache/flink/streaming/runtime/io/PushingAsyncDataInput$DataOutput";
    static final String TIMER_GAUGE = "org/apache/flink/runtime/metrics/TimerGauge";
    static final String HOOKS = "tidemark/capture/Hooks";
    static final String IN_WM_DESC = "(L" + WATERMARK + ";IL" + DATA_OUTPUT + ";)V";
    static final String IN_ST_DESC = "(L" + STATUS + ";IL" + DATA_OUTPUT + ";)V";
    static final int API = Opcodes.ASM9;

    private static final Set<String> disabled = new HashSet<>();

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined, ProtectionDomain domain,
            byte[] bytes) {
        if (className == null || !(className.equals(VALVE) || className.equals(INPUT) || className.equals(STREAM_TASK)
                || className.equals(TIMER_GAUGE))) {
            return null;
        }
        String part = className.substring(className.lastIndexOf('/') + 1);
        try {
            if (!seesHooks(loader)) {
                disable(part, "its class loader cannot see tidemark.capture.Hooks (is the jar in Flink's lib/?)");
                return null;
            }
            Layout layout = new Layout();
            new ClassReader(bytes).accept(layout, ClassReader.SKIP_DEBUG);
            if (className.equals(TIMER_GAUGE) && layout.fields.contains("values:[J")) {
                return null; // a slot ring (1.17 on): the reporter needs no counter
            }
            String missing = layout.missing(className);
            if (missing != null) {
                disable(part, className.replace('/', '.') + " has no " + missing);
                return null;
            }
            ClassReader reader = new ClassReader(bytes);
            ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
            reader.accept(new Instrument(writer, className, layout), 0);
            return writer.toByteArray();
        } catch (Throwable t) {
            disable(part, "instrumenting " + className.replace('/', '.') + " failed (" + t + ")");
            return null;
        }
    }

    private static boolean seesHooks(ClassLoader loader) {
        try {
            return Class.forName("tidemark.capture.Hooks", false, loader) == Hooks.class;
        } catch (Throwable t) {
            return false;
        }
    }

    private static void disable(String part, String why) {
        synchronized (disabled) {
            if (disabled.add(part)) {
                String what = part.equals("StreamTask") ? "valve capture (task identity)"
                        : part.equals("AbstractStreamTaskNetworkInput") ? "valve input indexes (all 0)"
                        : part.equals("TimerGauge") ? "its update counter (no update records)"
                        : "valve capture";
                Log.line(why + ": " + what + " disabled");
            }
        }
    }

    /** First pass: the methods, fields and call sites the instrumentation relies on. */
    static final class Layout extends ClassVisitor {
        final Set<String> methods = new HashSet<>();
        final Set<String> fields = new HashSet<>();
        int emitWatermarkSites;
        int emitStatusSites;

        Layout() {
            super(API);
        }

        @Override
        public FieldVisitor visitField(int access, String name, String desc, String signature, Object value) {
            if ((access & Opcodes.ACC_STATIC) == 0) {
                fields.add(name + ":" + desc);
            }
            return null;
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
            if ((access & Opcodes.ACC_STATIC) == 0) {
                methods.add(name + desc);
            }
            return new MethodVisitor(API) {
                @Override
                public void visitMethodInsn(int op, String owner, String mname, String mdesc, boolean itf) {
                    if (owner.equals(DATA_OUTPUT) && mname.equals("emitWatermark")
                            && mdesc.equals("(L" + WATERMARK + ";)V")) {
                        emitWatermarkSites++;
                    } else if (owner.equals(DATA_OUTPUT) && mname.equals("emitWatermarkStatus")
                            && mdesc.equals("(L" + STATUS + ";)V")) {
                        emitStatusSites++;
                    }
                }
            };
        }

        /**
         * The valve's per-channel state, whose size is the channel count: 1.19 on, a List per channel of
         * its subpartitions ("subpartitionStatuses:..."); before, an array ("channelStatuses:[...").
         */
        String channelCount() {
            if (fields.contains("subpartitionStatuses:Ljava/util/List;")) {
                return "subpartitionStatuses:Ljava/util/List;";
            }
            for (String f : fields) {
                if (f.startsWith("channelStatuses:[L")) {
                    return f;
                }
            }
            return null;
        }

        String missing(String className) {
            switch (className) {
                case VALVE:
                    if (!methods.contains("inputWatermark" + IN_WM_DESC)) {
                        return "inputWatermark(Watermark, int, DataOutput)";
                    }
                    if (!methods.contains("inputWatermarkStatus" + IN_ST_DESC)) {
                        return "inputWatermarkStatus(WatermarkStatus, int, DataOutput)";
                    }
                    if (channelCount() == null) {
                        return "field List subpartitionStatuses or InputChannelStatus[] channelStatuses";
                    }
                    if (emitWatermarkSites == 0 || emitStatusSites == 0) {
                        return "DataOutput.emitWatermark / emitWatermarkStatus call";
                    }
                    return null;
                case INPUT:
                    if (!fields.contains("statusWatermarkValve:L" + VALVE + ";") || !fields.contains("inputIndex:I")) {
                        return "fields StatusWatermarkValve statusWatermarkValve and int inputIndex";
                    }
                    return null;
                case TIMER_GAUGE:
                    if (!methods.contains("update()V")) {
                        return "update()";
                    }
                    return null;
                default:
                    for (String m : methods) {
                        if (m.startsWith("<init>(")) {
                            return null; // the hook reads getEnvironment() reflectively
                        }
                    }
                    return "constructor";
            }
        }
    }

    /** Second pass: inserts the hook calls. */
    static final class Instrument extends ClassVisitor {
        private final String className;
        private final Layout layout;

        Instrument(ClassVisitor next, String className, Layout layout) {
            super(API, next);
            this.className = className;
            this.layout = layout;
        }

        @Override
        public void visitEnd() {
            if (className.equals(TIMER_GAUGE)) {
                super.visitField(Opcodes.ACC_PRIVATE, RecordingClock.UPDATE_COUNTER, "I", null, null).visitEnd();
            }
            super.visitEnd();
        }

        @Override
        public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
            MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
            if ((access & Opcodes.ACC_STATIC) != 0) {
                return mv;
            }
            switch (className) {
                case VALVE:
                    return new ValveMethod(mv, name, desc, layout.channelCount());
                case TIMER_GAUGE:
                    return name.equals("update") && desc.equals("()V") ? new CountUpdates(mv) : mv;
                case INPUT:
                    return name.equals("<init>") ? new BeforeReturn(mv, true) : mv;
                default:
                    return name.equals("<init>") ? new BeforeReturn(mv, false) : mv;
            }
        }
    }

    /** In a constructor, before each return: hand `this` (or the input's valve and index) to the hooks. */
    static final class BeforeReturn extends MethodVisitor {
        private final boolean networkInput;

        BeforeReturn(MethodVisitor mv, boolean networkInput) {
            super(API, mv);
            this.networkInput = networkInput;
        }

        @Override
        public void visitInsn(int opcode) {
            if (opcode == Opcodes.RETURN) {
                if (networkInput) {
                    super.visitVarInsn(Opcodes.ALOAD, 0);
                    super.visitFieldInsn(Opcodes.GETFIELD, INPUT, "statusWatermarkValve", "L" + VALVE + ";");
                    super.visitVarInsn(Opcodes.ALOAD, 0);
                    super.visitFieldInsn(Opcodes.GETFIELD, INPUT, "inputIndex", "I");
                    super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "networkInput", "(Ljava/lang/Object;I)V", false);
                } else {
                    super.visitVarInsn(Opcodes.ALOAD, 0);
                    super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "streamTask", "(Ljava/lang/Object;)V", false);
                }
            }
            super.visitInsn(opcode);
        }
    }

    /**
     * TimerGauge.update() (synchronized, so under the gauge's lock): counts before each return, after the
     * clock reading of a measuring gauge, as a ring's slot index steps after it.
     */
    static final class CountUpdates extends MethodVisitor {
        CountUpdates(MethodVisitor mv) {
            super(API, mv);
        }

        @Override
        public void visitInsn(int opcode) {
            if (opcode == Opcodes.RETURN) {
                count();
            }
            super.visitInsn(opcode);
        }

        private void count() {
            super.visitVarInsn(Opcodes.ALOAD, 0);
            super.visitInsn(Opcodes.DUP);
            super.visitFieldInsn(Opcodes.GETFIELD, TIMER_GAUGE, RecordingClock.UPDATE_COUNTER, "I");
            super.visitInsn(Opcodes.ICONST_1);
            super.visitInsn(Opcodes.IADD);
            super.visitFieldInsn(Opcodes.PUTFIELD, TIMER_GAUGE, RecordingClock.UPDATE_COUNTER, "I");
        }
    }

    /** The valve: input records at entry of the two input methods, output records before each emit. */
    static final class ValveMethod extends MethodVisitor {
        private final String name;
        private final String desc;
        /** "name:descriptor" of the per-channel state whose size is the channel count. */
        private final String channels;

        ValveMethod(MethodVisitor mv, String name, String desc, String channels) {
            super(API, mv);
            this.name = name;
            this.desc = desc;
            this.channels = channels;
        }

        @Override
        public void visitCode() {
            super.visitCode();
            boolean wm = name.equals("inputWatermark") && desc.equals(IN_WM_DESC);
            boolean st = name.equals("inputWatermarkStatus") && desc.equals(IN_ST_DESC);
            if (!wm && !st) {
                return;
            }
            super.visitVarInsn(Opcodes.ALOAD, 0);
            super.visitVarInsn(Opcodes.ALOAD, 1);
            if (wm) {
                super.visitMethodInsn(Opcodes.INVOKEVIRTUAL, WATERMARK, "getTimestamp", "()J", false);
            } else {
                super.visitMethodInsn(Opcodes.INVOKEVIRTUAL, STATUS, "isIdle", "()Z", false);
            }
            super.visitVarInsn(Opcodes.ILOAD, 2);
            super.visitVarInsn(Opcodes.ALOAD, 0);
            int colon = channels.indexOf(':');
            String field = channels.substring(0, colon);
            String type = channels.substring(colon + 1);
            super.visitFieldInsn(Opcodes.GETFIELD, VALVE, field, type);
            if (type.startsWith("[")) {
                super.visitInsn(Opcodes.ARRAYLENGTH);
            } else {
                super.visitMethodInsn(Opcodes.INVOKEINTERFACE, "java/util/List", "size", "()I", true);
            }
            super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, wm ? "watermarkIn" : "statusIn",
                    wm ? "(Ljava/lang/Object;JII)V" : "(Ljava/lang/Object;ZII)V", false);
        }

        @Override
        public void visitMethodInsn(int op, String owner, String mname, String mdesc, boolean itf) {
            if (owner.equals(DATA_OUTPUT) && mname.equals("emitWatermark") && mdesc.equals("(L" + WATERMARK + ";)V")) {
                super.visitInsn(Opcodes.DUP);
                super.visitMethodInsn(Opcodes.INVOKEVIRTUAL, WATERMARK, "getTimestamp", "()J", false);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "watermarkOut", "(J)V", false);
            } else if (owner.equals(DATA_OUTPUT) && mname.equals("emitWatermarkStatus")
                    && mdesc.equals("(L" + STATUS + ";)V")) {
                super.visitInsn(Opcodes.DUP);
                super.visitMethodInsn(Opcodes.INVOKEVIRTUAL, STATUS, "isIdle", "()Z", false);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, HOOKS, "statusOut", "(Z)V", false);
            }
            super.visitMethodInsn(op, owner, mname, mdesc, itf);
        }
    }
}
