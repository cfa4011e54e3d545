package tidemark.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;

/**
 * Where each value of a table's first partition column (a job) has its newest partition: {@code
 * <home>/_tidemark_versions/_newest.tsv}, one line per job, {@code job_id=<job>}, the rest of
 * the partition's path ({@code hour_at=.../minute_slice=...}) and the folder it lies in. The
 * publish procedure keeps it, so that {@code tidemark status} can read a published mart's
 * newest rows from files, without the metastore (src/tidemark/health/marts.py). Paths compare as
 * strings: the marts' partition values have a fixed width.
 */
final class Newest {
    static final String FILE = "_tidemark_versions/_newest.tsv";

    private Newest() {}

    /**
     * The table's partitions now are {@code before} (null: unknown, read {@code all}) with
     * {@code published} replacing or adding theirs; with {@code replaceAll}, {@code published}
     * is the whole table.
     */
    static void update(
            Path home, Configuration conf, List columns, List published, boolean replaceAll,
            java.util.concurrent.Callable all) throws Exception {
        if (columns.size() < 2) {
            return;
        }
        Path file = new Path(home, FILE);
        FileSystem fs = file.getFileSystem(conf);
        Map newest;
        List partitions;
        if (replaceAll) {
            newest = new TreeMap();
            partitions = published;
        } else if (fs.exists(file)) {
            newest = read(fs, file);
            partitions = published;
        } else {
            newest = new TreeMap();
            partitions = (List) all.call();
        }
        for (int i = 0; i < partitions.size(); i++) {
            CatalogTablePartition part = (CatalogTablePartition) partitions.get(i);
            Map spec = scala.jdk.javaapi.CollectionConverters.asJava(part.spec());
            String job = path(columns.subList(0, 1), spec);
            String rest = path(columns.subList(1, columns.size()), spec);
            String[] known = (String[]) newest.get(job);
            if (known == null || rest.compareTo(known[0]) >= 0) {
                newest.put(job, new String[] {rest, part.location().toString()});
            }
        }
        write(fs, file, newest);
    }

    /** Forget a job's newest partition when its folder is among {@code dropped}. */
    static void forget(Path home, Configuration conf, List dropped) throws IOException {
        Path file = new Path(home, FILE);
        FileSystem fs = file.getFileSystem(conf);
        if (dropped.isEmpty() || !fs.exists(file)) {
            return;
        }
        java.util.Set gone = new java.util.HashSet();
        for (int i = 0; i < dropped.size(); i++) {
            gone.add(fs.makeQualified((Path) dropped.get(i)).toString());
        }
        Map newest = read(fs, file);
        Iterator entries = newest.entrySet().iterator();
        boolean changed = false;
        while (entries.hasNext()) {
            Map.Entry entry = (Map.Entry) entries.next();
            Path location = new Path(java.net.URI.create(((String[]) entry.getValue())[1]));
            if (gone.contains(fs.makeQualified(location).toString())) {
                entries.remove();
                changed = true;
            }
        }
        if (changed) {
            write(fs, file, newest);
        }
    }

    static String path(List columns, Map spec) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < columns.size(); i++) {
            String column = (String) columns.get(i);
            if (i > 0) {
                out.append('/');
            }
            out.append(ExternalCatalogUtils.getPartitionPathString(column, (String) spec.get(column)));
        }
        return out.toString();
    }

    static Map read(FileSystem fs, Path file) throws IOException {
        Map newest = new TreeMap();
        BufferedReader reader =
            new BufferedReader(new InputStreamReader(fs.open(file), StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = reader.readLine()) != null) {
                String[] fields = line.split("\t");
                if (fields.length == 3) {
                    newest.put(fields[0], new String[] {fields[1], fields[2]});
                }
            }
        } finally {
            reader.close();
        }
        return newest;
    }

    static void write(FileSystem fs, Path file, Map newest) throws IOException {
        Path partial = new Path(file.getParent(), "." + file.getName() + ".partial");
        OutputStream out = fs.create(partial, true);
        try {
            Iterator entries = newest.entrySet().iterator();
            while (entries.hasNext()) {
                Map.Entry entry = (Map.Entry) entries.next();
                String[] value = (String[]) entry.getValue();
                String line = entry.getKey() + "\t" + value[0] + "\t" + value[1] + "\n";
                out.write(line.getBytes(StandardCharsets.UTF_8));
            }
        } finally {
            out.close();
        }
        if (!fs.rename(partial, file)) {
            fs.delete(file, false);
            fs.rename(partial, file);
        }
    }
}
