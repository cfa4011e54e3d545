{#-
    The input rows of the `tidemark_valve` UDTF (udfs/spark.py), built here only: the model
    int_valve_outputs_computed and udfs.spark.valve_input_sql (tests, bench/valve.py) both render
    this macro.

    `tasks`: one row per task (job_id, vertex_id, subtask_index, attempt) with `task_inputs`,
    `state` and `resumed_after_seq`; each becomes a header row (chunk_index -1).
    `events`: the events to feed, with the columns of int_valve_inputs_prepared (input_code
    included). The events of one input in one range of `chunk_seqs` seqs travel as one chunk row
    of arrays without NULLs: a row-at-a-time UDTF is ten times slower. The UDTF sorts by seq.
    One collect_list per array, not one of structs split by transform(): transform's lambdas are
    interpreted, and the chunks were built about half as fast that way (bench/valve.py).
-#}
{% macro tidemark_valve_input_rows(tasks, events, chunk_seqs=65536) -%}
    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        cast(-1 as bigint) as chunk_index,
        task_inputs,
        state,
        resumed_after_seq,
        cast(null as int) as input_index,
        cast(null as int) as num_channels,
        cast(null as string) as bad_status,
        cast(null as array<bigint>) as seqs,
        cast(null as array<bigint>) as ts_ms,
        cast(null as array<int>) as channels,
        cast(null as array<bigint>) as watermarks,
        cast(null as array<int>) as codes
    from {{ tasks }}

    union all

    select
        job_id,
        vertex_id,
        subtask_index,
        attempt,
        chunk_index,
        cast(null as array<int>) as task_inputs,
        cast(null as string) as state,
        cast(null as bigint) as resumed_after_seq,
        input_index,
        num_channels,
        bad_status,
        seqs,
        ts_ms,
        channels,
        watermarks,
        codes
    from (
        select
            job_id,
            vertex_id,
            subtask_index,
            attempt,
            input_index,
            num_channels,
            seq div {{ chunk_seqs }} as chunk_index,
            min_by(status, seq) filter (where input_code = 2) as bad_status,
            {#- One array per column, aligned: the lists of one aggregate take the same rows in
                the same order, and none of these is NULL (collect_list skips NULLs). A NULL
                channel_index (ingest refuses it) becomes -1, which the valve refuses by seq. #}
            collect_list(seq) as seqs,
            collect_list(ts_ms) as ts_ms,
            collect_list(coalesce(channel_index, -1)) as channels,
            collect_list(coalesce(watermark_ms, 0)) as watermarks,
            collect_list(input_code) as codes
        from {{ events }}
        group by
            job_id, vertex_id, subtask_index, attempt, input_index, num_channels,
            seq div {{ chunk_seqs }}
    ) as chunks
{%- endmacro %}
