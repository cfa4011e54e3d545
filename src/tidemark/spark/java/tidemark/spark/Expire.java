package tidemark.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * {@code CALL tidemark_system.marts.expire(target, column, before, keep_ms)}: drops the
 * partitions of {@code target} whose {@code column} value is before {@code before} (compared
 * as the partition values' text, which for tidemark's {@code hour_at} is time order), in one
 * catalog call; their folders join the table's replaced ones, deleted after {@code keep_ms} like
 * a publish's (docs/decisions/0019-retention.md). Returns nothing; a table without such
 * partitions is left as it is.
 */
public class Expire extends Procedure {
    public Expire() {
        super("expire", "drop the partitions of a table before a value of one partition column",
            new String[] {"target", "column", "before", "keep_ms"},
            new DataType[] {
                DataTypes.StringType, DataTypes.StringType, DataTypes.StringType,
                DataTypes.LongType});
    }

    public Iterator call(InternalRow input) {
        SparkSession spark = SparkSession.active();
        TableIdentifier target = Procedures.identifier(spark, input.getUTF8String(0).toString());
        String column = input.getUTF8String(1).toString();
        String before = input.getUTF8String(2).toString();
        long keepMs = input.getLong(3);
        ExternalCatalog catalog =
            ((ExternalCatalogWithListener) spark.sharedState().externalCatalog()).unwrapped();
        String db = target.database().get().toString();
        Path home = new Path(spark.sessionState().catalog().defaultTablePath(target));
        Configuration conf = spark.sessionState().newHadoopConf();
        List specs = new ArrayList();
        List folders = new ArrayList();
        synchronized (catalog) {
            List parts = Procedures.list(catalog.listPartitions(db, target.table(),
                scala.Option.empty()));
            for (int i = 0; i < parts.size(); i++) {
                CatalogTablePartition part = (CatalogTablePartition) parts.get(i);
                Map spec = scala.jdk.javaapi.CollectionConverters.asJava(part.spec());
                Object value = spec.get(column);
                if (value != null && ((String) value).compareTo(before) < 0) {
                    specs.add(part.spec());
                    folders.add(new Path(part.location()));
                }
            }
            if (!specs.isEmpty()) {
                catalog.dropPartitions(db, target.table(), Procedures.seq(specs), false, false,
                    true);
            }
        }
        try {
            Newest.forget(home, conf, folders);
            Replaced.record(home, conf, folders);
            Replaced.collect(home, conf, keepMs);
        } catch (Exception e) {
            throw new RuntimeException("tidemark: expired " + target + " but could not list "
                + "its folders for deletion: " + e, e);
        }
        spark.sessionState().catalog().refreshTable(target);
        return Collections.emptyIterator();
    }
}
