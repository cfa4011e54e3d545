package tidemark.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalog;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogWithListener;
import org.apache.spark.sql.catalyst.catalog.SessionCatalog;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code CALL tidemark_system.marts.publish(target, stage, replace_all, keep_ms)}: makes the rows
 * of the staged table {@code stage} the target's, in one step a reader cannot see half of
 * (docs/decisions/0015-consistent-reads.md).
 *
 * <p>A partitioned target takes the stage's partitions: each partition of the stage replaces the
 * target's partition of the same values (or is added), and with {@code replace_all} the target's
 * partitions the stage does not have are dropped. All of it happens while holding the metastore
 * catalog's lock, which every catalog call of the process takes (HiveExternalCatalog's
 * {@code withClient}): a query lists a table's partitions in one such call, so it sees every
 * partition as before the publish or every one as after. No file is moved or overwritten: the
 * target's partitions point at the stage's folders, written beforehand, and the folders they
 * pointed at are listed as replaced. A non-partitioned target is pointed at the stage's folder
 * with one {@code ALTER TABLE SET LOCATION}.
 *
 * <p>Replaced folders stay on disk for {@code keep_ms}, for queries planned before the publish
 * that still read them; each publish deletes the folders its table replaced longer ago than
 * that, and only folders below the table's own default location. The stage table's definition
 * is dropped, its files now belong to the target.
 */
public class Publish extends Procedure {
    static final String REPLACED = "_tidemark_versions/_replaced";

    public Publish() {
        super("publish",
            "replace a table's rows, or some of its partitions, by a staged table's, atomically",
            new String[] {"target", "stage", "replace_all", "keep_ms"},
            new DataType[] {
                DataTypes.StringType, DataTypes.StringType, DataTypes.BooleanType,
                DataTypes.LongType});
    }

    public Iterator call(InternalRow input) {
        SparkSession spark = SparkSession.active();
        TableIdentifier target = Procedures.identifier(spark, input.getUTF8String(0).toString());
        TableIdentifier stage = Procedures.identifier(spark, input.getUTF8String(1).toString());
        boolean replaceAll = input.getBoolean(2);
        long keepMs = input.getLong(3);
        try {
            publish(spark, target, stage, replaceAll, keepMs);
        } catch (IOException e) {
            throw new RuntimeException("tidemark publish of " + target + " failed: " + e, e);
        }
        return Collections.emptyIterator();
    }

    static void publish(
            SparkSession spark, TableIdentifier target, TableIdentifier stage,
            boolean replaceAll, long keepMs) throws IOException {
        SessionCatalog session = spark.sessionState().catalog();
        ExternalCatalog catalog =
            ((ExternalCatalogWithListener) spark.sharedState().externalCatalog()).unwrapped();
        final String db = target.database().get().toString();
        final String table = target.table();
        String stageDb = stage.database().get().toString();
        CatalogTable targetMeta = catalog.getTable(db, table);
        CatalogTable stageMeta = catalog.getTable(stageDb, stage.table());
        checkSameShape(targetMeta, stageMeta);
        Configuration conf = spark.sessionState().newHadoopConf();
        Path home = new Path(session.defaultTablePath(target));
        List replaced = new ArrayList();
        if (targetMeta.partitionColumnNames().isEmpty()) {
            replaced.add(new Path(targetMeta.location()));
            spark.sql("ALTER TABLE " + target.quotedString() + " SET LOCATION '"
                + stageMeta.location().toString().replace("'", "\\'") + "'");
        } else {
            List published = swapPartitions(
                catalog, db, table, stageDb, stage.table(), replaceAll, replaced);
            final ExternalCatalog all = catalog;
            try {
                Newest.update(home, conf, Procedures.list(targetMeta.partitionColumnNames()),
                    published, replaceAll, new java.util.concurrent.Callable() {
                        public Object call() {
                            return Procedures.list(
                                all.listPartitions(db, table, scala.Option.empty()));
                        }
                    });
            } catch (Exception e) {
                throw new IOException("tidemark: could not note the newest partitions: " + e, e);
            }
        }
        catalog.dropTable(stageDb, stage.table(), false, false);
        session.refreshTable(target);
        Replaced.record(home, conf, replaced);
        Replaced.collect(home, conf, keepMs);
    }

    /**
     * The stage's partitions replace the target's, in one critical section of the catalog;
     * returns them.
     */
    static List swapPartitions(
            ExternalCatalog catalog, String db, String table, String stageDb, String stage,
            boolean replaceAll, List replaced) {
        List staged = Procedures.list(catalog.listPartitions(stageDb, stage, scala.Option.empty()));
        if (staged.isEmpty()) {
            // Nothing new: the stage's folder holds Spark's markers only, and nothing reads it.
            replaced.add(new Path(catalog.getTable(stageDb, stage).location()));
        }
        synchronized (catalog) {
            // A full build is compared with every partition of the table, read in one listing
            // (not one metastore call per staged partition); an incremental one looks up its own.
            Map existing = new HashMap();
            if (replaceAll) {
                List all = Procedures.list(catalog.listPartitions(db, table, scala.Option.empty()));
                for (int i = 0; i < all.size(); i++) {
                    CatalogTablePartition part = (CatalogTablePartition) all.get(i);
                    existing.put(part.spec(), part);
                }
            }
            List create = new ArrayList();
            List alter = new ArrayList();
            for (int i = 0; i < staged.size(); i++) {
                CatalogTablePartition part = (CatalogTablePartition) staged.get(i);
                CatalogTablePartition old;
                if (replaceAll) {
                    old = (CatalogTablePartition) existing.remove(part.spec());
                } else {
                    scala.Option found = catalog.getPartitionOption(db, table, part.spec());
                    old = found.isEmpty() ? null : (CatalogTablePartition) found.get();
                }
                if (old == null) {
                    create.add(part);
                } else {
                    replaced.add(new Path(old.location()));
                    alter.add(part);
                }
            }
            // What is left of a full build's listing, the stage does not have: it goes.
            List drop = new ArrayList();
            for (Iterator it = existing.values().iterator(); it.hasNext(); ) {
                CatalogTablePartition part = (CatalogTablePartition) it.next();
                drop.add(part.spec());
                replaced.add(new Path(part.location()));
            }
            if (!create.isEmpty()) {
                catalog.createPartitions(db, table, Procedures.seq(create), false);
            }
            if (!alter.isEmpty()) {
                catalog.alterPartitions(db, table, Procedures.seq(alter));
            }
            if (!drop.isEmpty()) {
                catalog.dropPartitions(db, table, Procedures.seq(drop), false, false, true);
            }
        }
        return staged;
    }

    /** A stage of another shape would be read with the target's schema: refuse it. */
    static void checkSameShape(CatalogTable target, CatalogTable stage) {
        if (!target.partitionColumnNames().equals(stage.partitionColumnNames())
                || !sameColumns(target.schema(), stage.schema())) {
            throw new IllegalArgumentException(
                "tidemark publish: " + stage.identifier() + " " + stage.schema().simpleString()
                + " does not have the columns of " + target.identifier() + " "
                + target.schema().simpleString() + ": rebuild the table (dbt --full-refresh)");
        }
    }

    static boolean sameColumns(StructType a, StructType b) {
        StructField[] left = a.fields();
        StructField[] right = b.fields();
        if (left.length != right.length) {
            return false;
        }
        for (int i = 0; i < left.length; i++) {
            if (!left[i].name().equalsIgnoreCase(right[i].name())
                    || !left[i].dataType().sameType(right[i].dataType())) {
                return false;
            }
        }
        return true;
    }
}
