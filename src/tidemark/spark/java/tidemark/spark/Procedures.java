package tidemark.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.ProcedureCatalog;
import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * tidemark's stored procedures, a Spark catalog of procedures only ({@code
 * spark.sql.catalog.tidemark_system}, set by tidemark's session factory): {@code CALL
 * tidemark_system.marts.publish(...)}, {@code discard}, {@code expire} and {@code drop_table}. The
 * dbt materializations call them through SQL, so they work alike on the embedded session and
 * through the Thrift server (docs/decisions/0015-consistent-reads.md).
 */
public class Procedures implements ProcedureCatalog {
    private String catalogName;

    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.catalogName = name;
    }

    public String name() {
        return catalogName;
    }

    public Identifier[] listProcedures(String[] namespace) {
        return new Identifier[] {
            Identifier.of(new String[] {"marts"}, "publish"),
            Identifier.of(new String[] {"marts"}, "discard"),
            Identifier.of(new String[] {"marts"}, "expire"),
            Identifier.of(new String[] {"marts"}, "drop_table"),
        };
    }

    public UnboundProcedure loadProcedure(Identifier ident) {
        String[] namespace = ident.namespace();
        if (namespace.length == 1 && namespace[0].equals("marts")) {
            if (ident.name().equals("publish")) {
                return new Publish();
            }
            if (ident.name().equals("discard")) {
                return new Discard();
            }
            if (ident.name().equals("expire")) {
                return new Expire();
            }
            if (ident.name().equals("drop_table")) {
                return new DropTable();
            }
        }
        throw new IllegalArgumentException(
            "no tidemark procedure " + ident + ": there are marts.publish, marts.discard, "
            + "marts.expire and marts.drop_table");
    }

    static TableIdentifier identifier(SparkSession spark, String name) {
        TableIdentifier parsed;
        try {
            parsed = spark.sessionState().sqlParser().parseTableIdentifier(name);
        } catch (Exception e) {
            throw new IllegalArgumentException("tidemark: not a table name: " + name, e);
        }
        if (parsed.database().isEmpty()) {
            throw new IllegalArgumentException("tidemark: name the table with its schema: " + name);
        }
        return parsed;
    }

    static List list(scala.collection.Seq seq) {
        List items = new ArrayList();
        scala.collection.Iterator it = seq.iterator();
        while (it.hasNext()) {
            items.add(it.next());
        }
        return items;
    }

    static scala.collection.immutable.Seq seq(List items) {
        return scala.jdk.javaapi.CollectionConverters.asScala(items).toSeq();
    }

    /**
     * {@code discard(target, stage)}: a stage a build left unpublished (it died before): its
     * folder is listed with the target's replaced ones, its definition dropped. Nothing when
     * there is no such stage.
     */
    public static class Discard extends Procedure {
        public Discard() {
            super("discard", "drop a stage table left by a build that did not publish it",
                new String[] {"target", "stage"},
                new DataType[] {DataTypes.StringType, DataTypes.StringType});
        }

        public Iterator call(InternalRow input) {
            SparkSession spark = SparkSession.active();
            TableIdentifier target = identifier(spark, input.getUTF8String(0).toString());
            TableIdentifier stage = identifier(spark, input.getUTF8String(1).toString());
            org.apache.spark.sql.catalyst.catalog.SessionCatalog session =
                spark.sessionState().catalog();
            Path home = new Path(session.defaultTablePath(target));
            List left = new ArrayList();
            try {
                if (!session.tableExists(stage)) {
                    return Collections.emptyIterator();
                }
                left.add(new Path(session.getTableMetadata(stage).location()));
                spark.sql("DROP TABLE " + stage.quotedString());
                Replaced.record(home, spark.sessionState().newHadoopConf(), left);
            } catch (Exception e) {
                throw new RuntimeException("tidemark: could not discard " + stage + ": " + e, e);
            }
            return Collections.emptyIterator();
        }
    }

    /**
     * {@code drop_table(target)}: drops a table and deletes its default location, older
     * versions included (a table whose columns changed is rebuilt from scratch, not published).
     */
    public static class DropTable extends Procedure {
        public DropTable() {
            super("drop_table", "drop a table and every version of its files",
                new String[] {"target"}, new DataType[] {DataTypes.StringType});
        }

        public Iterator call(InternalRow input) {
            SparkSession spark = SparkSession.active();
            TableIdentifier target = identifier(spark, input.getUTF8String(0).toString());
            Path home = new Path(spark.sessionState().catalog().defaultTablePath(target));
            spark.sql("DROP TABLE IF EXISTS " + target.quotedString());
            try {
                FileSystem fs = home.getFileSystem(spark.sessionState().newHadoopConf());
                fs.delete(home, true);
            } catch (java.io.IOException e) {
                throw new RuntimeException("tidemark: could not delete " + home + ": " + e, e);
            }
            return Collections.emptyIterator();
        }
    }
}
