package org.apache.flink.streaming.runtime.watermarkstatus;

/**
 * A StatusWatermarkValve of an unknown Flink: same class name, other methods. The agent must leave it as
 * it is, with one log line (contract §6 safety). Test code only, compiled apart from the other tests.
 */
public class StatusWatermarkValve {
    private long min = Long.MAX_VALUE;

    public long inputWatermark(long watermark, int channel) {
        min = Math.min(min, watermark);
        return min;
    }

    public static void main(String[] args) {
        StatusWatermarkValve v = new StatusWatermarkValve();
        v.inputWatermark(7, 0);
        if (v.inputWatermark(3, 1) != 3 || new StatusWatermarkValve().inputWatermark(9, 0) != 9) {
            throw new AssertionError("the fake valve changed behaviour");
        }
        System.out.println("FACT fake_valve_ok true");
    }
}
