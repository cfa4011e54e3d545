{#-
    The rows of `rows` (a relation or CTE with job_id, vertex_id and `time_column`, partitioned by
    hour_at and minute_slice) that an incremental run of a vertex mart recomputes: those of the
    vertices in `dirty` (job_id, vertex_id, recompute_from_ms) at or after the vertex's
    recompute_from_ms. Only the partitions that can hold such a row are read (tidemark_partitions_from).
-#}
{% macro tidemark_rows_of_dirty_vertices(rows, time_column, dirty='dirty_vertices') %}
    select {{ rows }}.*
    from {{ rows }}
    left semi join {{ dirty }}
        on
            {{ rows }}.job_id = {{ dirty }}.job_id
            and {{ rows }}.vertex_id = {{ dirty }}.vertex_id
            and {{ rows }}.{{ time_column }} >= {{ dirty }}.recompute_from_ms
    where
        {{ tidemark_partitions_from(rows, '(select min(recompute_from_ms) from ' ~ dirty ~ ')') }}
{% endmacro %}
