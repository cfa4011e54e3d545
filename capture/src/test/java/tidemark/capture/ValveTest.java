package tidemark.capture;

import static tidemark.capture.TestSupport.check;
import static tidemark.capture.TestSupport.fact;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.PushingAsyncDataInput;
import org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;

/**
 * The agent on Flink's real StatusWatermarkValve (W1-W6 via Flink's own code): run under
 * -javaagent with a task identity bound as StreamTask's hook binds it; feeds watermarks and statuses
 * through the public methods and prints what the valve really emitted, for the driver to compare with
 * the watermark / watermark_status / valve_output records. Args: none (the agent's dir is the output).
 */
public final class ValveTest {
    public static void main(String[] args) throws Exception {
        Hooks.bindForTest("job", "vertex", 1, 0);
        StatusWatermarkValve valve = new StatusWatermarkValve(3);
        Hooks.networkInput(valve, 1); // as AbstractStreamTaskNetworkInput's constructor would
        List<String> outputs = new ArrayList<>();
        @SuppressWarnings("unchecked")
        PushingAsyncDataInput.DataOutput<Object> out = (PushingAsyncDataInput.DataOutput<Object>) Proxy.newProxyInstance(
                ValveTest.class.getClassLoader(), new Class<?>[] {PushingAsyncDataInput.DataOutput.class},
                (proxy, method, margs) -> {
                    if (method.getName().equals("emitWatermark") && margs[0] instanceof Watermark) {
                        outputs.add("{\"kind\":\"watermark\",\"watermark_ms\":" + ((Watermark) margs[0]).getTimestamp() + "}");
                    } else if (method.getName().equals("emitWatermarkStatus")) {
                        outputs.add("{\"kind\":\"status\",\"status\":\""
                                + (((WatermarkStatus) margs[0]).isIdle() ? "IDLE" : "ACTIVE") + "\"}");
                    }
                    return null;
                });
        List<String> inputs = new ArrayList<>();
        wm(valve, out, inputs, 10, 0);
        wm(valve, out, inputs, 20, 1);
        wm(valve, out, inputs, 5, 2); // output 5
        st(valve, out, inputs, true, 2); // output min(10, 20) = 10
        wm(valve, out, inputs, 30, 0); // output 20
        st(valve, out, inputs, true, 0);
        st(valve, out, inputs, true, 1); // all idle: output IDLE (and the max watermark)
        st(valve, out, inputs, false, 1); // ACTIVE again
        wm(valve, out, inputs, Long.MIN_VALUE + 1, 1);
        wm(valve, out, inputs, 40, 1);
        check(outputs.size() >= 4, "the valve emitted " + outputs);
        Capture.get().close();
        fact("inputs", "[" + String.join(",", inputs) + "]");
        fact("outputs", "[" + String.join(",", outputs) + "]");
        fact("errors", String.valueOf(Capture.get().errors()));
    }

    private static void wm(StatusWatermarkValve v, PushingAsyncDataInput.DataOutput<Object> out, List<String> inputs,
            long ts, int channel) throws Exception {
        inputs.add("{\"type\":\"watermark\",\"channel_index\":" + channel + ",\"watermark_ms\":" + ts + "}");
        v.inputWatermark(new Watermark(ts), channel, out);
    }

    private static void st(StatusWatermarkValve v, PushingAsyncDataInput.DataOutput<Object> out, List<String> inputs,
            boolean idle, int channel) throws Exception {
        inputs.add("{\"type\":\"watermark_status\",\"channel_index\":" + channel + ",\"status\":\""
                + (idle ? "IDLE" : "ACTIVE") + "\"}");
        v.inputWatermarkStatus(idle ? WatermarkStatus.IDLE : WatermarkStatus.ACTIVE, channel, out);
    }
}
