package tidemark.capture;

import static tidemark.capture.TestSupport.fact;

/**
 * A hook that fails (contract §6 safety): the job goes on, the failure is counted and logged once, and
 * the event it was recording becomes a capture_gap of its task, so tidemark marks those seconds as not
 * exact instead of showing numbers that miss it. A valve whose hashCode throws makes Hooks.watermarkIn
 * fail inside its own lookup, the way any unexpected state would. Args: DIR.
 */
public final class HookFailureTest {
    /** A valve the hooks cannot look up. */
    static final class BrokenValve {
        @Override
        public int hashCode() {
            throw new IllegalStateException("broken valve");
        }

        @Override
        public boolean equals(Object other) {
            return this == other;
        }
    }

    public static void main(String[] args) throws Exception {
        Capture.configure(java.util.Map.of("dir", args[0]), "HookFailureTest");
        Hooks.bindForTest("job", "vertex", 2, 0);
        Object valve = new Object();
        Hooks.watermarkIn(valve, 1_000L, 0, 2); // seq 0
        Hooks.watermarkIn(new BrokenValve(), 2_000L, 1, 2); // seq 1: fails, lost
        Hooks.watermarkIn(new BrokenValve(), 3_000L, 1, 2); // seq 2: fails, lost
        Hooks.watermarkIn(valve, 4_000L, 1, 2); // seq 3
        Capture.get().close();
        fact("errors", String.valueOf(Capture.get().errors()));
        fact("dropped", String.valueOf(Capture.get().dropped()));
    }
}
