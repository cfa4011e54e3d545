package tidemark.capture;

import java.util.Properties;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/** {@code metrics.reporter.tidemark.factory.class: tidemark.capture.CaptureReporterFactory}. */
public final class CaptureReporterFactory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new CaptureReporter();
    }
}
