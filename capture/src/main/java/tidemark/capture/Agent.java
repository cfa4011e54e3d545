package tidemark.capture;

import java.lang.instrument.Instrumentation;

/** {@code -javaagent:tidemark-capture.jar=dir=DIR[,rotate-seconds=N,rotate-bytes=N,queue=N,gzip=false]}. */
public final class Agent {
    private Agent() {}

    static volatile boolean active;

    public static void premain(String args, Instrumentation inst) {
        try {
            Capture c = Capture.configure(Capture.parseOptions(args), "java agent");
            if (c == null) {
                return;
            }
            active = true;
            inst.addTransformer(new ValveTransformer());
        } catch (Throwable t) {
            Log.line("java agent cannot instrument (" + t + "; Flink's shaded ASM missing from the class path?): "
                    + "valve capture disabled");
        }
    }
}
