-- tidemark's live SQL job, the statements LiveSqlJob.java (Java Table API) and live_sql_job.py
-- (PyFlink's Table API) both run, in order: 40 s of clicks at 2,000 a second, aggregated in 1 s
-- tumbling windows. SLOW_SUM (LiveSqlJob.SlowSum) back-pressures the sources in alternate 3 s
-- windows. Statements end with a semicolon; lines starting with two dashes are comments.
CREATE TABLE clicks (
    bucket INT, amount INT,
    ts AS LOCALTIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '0.2' SECOND
) WITH (
    'connector' = 'datagen',
    'rows-per-second' = '2000',
    'number-of-rows' = '80000',
    'fields.bucket.min' = '0', 'fields.bucket.max' = '15',
    'fields.amount.min' = '1', 'fields.amount.max' = '100'
);
CREATE TABLE totals (
    window_start TIMESTAMP(3), bucket INT, clicks BIGINT, amount BIGINT
) WITH ('connector' = 'blackhole');
INSERT INTO totals
SELECT window_start, bucket, COUNT(*), SLOW_SUM(amount)
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY window_start, window_end, bucket;
