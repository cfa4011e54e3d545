package tidemark.spark;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The folders a publish replaced, kept for {@code keep_ms} for the queries that still read them,
 * then deleted: one record file per publish in {@code <table home>/_tidemark_versions/_replaced/},
 * named {@code <epoch ms>-<random>.txt}, one folder per line.
 */
final class Replaced {
    private Replaced() {}

    static Path records(Path home) {
        return new Path(home, Publish.REPLACED);
    }

    static void record(Path home, Configuration conf, List folders) throws IOException {
        if (folders.isEmpty()) {
            return;
        }
        Path dir = records(home);
        FileSystem fs = dir.getFileSystem(conf);
        fs.mkdirs(dir);
        String name = System.currentTimeMillis() + "-" + UUID.randomUUID();
        Path partial = new Path(dir, "." + name + ".partial");
        OutputStream out = fs.create(partial, true);
        try {
            for (int i = 0; i < folders.size(); i++) {
                out.write((folders.get(i).toString() + "\n").getBytes(StandardCharsets.UTF_8));
            }
        } finally {
            out.close();
        }
        fs.rename(partial, new Path(dir, name + ".txt"));
    }

    /** Delete what publishes of this table replaced longer ago than keepMs; returns folders. */
    static int collect(Path home, Configuration conf, long keepMs) throws IOException {
        Path dir = records(home);
        FileSystem fs = dir.getFileSystem(conf);
        if (!fs.exists(dir)) {
            return 0;
        }
        Path root = fs.makeQualified(home);
        long before = System.currentTimeMillis() - keepMs;
        int deleted = 0;
        FileStatus[] files = fs.listStatus(dir);
        for (int i = 0; i < files.length; i++) {
            String name = files[i].getPath().getName();
            if (!name.endsWith(".txt") || name.indexOf('-') < 0) {
                continue;
            }
            long at = Long.parseLong(name.substring(0, name.indexOf('-')));
            if (at >= before) {
                continue;
            }
            BufferedReader reader = new BufferedReader(
                new InputStreamReader(fs.open(files[i].getPath()), StandardCharsets.UTF_8));
            try {
                String line;
                while ((line = reader.readLine()) != null) {
                    if (delete(fs, root, fs.makeQualified(new Path(line)))) {
                        deleted++;
                    }
                }
            } finally {
                reader.close();
            }
            fs.delete(files[i].getPath(), false);
        }
        return deleted;
    }

    /**
     * Deletes a replaced folder, and then its parents that hold nothing more (no folder, no data
     * file: only Spark's markers such as _SUCCESS), up to the table's home. Nothing outside the
     * home is touched. The home itself, the first version of an unpartitioned table, loses only
     * the files directly in it: the versions below it stay.
     */
    static boolean delete(FileSystem fs, Path root, Path folder) throws IOException {
        if (folder.equals(root)) {
            FileStatus[] children = fs.listStatus(root);
            for (int i = 0; i < children.length; i++) {
                if (children[i].isFile()) {
                    fs.delete(children[i].getPath(), false);
                }
            }
            return true;
        }
        if (!folder.toString().startsWith(root.toString() + "/") || !fs.delete(folder, true)) {
            return false;
        }
        Path parent = folder.getParent();
        while (parent != null && !parent.equals(root) && holdsNothing(fs, parent)) {
            fs.delete(parent, true);
            parent = parent.getParent();
        }
        return true;
    }

    static boolean holdsNothing(FileSystem fs, Path folder) throws IOException {
        FileStatus[] children = fs.listStatus(folder);
        for (int i = 0; i < children.length; i++) {
            String name = children[i].getPath().getName();
            if (children[i].isDirectory() || !(name.startsWith("_") || name.startsWith("."))) {
                return false;
            }
        }
        return true;
    }
}
